"""Outputs whose inputs were rewritten with the same bytes keep their place (issue #61).

Snakemake's ``mtime`` trigger reruns a job whose input is newer than its output, whatever the
bytes: a repaired manifest, ``galu data prepare`` run again in a finished checkout or a copy
that did not keep times would rerun every job below them (hours at the paper scale). The
sidecars already hold the answer: each output's record lists every file input of its job
with its sha256 (:meth:`galu.workflow.provenance.Run.from_snakemake`). Before a run plans,
:func:`refresh` gives every output whose inputs are newer than it, but byte for byte the
ones it was made from, the time of now (it and its sidecar; their bytes untouched), so the
trigger holds for what changed and only that (the benchmark files too, which Snakemake counts
among a job's outputs: :func:`_refresh_benchmarks`). A refreshed output makes its own consumers
newer-input cases in turn: the check repeats until nothing more is refreshed. An input whose
bytes changed is never refreshed past, and a job whose input a rerun rewrites is rerun by
Snakemake as before.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from galu.workflow.sidecar_seal import SIDECAR_SUFFIX, sha256_file
from galu.workflow.sidecar_shape import shape_problem

# The folders whose outputs a run makes (each scale's results, figures and logs live under them).
FOLDERS = ("data", "results", "figures")


def _recorded(root: Path, side: Path) -> tuple[str, list[tuple[Path, str]]] | None:
    """The output's own sha256 and the inputs ``side`` records for it, or None when it
    cannot vouch for them (unreadable, malformed, or describing another file: the audit and
    the pre-flight name those)."""
    try:
        record: Any = json.loads(side.read_text())
    except (OSError, ValueError, UnicodeDecodeError):
        return None
    if shape_problem(record):
        return None
    output = side.with_name(side.name[: -len(SIDECAR_SUFFIX)])
    if record["output"]["path"] != output.relative_to(root).as_posix():
        return None
    return record["output"]["sha256"], [(root / i["path"], i["sha256"]) for i in record["inputs"]]


def _mtime(path: Path) -> float | None:
    try:
        return path.stat().st_mtime
    except OSError:
        return None


def _sidecars(root: Path, folders: Iterable[str]) -> list[Path]:
    return sorted(
        side
        for folder in folders
        if (root / folder).is_dir()
        for side in (root / folder).rglob(f"*{SIDECAR_SUFFIX}")
        if side.is_file()
    )


def refresh(root: Path, folders: Iterable[str] = FOLDERS, now: float | None = None) -> list[Path]:
    """Refresh (see the module docstring) the outputs under ``folders`` of ``root`` whose
    newer inputs hold the recorded bytes; the outputs refreshed, relative to ``root``."""
    now = time.time() if now is None else now
    hashes: dict[Path, str] = {}

    def same_bytes(path: Path, sha: str) -> bool:
        if path not in hashes:
            hashes[path] = sha256_file(path) if path.is_file() else ""
        return hashes[path] == sha

    pending = {}
    for side in _sidecars(root, folders):
        recorded = _recorded(root, side)
        output = side.with_name(side.name[: -len(SIDECAR_SUFFIX)])
        if recorded and recorded[1] and output.is_file():
            pending[output] = (side, recorded[1] + [(output, recorded[0])])
    refreshed: list[Path] = []
    latest = now
    changed = True
    while changed:  # each pass refreshes at least one output, or ends: at most len(pending)
        changed = False
        for output, (side, inputs) in list(pending.items()):
            made = min(_mtime(output) or 0.0, _mtime(side) or 0.0)
            newer = [(p, sha) for p, sha in inputs if p != output and (_mtime(p) or 0.0) > made]
            if not newer:
                continue
            del pending[output]  # judged once: refreshed now, or left for its job to rerun
            if all(same_bytes(p, sha) for p, sha in inputs):  # the output's own bytes too
                # no older than its newest input, even one a little ahead of this clock
                stamp = max(now, *(_mtime(p) or 0.0 for p, _ in newer))
                for path in (output, side):
                    os.utime(path, (stamp, stamp))
                latest = max(latest, stamp)
                refreshed.append(output.relative_to(root))
                changed = True
    if refreshed:
        _refresh_benchmarks(root, latest)
    return refreshed


def _refresh_benchmarks(root: Path, now: float) -> None:
    """Snakemake counts a job's benchmark file among its outputs' times (the oldest of them
    decides), and no sidecar names it: every benchmark file under ``logs/`` takes the time
    of now too. That hides no rerun: a job whose outputs are older than an input still has
    them, and the oldest time is theirs; a benchmark is a measurement, never a result."""
    logs = root / "logs"
    if logs.is_dir():
        for bench in logs.rglob("benchmarks/**/*.tsv"):
            if bench.is_file() and (_mtime(bench) or 0.0) < now:
                os.utime(bench, (now, now))
