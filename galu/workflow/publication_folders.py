"""Where publications lie under ``published/``, and how one is replaced whole.

A run's publication is the folder ``published/<scale>/`` (a run kept between sittings:
``published/in-progress/<scale>/``; :func:`publication_folder`): the run's files at their
contract paths beside ``publication.json`` (:data:`MANIFEST`), ``run-state.json``
(:data:`STATE`) and ``claims.html`` (:data:`VIEW`). This module names those folders, refuses
a scale that cannot have one (:func:`check_scale_name`) and tells, for a path of the
checkout, which publication holds it (:func:`publication_of`). A published file's sidecar
still describes the run's path (``results/<scale>/...``): :func:`described_path` is how the
audit tells a published copy from a file passed off as another.
:mod:`galu.workflow.publishing.publish` builds a publication and puts it in place with these
helpers.

A publication is replaced whole: the new one is built and verified in a sibling folder
(``published/.<scale>.publishing``), the old one renamed aside (``.<scale>.replaced``), the
new one renamed into place and the old one deleted (:func:`_swap`), so a crash, a kill or a
full disk at any point leaves the previous publication or the new one, never a mix or half of
one; the next ``galu publish`` cleans up what an interrupted one left
(:func:`recover_interrupted`), and ``galu audit`` names it meanwhile (:func:`leftover_of`).
"""

from __future__ import annotations

import json
import os
import re
import shutil
from collections.abc import Iterable
from pathlib import Path, PurePosixPath
from typing import Any

from galu.workflow.provenance import PUBLISHED
from galu.workflow.scales import QUICK, scaled, unscaled

MANIFEST = "publication.json"
# What continuing the run elsewhere needs besides its files (galu.workflow.publishing.resume).
STATE = "run-state.json"
# The publication's verdict page, figures linked inside it
# (galu.workflow.publishing.publish.view_page).
VIEW = "claims.html"


QUICK_REFUSAL = (
    "the quick scale is not published: README's 'What reproduces' is its verdict; publish"
    " a run of another scale (e.g. --scale paper-cpu)"
)


class PublishError(Exception):
    """The run cannot be published as asked (no finished run, a table without sidecar)."""


# published/in-progress/<scale>/: a run kept between sittings (`--in-progress`) so that a
# later one can resume it, not yet a result: README's paper-level section does not show it.
IN_PROGRESS = "in-progress"


# A scale names a folder under published/ that a publication replaces whole: nothing that
# could name published/ itself or a folder above it ("", ".", "..", "a/b").
SCALE_NAME = re.compile(r"[a-z0-9][a-z0-9_-]*")


def check_scale_name(scale: str) -> None:
    """Refuse, with a PublishError, a scale that cannot be published: the quick scale (the
    README's first section is its verdict), the folder of runs in progress, or a name that
    is not a plain folder name (an unset ``$SCALE`` would otherwise name ``published/``)."""
    if scale == QUICK:
        raise PublishError(QUICK_REFUSAL)
    if scale == IN_PROGRESS:
        raise PublishError(f"{IN_PROGRESS!r} names the folder of runs in progress, not a scale")
    if not SCALE_NAME.fullmatch(scale):
        raise PublishError(
            f"{scale!r} is not a scale name (lower-case letters, digits, - and _; e.g."
            " paper-cpu): nothing was published"
        )


def publication_folder(scale: str, in_progress: bool = False) -> str:
    """Where a publication of ``scale`` lies (relative to the checkout)."""
    return f"{PUBLISHED}/{IN_PROGRESS}/{scale}" if in_progress else f"{PUBLISHED}/{scale}"


# Siblings of a publication folder while it is replaced (see the module docstring).
STAGING, ASIDE = "publishing", "replaced"


def _sibling(target: Path, kind: str) -> Path:
    return target.parent / f".{target.name}.{kind}"


def leftover_of(path: str) -> str | None:
    """For a path relative to the checkout: the folder an interrupted ``galu publish`` left
    that holds it (``published/.paper-cpu.publishing``), or None."""
    parts = PurePosixPath(path).parts
    if not parts or parts[0] != PUBLISHED:
        return None
    for i, part in enumerate(parts[1:3], start=1):
        if part.startswith(".") and part.endswith((f".{STAGING}", f".{ASIDE}")):
            return "/".join(parts[: i + 1])
    return None


def leftover_problem(folder: str) -> str:
    """What the audit says of a folder :func:`leftover_of` names, and the fix."""
    if folder.endswith(f".{STAGING}"):
        return (
            "an unfinished publication left by an interrupted `galu publish` (not a"
            " publication: the one beside it is whole); delete it, or publish again, which does"
        )
    return (
        "the previous publication, set aside by an interrupted `galu publish`; publish again"
        " (it is deleted when its replacement is in place, or put back when none is)"
    )


