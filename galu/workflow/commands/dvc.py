"""``galu dvc``: check (or ``--update``) dvc.yaml's stage commands and deps against the
workflow's rules and their code closures (galu/workflow/pages/dvcstages.py)."""

from __future__ import annotations

import argparse
from pathlib import Path

from galu.atomic import atomic_write_bytes
from galu.workflow.commands.common import checkout, read_text, root_option


def add_parser(sub: argparse._SubParsersAction) -> argparse.ArgumentParser:
    """Add ``galu dvc`` to the subcommands ``sub`` and return its parser."""
    parser = sub.add_parser(
        "dvc",
        help="check (or --update) dvc.yaml's stage commands and deps against the workflow's"
        " rules and their code closures",
    )
    root_option(parser)
    parser.add_argument(
        "--update", action="store_true", help="rewrite the commands and deps in place"
    )
    return parser


def run(args: argparse.Namespace) -> int:
    from galu.workflow.pages.dvcstages import (
        command_differences,
        differences,
        quick_dag,
        read_commands,
        read_deps,
        rewrite,
        stage_commands,
        wanted_deps,
    )

    path = checkout(args.root) / "dvc.yaml"
    text = read_text(
        path, "the DVC stages", "run galu from the repository root, or pass --root PATH"
    )
    written = read_deps(text)
    wanted = wanted_deps(Path(args.root), written)
    commands = stage_commands(quick_dag(Path(args.root)))
    if args.update:
        updated = rewrite(text, wanted, commands)
        if updated != text:
            atomic_write_bytes(path, updated.encode())
        print(f"{path}: commands and deps of {len(wanted)} stage(s) generated from the workflow.")
        lines = command_differences(read_commands(updated), commands)
        for line in lines:  # a stage the file does not have yet
            print(f"PROBLEM {line}")
        return 1 if lines else 0
    lines = command_differences(read_commands(text), commands) + differences(written, wanted)
    for line in lines:
        print(f"PROBLEM {line}")
    if lines:
        print(f"{path} is out of date with the workflow; run `galu dvc --update`.")
        return 1
    print(f"{path}: the commands and deps of {len(wanted)} stage(s) match the workflow.")
    return 0
