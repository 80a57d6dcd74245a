"""What the pre-flight reports, and how it sets a failing file aside.

:mod:`galu.workflow.running.preflight` checks the dataset files and results a run reads; each file
that fails becomes a :class:`DataFinding`: the file, its problem and what was done. A failing
file is renamed to ``<name>.rejected`` (:func:`_set_aside`; an earlier rejected copy is kept
as ``<name>.2.rejected`` and so on); one that cannot be set aside (the name is taken by a
folder, the folder is read-only) or read is a *blocking* finding that says what the person
must do (:func:`_stuck`, :func:`_unreadable`), and a dry run says what a real run would do
(:func:`_dry_action`). :func:`blocked` is the line that stops a run a blocking finding names,
and :func:`announce` prints the findings and appends them to ``logs/integrity.log``.
"""

from __future__ import annotations

import errno
import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

REJECTED_SUFFIX = ".rejected"
_LOG = Path("logs/integrity.log")


@dataclass(frozen=True)
class DataFinding:
    """A dataset file that failed its check, and what the pre-flight did about it."""

    path: str
    problem: str
    action: str
    # The file fails (or could not be checked) and is still where a job would read it.
    blocking: bool = False

    def __str__(self) -> str:
        return f"{self.path}: {self.problem}; {self.action}"


def _set_aside(path: Path) -> Path:
    """Rename ``path`` to ``<name>.rejected``, or where an earlier set-aside copy has that
    name, ``<name>.2.rejected`` and so on: every rejected copy is kept for inspection."""
    target, number = path.with_name(path.name + REJECTED_SUFFIX), 1
    while target.is_file() or target.is_symlink():
        number += 1
        target = path.with_name(f"{path.name}.{number}{REJECTED_SUFFIX}")
    if target.is_dir():  # os.replace would say only "Is a directory"
        taken = "the set-aside name is taken by a folder"
        raise IsADirectoryError(errno.EISDIR, taken, str(target))
    os.replace(path, target)
    return target


def _rel(root: Path, path: Path) -> str:
    try:
        return path.relative_to(root).as_posix()
    except ValueError:
        return str(path)


def _fix(root: Path, path: Path, error: OSError | None) -> str:
    """What the person must do so that ``path`` can be set aside (``error``: why it could not)."""
    target = path.with_name(path.name + REJECTED_SUFFIX)
    code = error.errno if error is not None else None
    if target.is_dir() or code in (errno.EISDIR, errno.ENOTEMPTY, errno.EEXIST):
        return f"remove or rename {_rel(root, target)}, which is in the way"
    if code in (errno.EACCES, errno.EPERM, errno.EROFS) or not _writable(path.parent):
        return f"make {_rel(root, path.parent)}/ writable"
    return f"move {_rel(root, path)} out of the tree"


def _writable(folder: Path) -> bool:
    try:
        read_only = bool(os.statvfs(folder).f_flag & os.ST_RDONLY)
    except OSError:
        return False
    return not read_only and os.access(folder, os.W_OK)


def _obstacle(root: Path, path: Path) -> str | None:
    """Why a real run could not set ``path`` aside (None when nothing is in the way)."""
    target = path.with_name(path.name + REJECTED_SUFFIX)
    if target.is_dir():
        return f"{_rel(root, target)} is a folder"
    if not _writable(path.parent):
        return f"{_rel(root, path.parent)}/ is not writable"
    return None


def _stuck(root: Path, path: Path, problem: str, error: OSError) -> DataFinding:
    """A file that fails and could not be set aside: nothing may read it."""
    target = _rel(root, path.with_name(path.name + REJECTED_SUFFIX))
    why = error.strerror or str(error)
    action = (
        f"could not move it to {target} ({why}); nothing started, so that no job reads it:"
        f" {_fix(root, path, error)}, then run again"
    )
    return DataFinding(_rel(root, path), problem, action, blocking=True)


def _unreadable(root: Path, path: Path, error: OSError) -> DataFinding:
    """A file the pre-flight could not read to check: nothing may read it unchecked."""
    problem = f"could not be read to check it ({error.strerror or error})"
    action = (
        "nothing started, so that no job reads it unchecked: make it readable, or move it"
        " out of the tree, then run again"
    )
    return DataFinding(_rel(root, path), problem, action, blocking=True)


def _dry_action(root: Path, path: Path, remedy: str) -> str:
    """What a real run would do with a failing ``path`` (a dry run touches nothing)."""
    rel = _rel(root, path)
    obstacle = _obstacle(root, path)
    if obstacle is None:
        return f"a real run moves it to {rel}{REJECTED_SUFFIX} and {remedy}"
    fix = _fix(root, path, None)
    return (
        f"a real run cannot move it to {rel}{REJECTED_SUFFIX} ({obstacle}) and stops before"
        f" any job: {fix}, then run again"
    )


def blocked(findings: Iterable[DataFinding]) -> str | None:
    """The line that stops a run whose pre-flight left a failing file in place (None when
    nothing blocks): each such finding above says what to do."""
    stuck = [f.path for f in findings if f.blocking]
    if not stuck:
        return None
    return (
        f"nothing started: {len(stuck)} file(s) fail their check and are still where a job"
        f" would read them ({', '.join(stuck)}); do what each line above says, then run again"
    )


def announce(
    findings: Iterable[DataFinding], emit: Callable[[str], None], root: Path, record: bool = True
) -> None:
    """Send each finding to ``emit`` and, when ``record``, append it to ``logs/integrity.log``
    under ``root`` (a dry run passes ``record=False``: it writes nothing)."""
    lines = [f"galu: {finding}" for finding in findings]
    for line in lines:
        emit(line)
    if lines and record:
        import datetime as _dt

        log = root / _LOG
        stamp = _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds")
        try:
            log.parent.mkdir(parents=True, exist_ok=True)
            with open(log, "a", encoding="utf-8") as handle:
                handle.writelines(f"{stamp} {line}\n" for line in lines)
        except OSError as error:
            emit(f"galu: could not append the lines above to {_LOG} ({error.strerror or error})")
