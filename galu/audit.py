"""Re-check every workflow output against its provenance sidecar.

For each file under the audited folders: it must have a sidecar, its bytes
must still hash to the recorded sha256, and every input the sidecar lists
must still exist with the recorded hash. Anything else is a finding. The
audit reads files and sidecars only; it never imports the code that made them.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from galu.provenance import SIDECAR_SUFFIX, sha256_file

DEFAULT_FOLDERS = ("results", "figures", "data/processed")
# Snakemake's report archive is made by `snakemake --report`, not by a galu job.
NO_SIDECAR_NEEDED = frozenset({"report.zip"})


@dataclass(frozen=True)
class Finding:
    """One inconsistency: which file, and what is wrong with it."""

    path: str
    problem: str

    def __str__(self) -> str:
        return f"{self.path}: {self.problem}"


def _is_temporary(path: Path) -> bool:
    """galu.provenance.atomic_path's in-flight files: '.<name>.<random>.tmp'."""
    return path.name.startswith(".") and path.name.endswith(".tmp")


def _outputs(root: Path, folders: Iterable[str]) -> Iterator[Path]:
    for folder in folders:
        base = root / folder
        if base.is_dir():
            yield from sorted(p for p in base.rglob("*") if p.is_file())


def _check_output(root: Path, path: Path) -> Iterator[str]:
    side = Path(f"{path}{SIDECAR_SUFFIX}")
    if not side.is_file():
        if path.name not in NO_SIDECAR_NEEDED:
            yield "no provenance sidecar (made outside the workflow, or its job was killed)"
        return
    try:
        record = json.loads(side.read_text())
        recorded = record["output"]["sha256"]
        inputs = record.get("inputs", [])
    except (ValueError, KeyError, TypeError) as error:
        yield f"sidecar {side.name} is unreadable or incomplete ({error})"
        return
    actual = sha256_file(path)
    if actual != recorded:
        yield f"changed after it was written (sha256 {actual[:12]}…, recorded {recorded[:12]}…)"
    for item in inputs:
        source = root / item["path"]
        if not source.is_file():
            yield f"input {item['path']} is missing"
        elif sha256_file(source) != item["sha256"]:
            yield f"input {item['path']} changed since this output was made"


def audit_tree(root: str | Path = ".", folders: Iterable[str] = DEFAULT_FOLDERS) -> list[Finding]:
    """Every inconsistency between outputs, their sidecars and their inputs under ``root``."""
    root = Path(root)
    findings: list[Finding] = []
    for path in _outputs(root, folders):
        rel = path.relative_to(root).as_posix()
        if _is_temporary(path):
            continue
        if path.name.endswith(SIDECAR_SUFFIX):
            if not Path(str(path)[: -len(SIDECAR_SUFFIX)]).is_file():
                findings.append(Finding(rel, "sidecar without its output"))
            continue
        findings.extend(Finding(rel, problem) for problem in _check_output(root, path))
    return findings


def count_outputs(root: str | Path = ".", folders: Iterable[str] = DEFAULT_FOLDERS) -> int:
    """How many outputs (not sidecars, not temporaries) the audit looks at."""
    return sum(
        1
        for p in _outputs(Path(root), folders)
        if not p.name.endswith(SIDECAR_SUFFIX) and not _is_temporary(p)
    )
