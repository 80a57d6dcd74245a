"""Continue a published run where it stopped: ``galu resume --scale paper-cpu``.

A run at the paper level takes longer than one sitting, and the machine it started on may be
gone when it is continued (a cluster allocation, a fresh CI-like machine, a colleague's
laptop). :func:`galu.workflow.publishing.publish.publish` keeps in the repository every result file
of the run
with its provenance sidecar, and in ``run-state.json`` what Snakemake needs to trust them:
its metadata record of each file (rule, code and parameter hashes, input set) and the jobs'
benchmark tables (the cost model's measurements). :func:`resume` puts them back:

- the published bytes are checked against their sidecars first: a corrupted copy is never
  put back (its job reruns instead);
- nothing of a run already in the checkout is overwritten: a file that differs from the
  published one stops the resume before anything is copied, naming it;
- Snakemake's metadata is written only where it has none, so its code-, parameter- and
  input-triggered reruns work on the restored files exactly as on the original machine: an
  edit of a stage's code since the publication reruns that stage, nothing else;
- every restored file gets the same modification time, now, so that Snakemake's mtime
  trigger sees no output older than another. Inputs outside the run (the prepared datasets
  under ``data/processed``) must exist before the resume: one made after it is newer than
  the results and reruns their jobs (:func:`missing_data` names them).

Figures are published and put back like the tables (PNG and PDF, with their sidecars), and
the checkpoints of jobs that were cut off (:mod:`galu.checkpoints`) where the checkout has none.
The run's own verdict page (``results/claims.html``, which links the run's figure folder) is
no page of the publication: its bytes and its sidecar are in ``run-state.json``
(``run_pages``), checked against each other like a published file and put back beside the
tables, so the claims job that wrote it is not due (:func:`_run_pages`). The publication's own
pages (``claims.html`` at its root, each figure's caption page) stay in ``published/``.
"""

from __future__ import annotations

import base64
import errno
import hashlib
import json
import os
import shutil
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from galu.atomic import atomic_path, atomic_write_bytes
from galu.checkpoints import FOLDER as CHECKPOINTS
from galu.workflow.provenance import (
    recorded_sha256,
    seal_problem,
    sha256_file,
    sidecar_mismatch,
    sidecar_path,
)
from galu.workflow.publication_folders import (
    ASIDE,
    MANIFEST,
    SCALE_NAME,
    STATE,
    publication_folder,
)
from galu.workflow.publishing.publication_manifest import RUN_FOLDERS, RUN_PAGES
from galu.workflow.running.snakemake_metadata import METADATA, metadata_record_path
from galu.workflow.scales import scaled
from galu.workflow.sidecar_shape import inside_problem, shape_problem

# Where a publication's files may lie (contract paths of publication_manifest.run_files).
_RUN_PREFIXES = tuple(f"{folder}/" for folder in RUN_FOLDERS)
# Where a publication's checkpoints may go (galu.checkpoints): a run's results only.
_CHECKPOINT_PREFIX = f"{CHECKPOINTS.as_posix()}/results/"


class ResumeError(Exception):
    """The publication cannot be put back (none published, a corrupted copy, a conflict)."""


@dataclass
class Resumed:
    """What :func:`resume` did: files put back, files already there with the same bytes,
    Snakemake records written, benchmark tables written, checkpoints of unfinished jobs
    written, the dataset arrays the run was made from that this checkout lacks
    (:func:`missing_data`), and the run's files its publication left out as too large (not
    put back: a job that needs one reruns the job that makes it)."""

    restored: list[str] = field(default_factory=list)
    present: list[str] = field(default_factory=list)
    records: int = 0
    benchmarks: int = 0
    checkpoints: int = 0
    missing_data: list[str] = field(default_factory=list)
    left_out: list[str] = field(default_factory=list)


