"""``galu data fetch|prepare DATASET...``: fetch (and prepare) datasets outside the workflow,
with the sidecars the workflow's own jobs would write."""

from __future__ import annotations

import argparse
import contextlib
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from galu.workflow.commands.common import UsageError, checkout, root_option
from galu.workflow.equivalence import closure_record
from galu.workflow.trust.audit import code_scanner, current_closure, ledger_of

if TYPE_CHECKING:  # the data stage is imported only by `galu data`
    from galu.workflow.data import DataSettings


def add_parser(sub: argparse._SubParsersAction) -> argparse.ArgumentParser:
    """Add ``galu data`` to the subcommands ``sub`` and return its parser."""
    parser = sub.add_parser("data", help="fetch (and prepare) datasets outside the workflow")
    parser.add_argument(
        "action", choices=("fetch", "prepare"), help="fetch raw files, or also convert"
    )
    parser.add_argument("datasets", nargs="+", help="mnist, fashion_mnist, cifar10")
    root_option(parser)
    return parser


def run(args: argparse.Namespace) -> int:
    from galu.workflow.data import DataSettings, dataset_names

    root = checkout(args.root)
    unknown = [name for name in args.datasets if name not in dataset_names()]
    if unknown:
        raise UsageError(
            f"unknown dataset(s) {', '.join(unknown)}; choose from {', '.join(dataset_names())}"
        )
    settings = DataSettings.from_config(_site_config(root)["data"])
    # Sidecars record paths relative to the checkout, as the workflow's jobs do.
    with contextlib.chdir(root):
        return _fetch_datasets(args, settings)


def _site_config(root: Path) -> dict:
    """config/config.yaml with config/local.yaml merged over it, as the Snakefile does, and
    validated like the workflow's (a ConfigError names every bad key)."""
    from galu.workflow.settings.config import load_yaml, read_site_file, validate_files

    config = load_yaml(root / "config/config.yaml")
    local = root / "config/local.yaml"
    for key, value in read_site_file(local).items() if local.is_file() else ():
        both = isinstance(value, dict) and isinstance(config.get(key), dict)
        config[key] = {**config[key], **value} if both else value
    validate_files(config, root / "workflow/schemas/config.schema.yaml", check_cuda=False)
    return config


def _fetch_datasets(args: argparse.Namespace, settings: DataSettings) -> int:
    """``galu data fetch|prepare`` from the checkout's root."""
    from galu.workflow.data import DataError, fetch, prepare
    from galu.workflow.provenance import Run, stamp_manifest

    raw, processed = Path("data/raw"), Path("data/processed")
    try:
        for name in args.datasets:
            report = fetch(name, raw, settings)
            # The manifest gets its sidecar here too: the pre-flight and the prepare job
            # accept only a manifest that one vouches for.
            stamp_manifest(
                report.manifest,
                report.substitute,
                rule="galu data fetch",
                params={"dataset": name},
                code=_rule_code("scripts/data_download.py"),
            )
            print(f"{name}: {len(report.files)} raw file(s) verified in data/raw/{name}/")
            if args.action == "prepare":
                run = Run(
                    "galu data prepare",
                    params={"dataset": name},
                    inputs=[report.manifest],
                    code=_rule_code("scripts/data_prepare.py"),
                )
                done = prepare(name, raw, processed, settings.substitutes, run=run)
                print(f"{name}: wrote {done.path}")
    except (DataError, ValueError) as error:
        print(f"galu data: {error}", file=sys.stderr)
        return 1
    return 0


def _rule_code(script: str) -> dict | None:
    """The code closure a workflow job running ``script`` (the rule that does the same step)
    would record, for the sidecar of an output this command makes with that same code, so
    that the audit judges it like the job's (stale when that code changes); None where the
    checkout lacks the script."""
    root = Path(".")
    if not (root / script).is_file():
        return None
    closure = current_closure(code_scanner(root), {"script": script})
    if isinstance(closure, str):
        return None
    return closure_record(closure, ledger_of(root))
