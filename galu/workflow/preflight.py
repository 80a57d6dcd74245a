"""The pre-flight: dataset files and results that lost integrity, found before any job runs.

:func:`preflight` re-hashes the dataset files the workflow reads: every processed array
``data/processed/<dataset>.npz`` against its provenance sidecar, and every raw archive a
download manifest (``data/raw/<dataset>/sources.json``) lists against the published
checksums. A file that fails is never used: it is renamed to ``<name>.rejected`` (the bytes
are kept for inspection; the audit ignores that suffix), so the job that makes it runs again.
A raw archive is put back at once from the place its manifest says it came from when that
copy still has the recorded sha256; otherwise the manifest and the array made from the
archive are set aside too, and the download job fetches the archive again from a source it
can verify. It checks every intermediate result the same way (every file under ``results/``
and ``figures/`` against its sidecar: bytes, seal, and the bytes of the results it was made
from), so that nothing reads a result the audit would reject: one that fails is set aside
with its sidecar and its job runs again. It also deletes the hidden temporary files that jobs
killed in the middle of an atomic write leave behind. Nothing is touched while a Snakemake
lock is held (another run may be writing), and a dry run only reports.

The pre-flight never degrades silently: a file that fails and cannot be set aside (the
set-aside name is taken, the folder is read-only), or that cannot be read to check it, is a
*blocking* finding, and the run stops before any job starts (nothing may read it), saying
what is in the way; a dry run says that a real run would stop.
The workflow calls it (:func:`galu.workflow.run_hooks.check_at_parse`) in Snakemake's main
process only; the configuration's
own contradictions are :mod:`galu.workflow.consistency`'s.
"""

from __future__ import annotations

import contextlib
import errno
import functools
import json
import os
import shutil
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from galu.atomic import atomic_path, atomic_write_bytes
from galu.workflow.data.errors import DataError
from galu.workflow.data.fetch import read_manifest
from galu.workflow.provenance import SIDECAR_SUFFIX, sha256_file, sidecar_path, stamp_manifest
from galu.workflow.vouch import bytes_problem, sidecar_problem

REJECTED_SUFFIX = ".rejected"
_LOG = Path("logs/integrity.log")
# Stat fingerprints of dataset files that passed (see _Checked); Snakemake's own folder.
CHECKED_CACHE = Path(".snakemake/galu/checked.json")


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


def lock_held(root: Path) -> bool:
    """Whether a Snakemake run holds (or a killed one left) a lock in ``root``."""
    locks = root / ".snakemake" / "locks"
    return locks.is_dir() and any(locks.glob("*.lock"))


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


class _Checked:
    """Files that passed, keyed by what would change if their bytes were rewritten.

    Hashing every dataset on every Snakemake call costs seconds; a file whose size, mtime,
    ctime and inode are those it had when it last passed (against the same expected hash)
    is not hashed again. The ctime is what keeps this honest: ``touch -d`` or ``os.utime``
    can put an old mtime back after an in-place edit, but every such call sets the ctime
    to now, so the edited file no longer matches its stamp and is hashed. Bytes rotting in
    place (no system call at all) are still refused where they are used
    (``load_processed`` and the conversion re-verify everything they read), and
    ``galu audit`` never consults the stamps: it rehashes every file.
    """

    def __init__(self, root: Path) -> None:
        self.root, self.path = root, root / CHECKED_CACHE
        try:
            entries = json.loads(self.path.read_text())
        except (OSError, ValueError):
            entries = {}
        # A cache of another shape (damaged, hand-edited) is no cache: every file is hashed.
        self.entries: dict[str, list] = entries if isinstance(entries, dict) else {}
        self.changed = False
        self.unsaved: OSError | None = None

    @staticmethod
    def _key(path: Path, expected: str) -> list:
        st = path.stat()
        return [st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino, expected]

    def passed(self, path: Path, expected: str | None) -> bool:
        known = self.entries.get(path.relative_to(self.root).as_posix())
        return expected is not None and known == self._key(path, expected)

    def record(self, path: Path, expected: str | None) -> None:
        if expected is not None:
            self.entries[path.relative_to(self.root).as_posix()] = self._key(path, expected)
            self.changed = True

    def save(self) -> None:
        """Write the stamps; a failure (read-only ``.snakemake``) only costs rehashing."""
        if self.changed:
            data = json.dumps(self.entries, indent=1, sort_keys=True).encode()
            try:
                atomic_write_bytes(self.path, data)
            except OSError as error:
                self.unsaved = error