def _published(scale: str, root: Path, in_progress: bool) -> tuple[Path, dict[str, Any]]:
    if not SCALE_NAME.fullmatch(scale):
        raise ResumeError(f"{scale!r} is not a scale name (e.g. paper-cpu)")
    folder = root / publication_folder(scale, in_progress)
    manifest = folder / MANIFEST
    if not manifest.is_file():
        flag = " --in-progress" if in_progress else ""
        aside = folder.parent / f".{folder.name}.{ASIDE}"
        hint = (
            f" (an interrupted `galu publish` set the last one aside in {aside.as_posix()}:"
            f" `galu publish --scale {scale}{flag}` puts it back or replaces it)"
            if aside.is_dir()
            else ""
        )
        raise ResumeError(
            f"no published run of the {scale} scale ({manifest.as_posix()} is missing);"
            f" `galu publish --scale {scale}{flag}` makes one{hint}"
        )
    return folder, _read_record(manifest)


def _read_record(path: Path) -> dict[str, Any]:
    """A publication's JSON record (manifest, run state), or a ResumeError naming it when it
    is not readable JSON holding a record (truncated, edited): read before anything is
    copied, so a bad one never leaves a half-done resume."""
    try:
        content = json.loads(path.read_text())
    except (OSError, ValueError) as error:
        raise ResumeError(
            f"{path.as_posix()} is not readable JSON ({error}); nothing was copied. Restore it"
            " with `git checkout -- published/`"
        ) from None
    if not isinstance(content, dict) or not isinstance(content.get("files", []), list):
        raise ResumeError(
            f"{path.as_posix()} does not hold a publication's record; nothing was copied."
            " Restore it with `git checkout -- published/`"
        )
    outside = [
        repr(p)
        for p in [
            *content.get("files", []),
            *_mapping(content, path, "benchmarks"),
            *_mapping(content, path, "snakemake_metadata"),
        ]
        if inside_problem(p)
        or (p in content.get("files", []) and not str(p).startswith(_RUN_PREFIXES))
        or (p in content.get("benchmarks", {}) and not str(p).startswith("logs/"))
    ] + [
        repr(p)
        for p in _mapping(content, path, "checkpoints")
        if inside_problem(p) or not str(p).startswith(_CHECKPOINT_PREFIX)
    ]
    if outside:
        raise ResumeError(
            f"{path.as_posix()} names {', '.join(outside[:3])}: not a file of a run inside the"
            " repository (results/..., figures/..., logs/... or a checkpoint under"
            f" {_CHECKPOINT_PREFIX}); nothing was copied. Restore"
            " it with `git checkout -- published/`"
        )
    pages = _mapping(content, path, "run_pages")
    if any(
        p not in RUN_PAGES
        or not isinstance(kept, dict)
        or not all(isinstance(kept.get(k), str) for k in ("text", "sidecar"))
        for p, kept in pages.items()
    ):
        raise ResumeError(
            f"{path.as_posix()} holds run pages other than {', '.join(RUN_PAGES)}, or one"
            " without its text and sidecar; nothing was copied. Restore it with"
            " `git checkout -- published/`"
        )
    if not all(isinstance(t, str) for t in content.get("benchmarks", {}).values()):
        raise ResumeError(
            f"{path.as_posix()} holds a benchmark table that is not text; nothing was copied."
            " Restore it with `git checkout -- published/`"
        )
    for name, text in content.get("checkpoints", {}).items():
        try:
            base64.b64decode(text, validate=True)
        except (TypeError, ValueError):
            raise ResumeError(
                f"{path.as_posix()} holds the checkpoint {name} in a form that is not base64;"
                " nothing was copied. Restore it with `git checkout -- published/`"
            ) from None
    return content


def _mapping(content: dict[str, Any], path: Path, key: str) -> dict[str, Any]:
    """``content[key]`` when it is a mapping (absent: empty), else a ResumeError."""
    value = content.get(key, {})
    if not isinstance(value, dict):
        raise ResumeError(
            f"{path.as_posix()} holds {key} as a {type(value).__name__}, not a mapping; nothing"
            " was copied. Restore it with `git checkout -- published/`"
        )
    return value


