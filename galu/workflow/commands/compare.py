"""``galu compare A B``: two runs' claims side by side (measured value and verdict), flagging
the verdicts that differ (galu/workflow/pages/compare.py reads and compares the runs)."""

from __future__ import annotations

import argparse

from galu.workflow.commands.common import UsageError


def add_parser(sub: argparse._SubParsersAction) -> argparse.ArgumentParser:
    """Add ``galu compare`` to the subcommands ``sub`` and return its parser."""
    parser = sub.add_parser(
        "compare",
        help="two runs' claims side by side (measured value and verdict), flagging the verdicts"
        " that differ; exit 1 when one does",
        description="Two runs' claims side by side. A run is a results folder (results,"
        " results/<scale>, published/<scale>/results), its claims.csv, or REV:FOLDER for that"
        " folder at commit REV (e.g. HEAD~1:published/paper-cpu/results). Exit 0 when every"
        " verdict agrees, 1 when a verdict differs or only one run has a claim, 2 when a run"
        " cannot be read.",
    )
    parser.add_argument("a", metavar="A", help="the first run, e.g. results")
    parser.add_argument("b", metavar="B", help="the second run, e.g. published/paper-cpu/results")
    return parser


def run(args: argparse.Namespace) -> int:
    """Exit 1 when a claim's verdict differs between the runs (or only one run has the
    claim): the difference is the finding, as for ``galu readme``; 0 when every verdict
    agrees."""
    from galu.workflow.pages.compare import CompareError, compare, lines, read_run

    try:
        a, b = read_run(args.a), read_run(args.b)
    except CompareError as error:
        raise UsageError(str(error)) from None
    rows = compare(a, b)
    print("\n".join(lines(a, b, rows)))
    return 1 if any(row.flag for row in rows) else 0
