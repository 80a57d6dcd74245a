"""The ``galu`` command: ``audit`` outputs against their provenance, check the ``readme``."""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Sequence
from pathlib import Path

from galu import __version__
from galu.audit import DEFAULT_FOLDERS, audit_tree, commits, count_outputs
from galu.claims import readme_with_section
from galu.lineage import explain
from galu.provenance import atomic_write_bytes, git_state


def _explain(args: argparse.Namespace) -> int:
    root = Path(args.root)
    target = Path(args.explain)
    if target.is_absolute():
        target = target.resolve().relative_to(root.resolve())
    node = explain(target, root)
    print("\n".join(node.lines()))
    problems = node.all_problems()
    print(f"galu audit --explain: {len(problems)} problem(s) in the chain of {target}.")
    return 1 if problems else 0


def _commit_notes(args: argparse.Namespace) -> list[str]:
    """Outputs made on another commit than the checkout's, or from a modified tree."""
    head = git_state().get("commit")
    notes = []
    for commit, paths in sorted(commits(args.root, args.folders).items()):
        if head is None or commit != head:
            notes.append(f"{len(paths)} output(s) made on commit {commit}, e.g. {paths[0]}")
    return notes


def _audit(args: argparse.Namespace) -> int:
    if args.explain:
        return _explain(args)
    findings = audit_tree(args.root, args.folders)
    for finding in findings:
        print(f"PROBLEM {finding}")
    notes = _commit_notes(args)
    for note in notes:
        print(f"{'PROBLEM' if args.strict else 'NOTE'} {note}")
    head = git_state().get("commit")
    if notes and head:
        print(f"NOTE the checkout is at commit {head}")
    problems = len(findings) + (len(notes) if args.strict else 0)
    checked = count_outputs(args.root, args.folders)
    if problems:
        print(
            f"galu audit: {problems} problem(s) in {checked} output(s) under "
            f"{', '.join(args.folders)}. Rerun the workflow (snakemake) to rebuild what changed; "
            "an output edited by hand has no trustworthy provenance."
        )
        return 1
    print(f"galu audit: {checked} output(s) consistent with their provenance sidecars.")
    return 0


def _readme(args: argparse.Namespace) -> int:
    readme = Path(args.readme).read_text()
    updated = readme_with_section(readme, Path(args.claims).read_text())
    if updated == readme:
        print(f"{args.readme} is current with {args.claims}.")
        return 0
    if not args.update:
        print(f"{args.readme} differs from {args.claims}; run `galu readme --update`.")
        return 1
    atomic_write_bytes(args.readme, updated.encode())
    print(f"updated the claims section of {args.readme} from {args.claims}.")
    return 0


def _site_config(root: Path) -> dict:
    """config/config.yaml with config/local.yaml merged over it, as the Snakefile does."""
    from galu.config import load_yaml

    config = load_yaml(root / "config/config.yaml")
    local = root / "config/local.yaml"
    for key, value in (load_yaml(local) or {}).items() if local.is_file() else ():
        both = isinstance(value, dict) and isinstance(config.get(key), dict)
        config[key] = {**config[key], **value} if both else value
    return config


def _data(args: argparse.Namespace) -> int:
    from galu.data import DataError, DataSettings, fetch, prepare

    root = Path(args.root)
    settings = DataSettings.from_config(_site_config(root)["data"])
    try:
        for name in args.datasets:
            report = fetch(name, root / "data/raw", settings)
            print(f"{name}: {len(report.files)} raw file(s) verified in data/raw/{name}/")
            if args.action == "prepare":
                done = prepare(
                    name, root / "data/raw", root / "data/processed", settings.substitutes
                )
                print(f"{name}: wrote {done.path}")
    except (DataError, ValueError) as error:
        print(f"galu data: {error}", file=sys.stderr)
        return 1
    return 0


def plain_text(doc: str) -> str:
    """A docstring as ``--help`` shows it: reStructuredText literals and roles (double
    backquotes, ``:func:``) become plain words."""
    return re.sub(r"(?::\w+:)?`+([^`]+)`+", r"\1", doc).strip()


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="galu", description=plain_text(__doc__ or ""))
    parser.add_argument("--version", action="version", version=f"galu {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)
    audit = sub.add_parser("audit", help="check every output against its provenance sidecar")
    audit.add_argument("--root", default=".", help="repository root (default: .)")
    audit.add_argument(
        "--folders",
        nargs="+",
        default=list(DEFAULT_FOLDERS),
        help=f"folders to audit, relative to the root (default: {' '.join(DEFAULT_FOLDERS)})",
    )
    audit.add_argument(
        "--explain",
        metavar="FILE",
        help="print the provenance chain of one output, down to the raw archives",
    )
    audit.add_argument(
        "--strict",
        action="store_true",
        help="also fail when outputs were made on another commit or from a modified tree",
    )
    audit.set_defaults(func=_audit)
    data = sub.add_parser("data", help="fetch (and prepare) datasets outside the workflow")
    data.add_argument(
        "action", choices=("fetch", "prepare"), help="fetch raw files, or also convert"
    )
    data.add_argument("datasets", nargs="+", help="mnist, fashion_mnist, cifar10")
    data.add_argument("--root", default=".", help="repository root (default: .)")
    data.set_defaults(func=_data)
    readme = sub.add_parser("readme", help="compare (or --update) README's claims section")
    readme.add_argument("--claims", default="results/claims.md", help="the generated table")
    readme.add_argument("--readme", default="README.md", help="the README to check")
    readme.add_argument("--update", action="store_true", help="rewrite the section in place")
    readme.set_defaults(func=_readme)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())