def _screen(
    root: Path,
    dry_run: bool,
    checked: _Checked,
    files: Iterable[tuple[Path, str | None, Any]],
    problem_of: Callable[[Path], str | None],
    remedy: str,
    repair: Callable[[Path, Any], tuple[str, bool, bool]],
) -> Iterator[DataFinding]:
    """Check each ``(path, expected sha256, item)`` of ``files`` not known to have passed
    with these bytes (``problem_of(path)`` is None when it passes). A failure is set aside,
    then ``repair(path, item)`` says what else it did, whether to stop checking ``files`` and
    whether what is left still blocks the run; a dry run only says that a real run would set
    it aside and ``remedy`` (or could not, and would stop)."""
    for path, expected, item in files:
        try:
            if checked.passed(path, expected):
                continue
            problem = problem_of(path)
        except FileNotFoundError:  # gone since it was listed: nothing can read it
            continue
        except OSError as error:
            yield _unreadable(root, path, error)
            continue
        if problem is None:
            checked.record(path, expected)
            continue
        rel = path.relative_to(root).as_posix()
        if dry_run:
            action = _dry_action(root, path, remedy)
            yield DataFinding(rel, problem, action)
            continue
        try:
            moved = _set_aside(path).relative_to(root).as_posix()
        except OSError as error:
            yield _stuck(root, path, problem, error)
            continue
        then, stop, blocking = repair(path, item)
        yield DataFinding(rel, problem, f"moved it to {moved}{then}", blocking)
        if stop:
            return


def _vouched(root: Path, path: Path, checked: _Checked) -> tuple[str | None, dict[str, Any], str]:
    """(problem, record, key) of a file the workflow made (:func:`sidecar_problem`), its
    bytes hashed unless they passed with this very sidecar before."""
    problem, record, key = sidecar_problem(path, path.relative_to(root).as_posix())
    if problem is None and not checked.passed(path, key):
        problem = bytes_problem(sha256_file(path), record["output"]["sha256"])
        if problem is None:
            checked.record(path, key)
    return problem, record, key


def _check_processed(root: Path, dry_run: bool, checked: _Checked) -> Iterator[DataFinding]:
    """Every processed array is vouched for by its own sidecar, as every result is: one
    without a sidecar, or whose sidecar describes another dataset's array, is set aside too."""
    arrays = sorted((root / "data" / "processed").glob("*.npz"))
    files = ((npz, None, None) for npz in arrays)  # _vouched keeps its own stamps
    problem_of = lambda path: _vouched(root, path, checked)[0]  # noqa: E731
    rebuilt = "; this run rebuilds it from the verified raw archives"
    repair = lambda *_: (rebuilt, False, False)  # noqa: E731
    yield from _screen(root, dry_run, checked, files, problem_of, "rebuilds it", repair)


def _manifest_files(manifest: Path) -> list[dict[str, Any]]:
    try:
        return read_manifest(manifest)
    except (OSError, DataError):  # the manifest's own check reports it (_manifest_problem)
        return []


def _manifest_problem(root: Path, manifest: Path, checked: _Checked) -> str | None:
    """A manifest its sidecar does not vouch for, or that does not say which archives the
    dataset has (even one sealed by a Run: its content is checked too)."""
    problem = _vouched(root, manifest, checked)[0]
    if problem is None:
        try:
            read_manifest(manifest)
        except DataError:
            problem = "is not a readable download manifest (a list of name, sha256, source)"
    return problem


def _raw_problem(root: Path, path: Path) -> str | None:
    from galu.workflow.audit import check_output

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


_REFETCHES = "fetches the dataset again (the archives already here are verified, not downloaded)"


def _check_raw(root: Path, dry_run: bool, checked: _Checked) -> Iterator[DataFinding]:
    def replace(manifest: Path, path: Path, entry: Mapping[str, Any]) -> tuple[str, bool, bool]:
        source = _restore(entry, path)
        if source is not None:
            return f" and restored it from {source} (sha256 verified)", False, False
        then, blocking = _refetch(root, manifest)
        return then, True, blocking  # the whole dataset is fetched again

    def refetch(manifest: Path, _: Any) -> tuple[str, bool, bool]:
        then, blocking = _refetch(root, manifest)
        return then, False, blocking

    problem_of = functools.partial(_raw_problem, root)
    for manifest in sorted((root / "data" / "raw").glob("*/sources.json")):
        # The manifest first: a truncated or swapped one cannot say which archives to check,
        # and the prepare job would refuse it; the download job writes it again.
        adopted = list(_adopt(root, dry_run, manifest))
        yield from adopted
        own = [] if adopted else [(manifest, None, None)]
        manifest_problem = functools.partial(_manifest_problem, root, checked=checked)
        found = list(_screen(root, dry_run, checked, own, manifest_problem, _REFETCHES, refetch))
        yield from found
        if found:
            continue
        listed = _manifest_files(manifest)  # read once: its archives are unshared, then checked
        yield from _unshare(root, dry_run, manifest, listed)
        entries = ((manifest.parent / str(e["name"]), e) for e in listed)
        files = ((path, e.get("sha256"), e) for path, e in entries if path.is_file())
        repair = functools.partial(replace, manifest)
        yield from _screen(root, dry_run, checked, files, problem_of, "replaces it", repair)


RESULT_FOLDERS = ("results", "figures")


def _result_files(root: Path) -> Iterator[Path]:
    """Outputs under results/ and figures/ (not sidecars, temporaries or set-aside files)."""
    from galu.workflow.audit import is_output

    for folder in RESULT_FOLDERS:
        base = root / folder
        if base.is_dir():
            for path in sorted(base.rglob("*")):
                if path.is_file() and is_output(path):
                    yield path


