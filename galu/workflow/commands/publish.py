"""``galu publish --scale SCALE``: copy a finished run's result tables to published/<scale>/
(or, ``--in-progress``, an unfinished run to published/in-progress/<scale>/);
galu/workflow/publishing/publish.py does the copying."""

from __future__ import annotations

import argparse
from pathlib import Path

from galu.workflow.commands.common import (
    UsageError,
    checked_ledger,
    checkout,
    default_configfiles,
    inside,
)
from galu.workflow.publication_folders import publication_folder


def add_parser(sub: argparse._SubParsersAction) -> argparse.ArgumentParser:
    """Add ``galu publish`` to the subcommands ``sub`` and return its parser."""
    parser = sub.add_parser(
        "publish", help="copy a finished run's result tables to published/<scale>/"
    )
    parser.add_argument("--scale", required=True, help="the run's scale, e.g. paper-cpu")
    parser.add_argument(
        "--configfile",
        nargs="+",
        help="the run's configuration files (default: config/paper.yaml config/<scale>.yaml)",
    )
    parser.add_argument(
        "--machine",
        help="the machine it ran on (default: the one its last publication records, else this"
        " machine)",
    )
    parser.add_argument(
        "--allow-dirty",
        action="store_true",
        help="publish although the checkout or the run's jobs had uncommitted changes (the"
        " publication says so)",
    )
    parser.add_argument(
        "--in-progress",
        action="store_true",
        help="keep an unfinished run in published/in-progress/<scale>/ for a later sitting"
        " (`galu resume --in-progress`), not as the scale's publication",
    )
    return parser


def run(args: argparse.Namespace) -> int:
    from galu.workflow.pages.publication_readme import commits_text
    from galu.workflow.publication_folders import (
        PublishError,
        check_scale_name,
        previous_machine,
        recover_interrupted,
    )
    from galu.workflow.publishing.publication_manifest import (
        CHECKPOINT_MAX_BYTES,
        counted,
        kept_checkpoints,
        this_machine,
    )
    from galu.workflow.publishing.publish import publication_lock, publish
    from galu.workflow.settings.config import SCHEMA_PATH, load_yaml

    root = checkout(".")
    checked_ledger(root)
    try:
        check_scale_name(args.scale)
    except PublishError as error:
        raise UsageError(str(error)) from None
    schema = root / SCHEMA_PATH
    known = load_yaml(schema)["properties"]["scale"]["enum"] if schema.is_file() else [args.scale]
    if args.scale not in known:
        raise UsageError(
            f"unknown scale {args.scale!r}: the configuration's scales are {', '.join(known)}"
            f" (key scale, {SCHEMA_PATH.as_posix()}); nothing was published"
        )
    configfiles = args.configfile or default_configfiles(args.scale)
    for configfile in configfiles:
        inside(root, configfile, "--configfile")
    missing = [c for c in configfiles if not (root / c).is_file()]
    if missing:
        raise UsageError(
            f"no configuration file {', '.join(missing)}; name the run's with --configfile"
        )
    try:
        with publication_lock():
            for note in recover_interrupted(Path(publication_folder(args.scale, args.in_progress))):
                print(f"NOTE {note}")
            manifest = publish(
                args.scale,
                configfiles=configfiles,
                # a republished run keeps the machine it was recorded on
                machine=args.machine or previous_machine(args.scale) or this_machine(),
                allow_dirty=args.allow_dirty,
                in_progress=args.in_progress,
            )
    except PublishError as error:
        raise UsageError(str(error)) from None
    if args.in_progress and (too_large := kept_checkpoints(args.scale)[1]):
        print(
            f"NOTE {len(too_large)} checkpoint(s) over {CHECKPOINT_MAX_BYTES:,} bytes stay in"
            f" this checkout, not in the publication ({', '.join(too_large)}): continue the"
            " run here to go on from them; a copy resumed elsewhere starts those jobs afresh"
        )
    print(
        f"published {counted(manifest['files'])} of the {args.scale} run"
        f" ({commits_text(manifest).replace('`', '')}, wall time"
        f" {manifest['wall_hours']:.1f} h) to"
        f" {publication_folder(args.scale, args.in_progress)}/"
        + (
            f"; left out as too large: {', '.join(manifest['left_out'])}"
            if manifest["left_out"]
            else ""
        )
        + (
            ".\nNext: `galu audit` verifies them; `galu resume --in-progress` continues the"
            " run elsewhere; the README and docs/verdicts-paper.md do not show a run in"
            " progress."
            if args.in_progress
            else ".\nNext: `galu audit` verifies them; `galu readme --update` writes"
            " docs/verdicts-paper.md and the README's counts; `galu resume` continues the run"
            " elsewhere."
        )
    )
    return 0