def recover_interrupted(target: Path) -> list[str]:
    """Clean up what an interrupted publication of ``target`` left, saying what was done: an
    unfinished new publication is deleted; the previous one, set aside, is put back when
    nothing replaced it, else deleted."""
    notes = []
    staging, aside = _sibling(target, STAGING), _sibling(target, ASIDE)
    if aside.exists():
        if target.exists():
            shutil.rmtree(aside)
            notes.append(f"deleted {aside.as_posix()}, the publication an interrupted one replaced")
        else:
            os.rename(aside, target)
            notes.append(
                f"put back {target.as_posix()}, set aside by an interrupted publication that"
                " never replaced it"
            )
    if staging.exists():
        shutil.rmtree(staging)
        notes.append(f"deleted {staging.as_posix()}, left unfinished by an interrupted publication")
    return notes


def publication_of(path: str) -> tuple[str, str, str] | None:
    """For a path relative to the checkout inside a publication: (its folder, its scale, the
    contract path inside it); None for any other path."""
    parts = PurePosixPath(path).parts
    if len(parts) < 3 or parts[0] != PUBLISHED:
        return None
    head = 3 if parts[1] == IN_PROGRESS else 2
    if len(parts) <= head:
        return None
    return "/".join(parts[:head]), parts[head - 1], PurePosixPath(*parts[head:]).as_posix()


def publication_scale(path: str) -> tuple[str, str] | None:
    """For a path relative to the checkout inside a publication (``published/<scale>/`` or
    ``published/in-progress/<scale>/``): (scale, the contract path inside it); None for any
    other path."""
    found = publication_of(path)
    return None if found is None else found[1:]


def described_path(path: str) -> str:
    """The path a file's sidecar should describe: its own, or for a published copy of a
    run's output the run's path (``published/paper-cpu/results/claims.csv`` ->
    ``results/paper-cpu/claims.csv``)."""
    published = publication_scale(path)
    if published is None or published[1] in (MANIFEST, STATE, VIEW):
        return path
    scale, contract = published
    return scaled(contract, scale)


def published_copy(path: str, scale: str, folder: str | None = None) -> str:
    """Where the published copy of the run's output ``path`` lies (relative to the checkout),
    in ``folder`` (default: the scale's publication)."""
    return f"{folder or publication_folder(scale)}/{unscaled(path, scale)}"


def _fsync_tree(folder: Path) -> None:
    """Every file and folder under ``folder`` on disk before it is renamed into place."""
    for path in sorted(folder.rglob("*"), reverse=True):
        flags = os.O_RDONLY | (os.O_DIRECTORY if path.is_dir() else 0)
        handle = os.open(path, flags)
        try:
            os.fsync(handle)
        finally:
            os.close(handle)
    handle = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(handle)
    finally:
        os.close(handle)


def _swap(staging: Path, target: Path) -> None:
    """Put ``staging`` in the place of ``target`` whole: the old one renamed aside, the new
    one renamed in, the old one deleted (see :func:`recover_interrupted` for a crash between)."""
    aside = _sibling(target, ASIDE)
    if target.exists():
        os.rename(target, aside)
    try:
        os.rename(staging, target)
    except OSError:
        if aside.exists():
            os.rename(aside, target)  # the previous one back in place at once
        raise
    handle = os.open(target.parent, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(handle)
    finally:
        os.close(handle)
    shutil.rmtree(aside, ignore_errors=True)


def left_out_before(scale: str, root: str | os.PathLike[str] = ".") -> list[str]:
    """The files (contract paths) the scale's publications in checkout ``root``, finished or
    in progress, left out as too large: `galu resume` cannot put them back, so a resumed run
    lacks them by design."""
    names: set[str] = set()
    for in_progress in (False, True):
        manifest = Path(root) / publication_folder(scale, in_progress) / MANIFEST
        record = json_record(manifest) if manifest.is_file() else {}
        names.update(c for c in record.get("left_out", []) if isinstance(c, str))
    return sorted(names)


def previous_machine(scale: str, root: str | os.PathLike[str] = ".") -> str | None:
    """The machine the scale's last publication (finished, else in progress) records: a
    republished run keeps it unless told otherwise (``galu publish --machine``)."""
    for in_progress in (False, True):
        manifest = Path(root) / publication_folder(scale, in_progress) / MANIFEST
        record = json_record(manifest) if manifest.is_file() else {}
        if isinstance(record.get("machine"), str) and record["machine"]:
            return record["machine"]
    return None


def json_record(side: Path) -> dict[str, Any]:
    """A sidecar's record, {} when it is not a JSON mapping (the checks named it already)."""
    try:
        record = json.loads(side.read_text())
    except (OSError, ValueError):
        return {}
    return record if isinstance(record, dict) else {}


def png_figures(files: Iterable[str]) -> list[str]:
    """The PNG figures among a publication's files (contract paths), in their order: what its
    pages link (the PDF beside each is for print)."""
    return [c for c in files if c.startswith("figures/") and c.endswith(".png")]