def _check_copies(folder: Path, files: Iterable[str]) -> list[str]:
    """Published files that fail their provenance: no sealed sidecar, or other bytes than
    it records (the checks the audit makes of any output)."""
    bad = []
    for contract in files:
        copy = folder / contract
        side = sidecar_path(copy)
        problem = (
            "has no readable sidecar"
            if recorded_sha256(copy) is None
            else f"has a sidecar that {shape}"
            if (shape := _shape(side))
            else f"its sidecar {seal_problem(side.read_bytes())}"
            if seal_problem(side.read_bytes())
            else "is missing"
            if not copy.is_file()
            else sidecar_mismatch(copy)
        )
        if problem:
            bad.append(f"{copy.as_posix()} {problem}")
    return bad


def _shape(side: Path) -> str | None:
    try:
        return shape_problem(json.loads(side.read_text()))
    except (OSError, ValueError) as error:
        return f"is not readable JSON ({error})"


def _plan(folder: Path, files: Iterable[str], scale: str, root: Path) -> tuple[list, list, list]:
    """(to copy, already present with the same bytes, conflicting) as (contract, target)."""
    copy, same, conflict = [], [], []
    for contract in files:
        target = root / scaled(contract, scale)
        pair = (contract, target)
        if not target.exists():
            copy.append(pair)
        elif sha256_file(target) == sha256_file(folder / contract) and _same_bytes(
            sidecar_path(target), sidecar_path(folder / contract)
        ):  # the record too: a table with another sidecar is another run's
            same.append(pair)
        else:
            conflict.append(pair)
    return copy, same, conflict


def _run_pages(
    folder: Path, pages: Mapping[str, Mapping[str, str]], scale: str, root: Path
) -> tuple[list[tuple[Path, bytes, bytes]], list[Path], list[Path], list[str]]:
    """The run's own pages kept in the run state (contract -> text and sidecar): (to write as
    (target, bytes, sidecar bytes), already there with the same bytes, conflicting, failing
    their sidecar). A page's sidecar must be sealed, describe the run's path and record the
    page's bytes, as the audit asks of any output."""
    write, same, conflict, bad = [], [], [], []
    for contract, kept in pages.items():
        target = root / scaled(contract, scale)
        data, side = kept["text"].encode(), kept["sidecar"].encode()
        where = f"{(folder / STATE).as_posix()}'s {contract}"
        try:
            record = json.loads(side)
        except ValueError as error:
            bad.append(f"{where} has a sidecar that is not readable JSON ({error})")
            continue
        problem = (
            shape_problem(record)
            or seal_problem(side)
            or (
                f"describes {record['output']['path']}, not {scaled(contract, scale)}"
                if record["output"]["path"] != scaled(contract, scale)
                else None
            )
            or (
                "has other bytes than its sidecar records"
                if hashlib.sha256(data).hexdigest() != record["output"]["sha256"]
                else None
            )
        )
        if problem:
            bad.append(f"{where} {problem}")
        elif not target.exists():
            write.append((target, data, side))
        elif target.read_bytes() == data and _holds(sidecar_path(target), side):
            same.append(target)
        else:
            conflict.append(target)
    return write, same, conflict, bad


def _holds(path: Path, data: bytes) -> bool:
    return path.is_file() and path.read_bytes() == data


def _same_bytes(a: Path, b: Path) -> bool:
    return a.is_file() and b.is_file() and sha256_file(a) == sha256_file(b)


def copy_to(source: Path, dest: Path) -> None:
    """Copy ``source`` to ``dest`` whole (aside, then renamed); an error while writing (a
    full disk) names the destination, where the space is missing, not the source."""
    try:
        with atomic_path(dest) as temporary:
            shutil.copyfile(source, temporary)
    except OSError as error:
        if error.errno in (errno.ENOSPC, errno.EDQUOT, errno.EROFS, errno.EACCES):
            raise OSError(error.errno, error.strerror, str(dest)) from error
        raise


def missing_data(folder: Path, files: Iterable[str], root: Path = Path(".")) -> list[str]:
    """Dataset arrays (``data/``) the published files were made from that this checkout
    lacks: prepare them before resuming, or their consumers rerun."""
    needed = set()
    for contract in files:
        record = json.loads(sidecar_path(folder / contract).read_text())
        for entry in record.get("inputs", []):
            path = entry.get("path", "") if isinstance(entry, Mapping) else str(entry)
            if path.startswith("data/"):
                needed.add(path)
    return sorted(p for p in needed if not (root / p).is_file())


