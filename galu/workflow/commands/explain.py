"""``galu explain CLAIM``: one claim's statement, the paper's number and ours, the bound, the
verdict, its figure and a one-line summary of how those files were made; with ``--chain``
also the rows it selects, the tolerance's justification and every file of the chain
(galu/workflow/pages/explain.py); without CLAIM, the run's claim ids."""

from __future__ import annotations

import argparse

from galu.workflow.commands.common import UsageError, checked_ledger, checkout, inside, root_option


def add_parser(sub: argparse._SubParsersAction) -> argparse.ArgumentParser:
    """Add ``galu explain`` to the subcommands ``sub`` and return its parser."""
    parser = sub.add_parser(
        "explain",
        help="one claim: statement, the paper's number and ours, the bound, verdict, figure"
        " and a summary of how those files were made (--chain: the rows and every file)",
    )
    parser.add_argument(
        "claim_id", nargs="?", help="a claim id of workflow/claims.yaml (none: list them)"
    )
    root_option(parser)
    parser.add_argument(
        "--results",
        default="results",
        help="the run's results folder, relative to the root (default: results; e.g."
        " results/paper-cpu, published/paper-cpu/results)",
    )
    parser.add_argument(
        "--chain",
        action="store_true",
        help="also the rows the claim selects, the tolerance's justification and every file"
        " of the provenance chain with its job, parameters and inputs",
    )
    return parser


def run(args: argparse.Namespace) -> int:
    """``galu explain CLAIM``: the claim, its rows, verdict and chain
    (galu/workflow/pages/explain.py); without CLAIM, the run's claim ids."""
    from galu.workflow.pages.explain import ExplainError, explain_claim, listing

    root = checkout(args.root)
    inside(root, args.results, "--results")
    checked_ledger(root)
    try:
        if not args.claim_id:
            print("\n".join(listing(root, args.results)))
            return 0
        lines, findings = explain_claim(args.claim_id, root, args.results, chain=args.chain)
    except ExplainError as error:
        raise UsageError(str(error)) from None
    print("\n".join(lines))
    return 1 if findings else 0
