"""``galu plots``: ``dvc plots show``, working offline (the Vega libraries inlined, no CDN;
galu/workflow/pages/dvcplots.py): one plot per quantity the claims read, those without data
at this run's scale left out and named."""

from __future__ import annotations

import argparse
import sys

from galu.workflow.commands.common import checkout, root_option


def add_parser(sub: argparse._SubParsersAction) -> argparse.ArgumentParser:
    """Add ``galu plots`` to the subcommands ``sub`` and return its parser."""
    parser = sub.add_parser(
        "plots", help="dvc plots show of the claims' quantities, working offline (no CDN)"
    )
    root_option(parser)
    parser.add_argument("--output", default="dvc_plots", help="folder of the page (git-ignored)")
    return parser


def run(args: argparse.Namespace) -> int:
    import subprocess

    from galu.workflow.pages.dvcplots import show

    root = checkout(args.root)
    try:
        page, missing = show(root, args.output)
    except subprocess.CalledProcessError as error:
        print(f"galu plots: dvc plots show failed:\n{error.stderr.strip()}", file=sys.stderr)
        return 1
    for plot_id, why in missing.items():
        print(f"left out {plot_id}: {why}")
    print(f"wrote {page} (offline: the Vega libraries are inlined); open it in a browser.")
    return 0
