"""Re-check every workflow output against its provenance sidecar.

For each file under the audited folders: it must have a sidecar, its bytes
must still hash to the recorded sha256, and every input the sidecar lists
must still exist with the recorded hash. Raw dataset archives under
``data/raw/<dataset>/`` have no sidecar of their own: they are checked
against the registry's published checksums (or, for an opted-in substitute,
the pinned sha256 their manifest records). Anything else is a finding.
The audit reads files and sidecars only; it never runs the code that made them.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from galu.provenance import SIDECAR_SUFFIX, seal_problem, sha256_file

DEFAULT_FOLDERS = ("results", "figures", "data/processed", "data/raw")
# Outputs exempt from needing a sidecar: none (the report gets one, galu/report_build.py).
NO_SIDECAR_NEEDED: frozenset[str] = frozenset()
# Set aside by the data stage (a rejected file, a partial download): never used as inputs.
IGNORED_SUFFIXES = (".rejected", ".part")


@dataclass(frozen=True)
class Finding:
    """One inconsistency: which file, and what is wrong with it."""

    path: str
    problem: str

    def __str__(self) -> str:
        return f"{self.path}: {self.problem}"


def read_sidecar(path: Path) -> dict[str, Any] | None:
    """The sidecar record of ``path``; None when there is none. Raises ValueError if corrupt."""
    side = Path(f"{path}{SIDECAR_SUFFIX}")
    if not side.is_file():
        return None
    try:
        record = json.loads(side.read_text())
        record["output"]["sha256"]  # noqa: B018 - the one field every sidecar must have
    except (ValueError, KeyError, TypeError) as error:
        raise ValueError(f"sidecar {side.name} is unreadable or incomplete ({error})") from None
    return record


def _is_temporary(path: Path) -> bool:
    """galu.provenance.atomic_path's in-flight files: '.<name>.<random>.tmp'."""
    return path.name.startswith(".") and path.name.endswith(".tmp")


def _outputs(root: Path, folders: Iterable[str]) -> Iterator[Path]:
    for folder in folders:
        base = root / folder
        if base.is_dir():
            yield from sorted(p for p in base.rglob("*") if p.is_file())


def _raw_archive_problem(root: Path, path: Path) -> str | None | bool:
    """For a registered raw archive: None when it verifies, else the problem.

    False when ``path`` is not a registered raw archive (then it needs a sidecar).
    """
    from galu.data.errors import ChecksumMismatchError
    from galu.data.registry import DATASETS
    from galu.data.verify import verify_official

    rel = path.relative_to(root).parts
    if len(rel) != 4 or rel[:2] != ("data", "raw") or rel[2] not in DATASETS:
        return False
    specs = {f.name: f for f in DATASETS[rel[2]].files}
    if path.name not in specs:
        return False
    try:
        verify_official(path, specs[path.name], str(path))
        return None
    except ChecksumMismatchError as official:
        pinned = _pinned_substitute(path)
        if pinned and sha256_file(path) == pinned:
            return None
        return f"does not match the published checksums ({official.actual})"


def _pinned_substitute(path: Path) -> str | None:
    """The sha256 the dataset's manifest pinned for ``path`` when it came from a substitute."""
    manifest = path.parent / "sources.json"
    try:
        files = json.loads(manifest.read_text())["files"]
    except (OSError, ValueError, KeyError):
        return None
    for entry in files:
        if entry.get("name") == path.name and entry.get("substitute"):
            return entry.get("sha256")
    return None


def check_output(root: Path, path: Path) -> Iterator[str]:
    """Every problem of one output (empty when it is consistent)."""
    raw = _raw_archive_problem(root, path)
    if raw is not False:
        if raw:
            yield raw
        return
    try:
        record = read_sidecar(path)
    except ValueError as error:
        yield str(error)
        return
    if record is None:
        if path.name not in NO_SIDECAR_NEEDED:
            yield "no provenance sidecar (made outside the workflow, or its job was killed)"
        return
    side = Path(f"{path}{SIDECAR_SUFFIX}")
    sealed = seal_problem(side.read_bytes())
    if sealed:
        yield f"sidecar {side.relative_to(root).as_posix()} {sealed}"
    actual = sha256_file(path)
    recorded = record["output"]["sha256"]
    if actual != recorded:
        yield f"changed after it was written (sha256 {actual[:12]}…, recorded {recorded[:12]}…)"
    for item in record.get("inputs", []):
        source = root / item["path"]
        if not source.is_file():
            yield f"input {item['path']} is missing"
        elif sha256_file(source) != item["sha256"]:
            yield f"input {item['path']} changed since this output was made"


def is_output(path: Path) -> bool:
    """An output the audit checks: not a sidecar, a temporary or a set-aside file."""
    return not (
        path.name.endswith(SIDECAR_SUFFIX)
        or _is_temporary(path)
        or path.name.endswith(IGNORED_SUFFIXES)
    )


def audit_tree(root: str | Path = ".", folders: Iterable[str] = DEFAULT_FOLDERS) -> list[Finding]:
    """Every inconsistency between outputs, their sidecars and their inputs under ``root``."""
    root = Path(root)
    findings: list[Finding] = []
    for path in _outputs(root, folders):
        rel = path.relative_to(root).as_posix()
        if path.name.endswith(SIDECAR_SUFFIX):
            if not Path(str(path)[: -len(SIDECAR_SUFFIX)]).is_file():
                findings.append(Finding(rel, "sidecar without its output"))
        elif is_output(path):
            findings.extend(Finding(rel, problem) for problem in check_output(root, path))
    return findings


def count_outputs(root: str | Path = ".", folders: Iterable[str] = DEFAULT_FOLDERS) -> int:
    """How many outputs (not sidecars, not temporaries) the audit looks at."""
    return sum(1 for p in _outputs(Path(root), folders) if is_output(p))


def commits(root: str | Path = ".", folders: Iterable[str] = DEFAULT_FOLDERS) -> dict[str, list]:
    """Outputs grouped by the git commit (with ``+dirty``) their sidecars record."""
    root = Path(root)
    groups: dict[str, list] = {}
    for path in _outputs(root, folders):
        if not is_output(path):
            continue
        try:
            record = read_sidecar(path)
        except ValueError:
            continue
        if record is None:
            continue
        git = record.get("git") or {}
        key = f"{git.get('commit') or 'unknown'}{'+dirty' if git.get('dirty') else ''}"
        groups.setdefault(key, []).append(path.relative_to(root).as_posix())
    return groups


def substitutes(root: str | Path = ".", folders: Iterable[str] = DEFAULT_FOLDERS) -> list[str]:
    """Outputs whose sidecars say they descend from substitute data (``data_substitute``)."""
    root = Path(root)
    found = []
    for path in _outputs(root, folders):
        if not is_output(path):
            continue
        try:
            record = read_sidecar(path)
        except ValueError:
            continue
        if isinstance(record, dict) and record.get("data_substitute") is True:
            found.append(path.relative_to(root).as_posix())
    return sorted(found)
