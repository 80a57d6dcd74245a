"""``galu equivalence --base REV``: run the rules whose code changed since REV at both commits
and, when every output is byte-identical, record the change as number-neutral in the ledger
(galu/workflow/equivalence_check.py)."""

from __future__ import annotations

import argparse

from galu.workflow.commands.common import UsageError, checkout, root_option
from galu.workflow.equivalence import LEDGER


def add_parser(sub: argparse._SubParsersAction) -> argparse.ArgumentParser:
    """Add ``galu equivalence`` to the subcommands ``sub`` and return its parser."""
    parser = sub.add_parser(
        "equivalence",
        help="run the rules whose code changed since --base at both commits and, when every"
        " output is byte-identical, record the change as number-neutral",
    )
    parser.add_argument(
        "--base", required=True, help="the commit whose outputs should stay current"
    )
    parser.add_argument(
        "--scale", action="append", dest="scales", metavar="NAME",
        help="a configuration to run (tiny, paper-smoke, quick; repeat it; default: all three)",
    )  # fmt: skip
    parser.add_argument(
        "--stage", action="append", dest="stages", metavar="NAME",
        help="run only this stage (repeat it; default: the configuration's stages)",
    )  # fmt: skip
    parser.add_argument("--cores", type=int, default=2, help="cores per run (default: 2)")
    root_option(parser)
    return parser


def run(args: argparse.Namespace) -> int:
    from galu.workflow.equivalence import LedgerError
    from galu.workflow.equivalence_check import DEFAULT_SCALES, EquivalenceError, check

    root = checkout(args.root)
    try:
        outcome = check(
            root, args.base, args.scales or DEFAULT_SCALES, args.cores, stages=args.stages
        )
    except (EquivalenceError, LedgerError) as error:
        raise UsageError(str(error)) from None
    untested = [c.script for c in outcome.changes if not outcome.compared.get(c.script)]
    for step in outcome.recorded:
        print(f"recorded {step.evidence()}")
    if untested:
        print(f"not recorded (no output at the scales run, so no evidence): {', '.join(untested)}")
    if outcome.different:
        print(
            f"galu equivalence: {len(outcome.different)} output(s) differ: no evidence for"
            f" {', '.join(sorted(outcome.unproven))} (an output differs, or was made from"
            " inputs that differ), nothing recorded for them, their jobs rerun as usual:"
        )
        print("\n".join(f"  {path}" for path in outcome.different))
    if outcome.recorded:
        print(f"galu equivalence: commit {LEDGER} with the code it vouches for.")
    return 1 if outcome.different else 0
