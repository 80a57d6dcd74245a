"""``galu resume --scale SCALE``: put a published run back into results/<scale>/ to continue
it (galu/workflow/publishing/resume.py), and say what Snakemake will rerun."""

from __future__ import annotations

import argparse

from galu.workflow.commands.common import (
    UsageError,
    checked_ledger,
    checkout,
    default_configfiles,
    root_option,
)
from galu.workflow.equivalence import LEDGER
from galu.workflow.publication_folders import publication_folder
from galu.workflow.trust.audit import published_problems, stale_published_text


def add_parser(sub: argparse._SubParsersAction) -> argparse.ArgumentParser:
    """Add ``galu resume`` to the subcommands ``sub`` and return its parser."""
    parser = sub.add_parser(
        "resume", help="put a published run back into results/<scale>/ to continue it"
    )
    parser.add_argument("--scale", required=True, help="the published run's scale")
    root_option(parser)
    parser.add_argument(
        "--configfile", nargs="+", help="the run's configuration files (for the next command)"
    )
    parser.add_argument(
        "--in-progress",
        action="store_true",
        help="the run kept by `galu publish --in-progress` (published/in-progress/<scale>/)",
    )
    return parser


def run(args: argparse.Namespace) -> int:
    from galu.workflow.publishing.resume import ResumeError, resume

    checked_ledger(checkout(args.root))  # before a file is copied
    try:
        done = resume(args.scale, checkout(args.root), args.in_progress)
    except ResumeError as error:
        raise UsageError(str(error)) from None
    configfiles = " ".join(args.configfile or default_configfiles(args.scale))
    print(
        f"{len(done.restored)} file(s) of the published {args.scale} run put back"
        f" ({len(done.present)} already there), {done.records} Snakemake record(s) and"
        f" {done.benchmarks} benchmark table(s) written"
        + (f", {done.checkpoints} checkpoint(s) of cut-off jobs" if done.checkpoints else "")
        + f". Snakemake reruns only what changed since: `galu run --configfile {configfiles}`."
    )
    if done.missing_data:
        print(
            f"NOTE the run was made from {', '.join(done.missing_data)}, missing here: prepare"
            " them (`galu data prepare <dataset>`) and resume again, or their jobs rerun."
        )
    if done.left_out:
        print(
            f"Left out of the publication as too large: {', '.join(done.left_out)}; a job"
            " that needs one reruns its job and what reads it (`snakemake -n` names them)."
        )
    folder = publication_folder(args.scale, args.in_progress)
    stale, _ = published_problems(args.root, [folder])
    if stale:
        print(
            f"Will rerun: {stale_published_text(stale[folder])}; no"
            f" number-neutral evidence in {LEDGER}"
            " covers the change (`galu equivalence --base <commit>` records it when it holds);"
            " what reads them; and any job whose parameters differ from the run's"
            " (`snakemake -n` gives each reason)."
        )
    else:
        print(
            "Will rerun: any job whose parameters differ from the run's; none for its code"
            " (every published output's code is this checkout's, or recorded as equivalent"
            " to it)."
        )
    return 0
