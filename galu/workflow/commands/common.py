"""What several ``galu`` commands share: the usage error they raise (``galu.workflow.cli.main``
prints it and exits 2, no traceback), the checks of the checkout and the paths a command is
given (and its ``--root`` option), and the configuration files of a paper-scale run."""

from __future__ import annotations

import argparse
from pathlib import Path

from galu.workflow.trust.audit import ledger_of


class UsageError(Exception):
    """A command line that cannot work as given: exit 2 with the message, no traceback."""


def root_option(parser: argparse.ArgumentParser) -> None:
    """The ``--root`` option of a command that reads (or writes) a checkout."""
    parser.add_argument("--root", default=".", help="repository root (default: .)")


def checkout(root: str | Path) -> Path:
    """``root`` as a galu checkout (it has ``config/config.yaml``), or a UsageError."""
    root = Path(root)
    if not (root / "config/config.yaml").is_file():
        raise UsageError(
            f"{root.resolve()} is not a galu checkout (no config/config.yaml): run galu from"
            " the repository root, or pass --root PATH"
        )
    return root


def inside(root: Path, path: str, option: str) -> Path:
    """``path`` (relative to ``root``, or absolute) as a path relative to ``root``, or a
    UsageError when it lies outside: galu reads nothing outside the tree it was given."""
    target = Path(path)
    full = (target if target.is_absolute() else root / target).resolve()
    try:
        return full.relative_to(root.resolve())
    except ValueError:
        tree = "the audited tree" if option in ("--explain", "--folders") else "the checkout"
        example = {
            "--explain": "figures/...",
            "--folders": "results",
            "--results": "results/paper-cpu",
            "--configfile": "config/paper.yaml",
        }.get(option, "results/...")
        raise UsageError(
            f"{option} {path} is outside {tree} {root.resolve()}; give a path inside it (e.g."
            f" {example}), or --root its checkout"
        ) from None


def read_text(path: str | Path, what: str, fix: str) -> str:
    """The text of ``path``, or a UsageError naming ``what`` could not be read, why, and the
    ``fix``."""
    try:
        return Path(path).read_text()
    except OSError as error:
        raise UsageError(f"cannot read {what} {path}: {error.strerror}; {fix}") from None


def checked_ledger(root: str | Path) -> None:
    """Read the checkout's equivalence ledger before anything else: a malformed one is a
    usage error naming the file and the fix (LedgerError, exit 2), not a traceback halfway."""
    ledger_of(Path(root))  # (the audit's cached read: later reads in the command reuse it)


def default_configfiles(scale: str) -> list[str]:
    """The configuration files of a run of ``scale``: config/paper.yaml, and the scale's own
    overlay over it when there is one (config/paper-cpu.yaml)."""
    return ["config/paper.yaml"] + ([f"config/{scale}.yaml"] if scale != "paper" else [])
