"""The one message a user sees when some dataset file could not be obtained.

It lists, per missing file, its name, size and checksums and every place that
was tried with what happened there, then the ways to supply the file.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from galu.workflow.data.mirrors import ENV_VAR
from galu.workflow.data.registry import RawFile


@dataclass(frozen=True)
class Attempt:
    """One place a file was looked for, and what happened there."""

    place: str
    outcome: str


@dataclass(frozen=True)
class MissingFile:
    """A file no source could supply, with every attempt made."""

    dataset: str
    spec: RawFile
    raw_dir: Path
    attempts: tuple[Attempt, ...]


def _describe_file(item: MissingFile) -> list[str]:
    spec = item.spec
    lines = [
        f"{item.dataset}: {spec.name} ({spec.size} bytes, md5 {spec.md5}, "
        f"sha256 {spec.sha256 or 'not recorded'})"
    ]
    if spec.has_content_checksum:
        lines.append(f"    or any gzip whose content has md5 {spec.content_md5}")
    lines.append("  tried:")
    lines += [f"    - {a.place}: {a.outcome}" for a in item.attempts]
    return lines


def _fixes(missing: Sequence[MissingFile]) -> list[str]:
    folders = sorted({str(m.raw_dir) for m in missing})
    return [
        "How to fix (any one of):",
        "  1. Point a mirror at a folder (or https URL) holding the files, directly or in a",
        "     sub-folder named after the dataset (e.g. mnist/, fashion-mnist/, cifar-10/):",
        f"       export {ENV_VAR}=/shared/datasets   (':'-separated, searched first)",
        "     or add it to data.mirrors in config/local.yaml (this machine's settings).",
        f"  2. Copy the files into {', '.join(folders)} and run again.",
        "  3. Fetch on a machine with internet (`galu data fetch <dataset>`), then copy",
        "     data/raw over or share it with `dvc push` / `dvc pull`.",
        "  4. Only if your site has nothing but a re-packed or reconstructed copy: opt in",
        "     under data.substitutes with dataset, file, path and that copy's sha256;",
        "     everything made from it is then marked as a substitute.",
        "  5. Leave the dataset out: drop it from generalization.datasets; everything else",
        "     runs, and the claims that need it become not_run (CIFAR-10 is also needed by",
        "     the normalization stage's trainability experiments).",
    ]


def offline_message(missing: Sequence[MissingFile]) -> str:
    """The full error text for ``missing`` files (one block per file, then the fixes)."""
    head = (
        f"{len(missing)} dataset file(s) could not be obtained with the published "
        "checksums; stopping before any conversion."
    )
    lines = [head, ""]
    for item in missing:
        lines += _describe_file(item) + [""]
    return "\n".join(lines + _fixes(missing))