def _stale_input(
    root: Path, path: Path, record: Mapping[str, Any], current: Mapping[str, str]
) -> str | None:
    """A result ``path`` was made from whose verified bytes are not those it recorded, and
    that Snakemake would not rerun it for (an input newer than ``path`` already makes it
    rerun: that is the ordinary course of an incremental run, not a problem)."""
    for item in record.get("inputs", []):  # well formed: checked by shape_problem
        source = item["path"]
        if source not in current or current[source] == item["sha256"]:
            continue
        if (root / source).stat().st_mtime_ns <= path.stat().st_mtime_ns:
            return (
                f"was made from {source}, whose bytes have changed since (now"
                f" {current[source][:12]}…, then {item['sha256'][:12]}…)"
            )
    return None


def _check_results(root: Path, dry_run: bool, checked: _Checked) -> Iterator[DataFinding]:
    """Every intermediate result against its sidecar, as the audit checks it; a failure is
    set aside (with its sidecar) so that its job remakes it before anything reads it."""
    current: dict[str, str] = {}
    sound: dict[Path, dict[str, Any]] = {}
    failed: list[tuple[Path, str]] = []
    unreadable: list[DataFinding] = []
    for path in _result_files(root):
        try:
            problem, record, key = _vouched(root, path, checked)
        except FileNotFoundError:  # gone since it was listed: nothing can read it
            continue
        except OSError as error:
            unreadable.append(_unreadable(root, path, error))
            continue
        if problem is None:
            current[path.relative_to(root).as_posix()] = record["output"]["sha256"]
            sound[path] = record
        else:
            failed.append((path, problem))
    yield from unreadable
    failed += [(p, why) for p, r in sound.items() if (why := _stale_input(root, p, r, current))]
    for path, problem in failed:
        rel = path.relative_to(root).as_posix()
        if dry_run:
            action = _dry_action(root, path, "remakes it")
            yield DataFinding(rel, problem, action)
            continue
        try:
            moved = _set_aside(path).relative_to(root).as_posix()
        except FileNotFoundError:  # gone since it was checked: nothing can read it
            continue
        except OSError as error:
            yield _stuck(root, path, problem, error)
            continue
        action = f"moved it and its sidecar to {moved}; this run remakes it"
        side = sidecar_path(path)
        try:
            if side.exists():
                _set_aside(side)
        except OSError as error:  # the output is out of the way: its job remakes both
            action = (
                f"moved it to {moved} (its sidecar could not be moved:"
                f" {error.strerror or error}); this run remakes it"
            )
        yield DataFinding(rel, problem, action)


def _check_temporaries(root: Path, dry_run: bool) -> Iterator[DataFinding]:
    """Hidden ``.<name>.<random>.tmp`` files: what a job killed in the middle of an atomic
    write leaves behind (never an output: only a rename gives a file its final name)."""
    for folder in ("results", "figures", "data"):
        base = root / folder
        if not base.is_dir():
            continue
        for tmp in sorted(base.rglob(".*.tmp")):
            if tmp.is_file():
                rel = tmp.relative_to(root).as_posix()
                action = "a real run deletes it" if dry_run else "deleted it"
                if not dry_run:
                    try:
                        tmp.unlink(missing_ok=True)
                    except OSError as error:  # never read as an output: harmless, said
                        action = f"could not delete it ({error.strerror or error})"
                yield DataFinding(rel, "left by a job killed while writing", action)


def preflight(root: str | Path = ".", dry_run: bool = False) -> list[DataFinding]:
    """Find (and unless ``dry_run`` set aside) raw archives, processed arrays and results
    that fail, and delete the temporary files of killed jobs. A finding that is ``blocking``
    names a file that fails (or could not be checked) and is still in place: the caller
    must start no job (:func:`blocked`).

    Nothing is touched while a Snakemake lock is held in ``root``: another run may be
    writing these files right now (its own pre-flight has checked them).
    """
    root = Path(root)
    if lock_held(root):
        return []
    checked = _Checked(root)
    findings: list[DataFinding] = []
    try:
        for check in (
            _check_temporaries(root, dry_run),
            _check_raw(root, dry_run, checked),
            _check_processed(root, dry_run, checked),
            _check_results(root, dry_run, checked),
        ):
            findings.extend(check)
    except OSError as error:  # a folder it could not list: what is in it went unchecked
        problem = f"the pre-flight could not finish ({error.strerror or error})"
        action = (
            "nothing started, so that no job reads a file it did not check: make it readable"
            " (or move it out of the tree), then run again"
        )
        where = _rel(root, Path(error.filename)) if error.filename else "data"
        findings.append(DataFinding(where, problem, action, blocking=True))
    checked.save()
    if checked.unsaved is not None and not dry_run:
        error = checked.unsaved
        problem = f"could not record which files passed ({error.strerror or error})"
        then = "the next run hashes them again"
        findings.append(DataFinding(CHECKED_CACHE.as_posix(), problem, then))
    return findings


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
