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
The workflow calls it (:func:`galu.workflow.running.run_hooks.check_at_parse`) in Snakemake's main
process only; the configuration's
own contradictions are :mod:`galu.workflow.settings.consistency`'s.

This module checks the files and says what fails; the findings, setting a file aside and the
integrity log are :mod:`galu.workflow.running.preflight_findings`'s, and restoring or fetching again
a raw archive that fails is :mod:`galu.workflow.running.preflight_repair`'s.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable, Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

from galu.atomic import atomic_write_bytes
from galu.workflow.data.errors import DataError
from galu.workflow.data.fetch import read_manifest
from galu.workflow.provenance import sha256_file, sidecar_path
from galu.workflow.running.preflight_findings import (
    DataFinding,
    _dry_action,
    _rel,
    _set_aside,
    _stuck,
    _unreadable,
)
from galu.workflow.running.preflight_repair import (
    _adopt,
    _raw_problem,
    _refetch,
    _restore,
    _unshare,
)
from galu.workflow.vouch import bytes_problem, sidecar_problem

# Stat fingerprints of dataset files that passed (see _Checked); Snakemake's own folder.
CHECKED_CACHE = Path(".snakemake/galu/checked.json")


def lock_held(root: Path) -> bool:
    """Whether a Snakemake run holds (or a killed one left) a lock in ``root``."""
    locks = root / ".snakemake" / "locks"
    return locks.is_dir() and any(locks.glob("*.lock"))


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
    from galu.workflow.trust.audit import is_output

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


# What happens to a result set aside: its job runs again in a run that needs it (a run given
# other targets leaves it for the next one).
REMAKES = "its job remakes it in this run, or in the next one that needs it"


def _check_results(
    root: Path, dry_run: bool, checked: _Checked, made: Callable[[str], bool] | None = None
) -> Iterator[DataFinding]:
    """Every intermediate result against its sidecar, as the audit checks it; a failure is
    set aside (with its sidecar) so that its job remakes it before anything reads it. Only a
    file some rule makes (``made``; None: every file) is judged: a note of the user's in
    ``results/`` is left alone."""
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
        if made is not None and not made(rel):
            continue  # no rule makes it: not the workflow's to set aside
        if dry_run:
            action = _dry_action(root, path, "its job remakes it")
            yield DataFinding(rel, problem, action)
            continue
        try:
            moved = _set_aside(path).relative_to(root).as_posix()
        except FileNotFoundError:  # gone since it was checked: nothing can read it
            continue
        except OSError as error:
            yield _stuck(root, path, problem, error)
            continue
        action = f"moved it and its sidecar to {moved}; {REMAKES}"
        side = sidecar_path(path)
        try:
            if side.exists():
                _set_aside(side)
        except OSError as error:  # the output is out of the way: its job remakes both
            action = (
                f"moved it to {moved} (its sidecar could not be moved:"
                f" {error.strerror or error}); {REMAKES}"
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


def preflight(
    root: str | Path = ".", dry_run: bool = False, made: Callable[[str], bool] | None = None
) -> list[DataFinding]:
    """Find (and unless ``dry_run`` set aside) raw archives, processed arrays and results
    that fail, and delete the temporary files of killed jobs. ``made``: whether some rule
    makes a result (a path relative to ``root``); a result no rule makes is left alone. A
    finding that is ``blocking`` names a file that fails (or could not be checked) and is
    still in place: the caller must start no job (:func:`blocked`).

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
            _check_results(root, dry_run, checked, made),
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
