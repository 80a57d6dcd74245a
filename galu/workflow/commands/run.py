"""``galu run``: Snakemake with its command line checked first (``--config KEY=VALUE``
entries, ``--configfile`` files; galu/workflow/settings/snakemake_args.py).
``galu.workflow.cli.main`` hands it everything after ``run`` untouched: its parser is listed for
``--help`` only."""

from __future__ import annotations

import argparse


def add_parser(sub: argparse._SubParsersAction) -> argparse.ArgumentParser:
    """Add ``galu run`` to the subcommands ``sub`` (no options: they are Snakemake's) and
    return its parser."""
    # Listed for --help only: main() hands everything after `run` to Snakemake untouched.
    return sub.add_parser(
        "run",
        help="snakemake with its command line checked first (--config KEY=VALUE entries,"
        " --configfile files), e.g. galu run --cores 2",
        add_help=False,
    )


def run(snakemake_args: list[str]) -> int:
    """Snakemake with ``snakemake_args`` (the command line after ``run``, as given: not an
    argparse namespace, unlike the other commands' ``run``)."""
    from galu.workflow.settings.snakemake_args import run as run_snakemake

    run_snakemake(snakemake_args)  # replaces this process with Snakemake; returns only by raising
    return 0