def _write_records(records: Mapping[str, Any], root: Path) -> int:
    written = 0
    for target, record in records.items():
        path = metadata_record_path(target, root / METADATA)
        if path.exists():
            continue  # this checkout's own record of the file wins
        path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write_bytes(path, json.dumps(record).encode())
        written += 1
    return written


def _write_benchmarks(benchmarks: Mapping[str, str], root: Path, now: float) -> int:
    """Write the run's benchmark tables where missing, and give every one of them the
    restored files' time: Snakemake counts a job's benchmark among its outputs, so one left
    from an earlier resume, older than a dataset prepared since, would rerun the job."""
    written = 0
    for rel, text in benchmarks.items():
        path = root / rel
        if not path.exists():
            path.parent.mkdir(parents=True, exist_ok=True)
            atomic_write_bytes(path, text.encode())
            written += 1
        os.utime(path, (now, now))
    return written


def _write_checkpoints(kept: Mapping[str, str], root: Path) -> int:
    """Put back the checkpoints of the run's unfinished jobs where this checkout has none (its
    own would be newer); a job loads one only if its settings and code are the same."""
    written = 0
    for rel, text in kept.items():
        path = root / rel
        if not path.exists():
            atomic_write_bytes(path, base64.b64decode(text, validate=True))
            written += 1
    return written


def resume(scale: str, root: str | os.PathLike[str] = ".", in_progress: bool = False) -> Resumed:
    """Put the published run of ``scale`` (kept ``in_progress``, or published) back into
    ``root`` (see the module docstring). Raises ResumeError, before copying anything, for a
    missing publication, a manifest or run state that is not readable JSON, a published file
    that fails its sidecar, or a file of the checkout's run that differs from it."""
    root = Path(root)
    folder, manifest = _published(scale, root, in_progress)
    files = manifest.get("files", [])
    state_file = folder / STATE
    state = _read_record(state_file) if state_file.is_file() else {}
    pages = _run_pages(folder, state.get("run_pages", {}), scale, root)
    bad = _check_copies(folder, files) + pages[3]
    if bad:
        raise ResumeError(
            "published file(s) fail their provenance check, so they are not put back: "
            + "; ".join(bad)
            + ". Restore them with `git checkout -- published/`, or rerun their jobs."
        )
    to_copy, same, conflict = _plan(folder, files, scale, root)
    if conflict or pages[2]:
        clashes = [t for _, t in conflict] + pages[2]
        names = ", ".join(t.relative_to(root).as_posix() for t in clashes)
        raise ResumeError(
            f"this checkout's {scale} run already has different file(s) or provenance"
            f" records (sidecars): {names}. Nothing was copied; move them aside (or delete"
            " them) to take the published ones."
        )
    now = time.time()
    for contract, target in to_copy:
        source = folder / contract
        for src, dest in ((source, target), (sidecar_path(source), sidecar_path(target))):
            copy_to(src, dest)
    for target, data, side in pages[0]:
        target.parent.mkdir(parents=True, exist_ok=True)
        atomic_write_bytes(target, data)
        atomic_write_bytes(sidecar_path(target), side)
    restored = [t for _, t in to_copy] + [t for t, _, _ in pages[0]]
    present = [t for _, t in same] + pages[1]
    for target in restored + present:
        for path in (target, sidecar_path(target)):
            os.utime(path, (now, now))  # one instant: no restored file older than another
    return Resumed(
        restored=[t.relative_to(root).as_posix() for t in restored],
        present=[t.relative_to(root).as_posix() for t in present],
        records=_write_records(state.get("snakemake_metadata", {}), root),
        benchmarks=_write_benchmarks(state.get("benchmarks", {}), root, now),
        checkpoints=_write_checkpoints(state.get("checkpoints", {}), root),
        missing_data=missing_data(folder, files, root),
        left_out=[c for c in manifest.get("left_out", []) if isinstance(c, str)],
    )
