"""``galu dvc``: check (or ``--update``) dvc.yaml's stage deps against the rules' code closures
(galu/workflow/dvcstages.py)."""

from __future__ import annotations

import argparse
from pathlib import Path

from galu.atomic import atomic_write_bytes
from galu.workflow.commands.common import checkout, read_text, root_option


def add_parser(sub: argparse._SubParsersAction) -> argparse.ArgumentParser:
    """Add ``galu dvc`` to the subcommands ``sub`` and return its parser."""
    parser = sub.add_parser(
        "dvc", help="check (or --update) dvc.yaml's stage deps against the code closures"
    )
    root_option(parser)
    parser.add_argument("--update", action="store_true", help="rewrite the deps in place")
    return parser


def run(args: argparse.Namespace) -> int:
    from galu.workflow.dvcstages import differences, read_deps, rewrite, wanted_deps

    path = checkout(args.root) / "dvc.yaml"
    text = read_text(
        path, "the DVC stages", "run galu from the repository root, or pass --root PATH"
    )
    written = read_deps(text)
    wanted = wanted_deps(Path(args.root), written)
    if args.update:
        updated = rewrite(text, wanted)
        if updated != text:
            atomic_write_bytes(path, updated.encode())
        print(f"{path}: deps of {len(wanted)} stage(s) generated from the code closures.")
        return 0
    lines = differences(written, wanted)
    for line in lines:
        print(f"PROBLEM {line}")
    if lines:
        print(f"{path} is out of date with the rules' code closures; run `galu dvc --update`.")
        return 1
    print(f"{path}: the deps of {len(wanted)} stage(s) match the rules' code closures.")
    return 0
