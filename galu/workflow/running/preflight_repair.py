"""How the pre-flight mends the raw archives of a dataset, and when it fetches them again.

:mod:`galu.workflow.running.preflight` checks every raw archive a download manifest
(``data/raw/<dataset>/sources.json``) lists against the published checksums
(:func:`_raw_problem`). One that fails, once set aside, is copied back from the local file
its manifest says it came from when that still has the recorded sha256 (:func:`_restore`);
otherwise the manifest and the array made from the archives are set aside so that the
download job fetches the dataset again (:func:`_refetch`). Before the archives are checked,
a hard link into the mirror they came from gets bytes of its own (:func:`_unshare`), and a
manifest an older ``galu data fetch`` wrote without a sidecar gets one when every archive it
lists verifies (:func:`_adopt`), rather than being fetched again.
"""

from __future__ import annotations

import contextlib
import os
import shutil
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

from galu.atomic import atomic_path
from galu.workflow.data.errors import DataError
from galu.workflow.data.fetch import read_manifest
from galu.workflow.provenance import SIDECAR_SUFFIX, sha256_file, sidecar_path, stamp_manifest
from galu.workflow.running.preflight_findings import DataFinding, _fix, _rel, _set_aside


def _raw_problem(root: Path, path: Path) -> str | None:
    from galu.workflow.trust.audit import check_output

    problems = list(check_output(root, path))
    return "; ".join(problems) if problems else None


def _local_source(entry: Mapping[str, Any]) -> Path | None:
    """The local file a manifest entry says its archive came from (None: a URL, or gone)."""
    source = str(entry.get("source") or "")
    if source.startswith("substitute "):
        source = source.removeprefix("substitute ")
    src = Path(source)
    if not source or "://" in source or not src.is_absolute() or not src.is_file():
        return None
    return src


def _restore(entry: Mapping[str, Any], dest: Path) -> str | None:
    """Copy the archive back from where the manifest says it came, if those bytes still match.

    Returns the source used, or None when there is no such verifiable local copy.
    """
    src = _local_source(entry)
    if src is None:
        return None
    source = str(src)
    if sha256_file(src) != entry.get("sha256"):
        return None
    try:
        with atomic_path(dest) as tmp:
            shutil.copyfile(src, tmp)
    except OSError:  # the folder cannot take it (full, read-only): fetch it again instead
        return None
    if sha256_file(dest) != entry.get("sha256"):  # pragma: no cover - the copy itself failed
        _set_aside(dest)
        return None
    return source


def _refetch(root: Path, manifest: Path) -> tuple[str, bool]:
    """Make Snakemake run the download again: set aside the manifest (the download job's
    output) and the processed array made from these archives (else Snakemake, finding the
    array up to date, would never ask for the missing archive). Returns what it did and
    whether something it had to set aside is still in place (the run must stop)."""
    processed = root / "data" / "processed" / f"{manifest.parent.name}.npz"
    moved, stuck = [], []
    for path in (manifest, Path(f"{manifest}{SIDECAR_SUFFIX}"), processed):
        if path.exists():
            try:
                moved.append(_set_aside(path).relative_to(root).as_posix())
            except OSError as error:
                stuck.append((path, error))
    if stuck:
        path, error = stuck[0]
        names = ", ".join(_rel(root, p) for p, _ in stuck)
        return (
            f"; could not set aside {names} ({error.strerror or error}), so this run cannot"
            f" fetch the archive again; nothing started: {_fix(root, path, error)}, then run again"
        ), True
    return (
        f"; set aside {', '.join(moved)}; this run fetches the archive again from a source"
        " that passes verification and rebuilds what was made from it"
    ), False


def _unshare(
    root: Path, dry_run: bool, manifest: Path, entries: Iterable[Mapping[str, Any]]
) -> Iterator[DataFinding]:
    """Archives that are hard links into the mirror they came from (an older galu linked
    them): a write under data/raw/ would change the shared copy, so each gets bytes of its
    own (a copy renamed over the link; the mirror's file is not touched)."""
    for entry in entries:
        path, source = manifest.parent / str(entry["name"]), _local_source(entry)
        try:
            shared = source is not None and path.is_file() and os.path.samefile(path, source)
        except OSError:
            shared = False
        if not shared:
            continue
        problem = f"is a hard link to the mirror's {source}: a write here would change the mirror"
        action = "a real run replaces it by a copy of its own"
        if not dry_run:
            try:
                with atomic_path(path) as tmp:
                    shutil.copyfile(path, tmp)
                action = "replaced it by a copy of its own (same bytes); the mirror is untouched"
            except OSError as error:
                action = (
                    f"could not replace it by a copy ({error.strerror or error}); make"
                    f" {_rel(root, path.parent)}/ writable so that it can be"
                )
        yield DataFinding(_rel(root, path), problem, action)


ADOPTED = "pre-flight: adopted"


def _adopt(root: Path, dry_run: bool, manifest: Path) -> Iterator[DataFinding]:
    """A readable manifest without a sidecar (``galu data fetch`` wrote none before 07b7f57)
    whose every archive is in place and verifies: it gets a sidecar (rule ``ADOPTED``)
    instead of being fetched again, which would rebuild the arrays made from it and rerun
    every job that read them."""
    if sidecar_path(manifest).exists():
        return
    try:
        entries = read_manifest(manifest)
    except (OSError, DataError):
        return  # not a manifest to adopt: the manifest's own check sets it aside
    archives = [manifest.parent / e["name"] for e in entries]
    if not entries or not all(a.is_file() and _raw_problem(root, a) is None for a in archives):
        return
    rel, problem = _rel(root, manifest), "has no provenance sidecar (an older `galu data fetch`)"
    if dry_run:
        yield DataFinding(rel, problem, "its archives verify: a real run gives it a sidecar")
        return
    substitute = any(bool(e.get("substitute")) for e in entries)
    try:
        with contextlib.chdir(root):  # sidecars record paths relative to the checkout
            stamp_manifest(rel, substitute, rule=ADOPTED, params={"dataset": manifest.parent.name})
    except OSError:
        return  # cannot write it here: the manifest's own check says what is in the way
    then = "its archives verify, so it was given a sidecar; nothing is fetched again or rebuilt"
    yield DataFinding(rel, problem, then)
