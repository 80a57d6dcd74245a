"""Checks made before any job runs: contradictory settings, and data files that lost integrity.

Two halves, both called by ``workflow/rules/common.smk`` in Snakemake's main process only:

- :func:`consistency_problems` finds settings the JSON schema accepts one by one but that
  contradict each other or the machine: a mirror that is a file or an unknown kind of URL, a
  substitute whose file does not belong to its dataset, soft-committee starts whose shapes do
  not agree (or that no student can have), a ``<name>_min`` above its ``<name>_max``, a
  grid in which no point qualifies, parity subsets larger than the input, GPU requests
  together with ``device: cpu``.
- :func:`preflight` re-hashes the dataset files the workflow reads: every processed array
  ``data/processed/<dataset>.npz`` against its provenance sidecar, and every raw archive a
  download manifest (``data/raw/<dataset>/sources.json``) lists against the published
  checksums. A file that fails is never used: it is renamed to ``<name>.rejected`` (the
  bytes are kept for inspection; the audit ignores that suffix), so the job that makes it
  runs again. A raw archive is put back at once from the place its manifest says it came
  from when that copy still has the recorded sha256; otherwise the manifest and the array
  made from the archive are set aside too, and the download job fetches the archive again
  from a source it can verify. It checks every intermediate result the same way (every
  file under ``results/`` and ``figures/`` against its sidecar: bytes, seal, and the bytes
  of the results it was made from), so that nothing reads a result the audit would reject:
  one that fails is set aside with its sidecar and its job runs again. It also deletes the
  hidden temporary files that jobs killed in the middle of an atomic write leave behind.
  Nothing is touched while a Snakemake lock is held (another run may be writing), and a dry
  run only reports.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from galu.atomic import atomic_path, atomic_write_bytes
from galu.provenance import (
    SIDECAR_SUFFIX,
    recorded_sha256,
    seal_problem,
    sha256_file,
    sidecar_mismatch,
    sidecar_path,
)

REJECTED_SUFFIX = ".rejected"
# Settings of the soft committee machine stage that carry a start (R0, Q0).
_START_KEYS = ("R0", "Q0")
_LOG = Path("logs/integrity.log")
# Stat fingerprints of dataset files that passed (see _Checked); Snakemake's own folder.
CHECKED_CACHE = Path(".snakemake/galu/checked.json")

# -- contradictory settings -------------------------------------------------------------------


def _mirror_problem(where: str, mirror: str) -> str | None:
    """Why one mirror entry is neither a folder nor an https (or file://) URL, else None."""
    scheme = urlsplit(mirror).scheme if "://" in mirror else ""
    fix = "name a folder that holds the dataset files (or their sub-folders) or an https:// URL"
    if scheme == "http":
        return f"{where}: {mirror!r} uses plain http, which is refused; use its https:// URL"
    if scheme and scheme not in ("https", "file"):
        return f"{where}: {mirror!r} is neither a folder nor an https URL ({scheme}://); {fix}"
    if scheme == "https":
        return None
    from galu.data.mirrors import local_folder

    folder = local_folder(mirror)
    if folder.exists() and not folder.is_dir():
        return f"{where}: {mirror!r} is a file, not a folder; {fix}"
    return None  # a folder that does not exist (yet) is reported by the download step


def _mirror_problems(config: Mapping[str, Any], environ: Mapping[str, str]) -> Iterator[str]:
    from galu.data.mirrors import ENV_VAR, split_mirror_list

    for i, mirror in enumerate((config.get("data") or {}).get("mirrors") or []):
        problem = _mirror_problem(f"data.mirrors[{i}]", str(mirror))
        if problem:
            yield problem
    for mirror in split_mirror_list(environ.get(ENV_VAR, "")):
        problem = _mirror_problem(f"environment variable {ENV_VAR}", mirror)
        if problem:
            yield problem


def _data_problems(config: Mapping[str, Any]) -> Iterator[str]:
    """What the data stage itself would refuse later (e.g. a substitute's file/dataset pair)."""
    from galu.data.settings import DataSettings

    try:
        DataSettings.from_config(config.get("data"))
    except (ValueError, RuntimeError) as error:  # galu.data's errors are RuntimeErrors
        yield str(error)


def _start_problem(name: str, setting: Mapping[str, Any], sim_n: int | None) -> str | None:
    import numpy as np

    R0, Q0 = setting.get("R0"), setting.get("Q0")
    where = f"scm.{name}"
    if len({len(row) for row in R0}) != 1:
        return f"{where}.R0: rows of different lengths {R0!r}; R0 is K rows of M numbers"
    K, M = len(R0), len(R0[0])
    if len(Q0) != K or any(len(r) != K for r in Q0):
        widths = sorted({len(r) for r in Q0})
        shape = f"{len(Q0)} x {widths[0]}" if len(widths) == 1 else f"rows of lengths {widths}"
        return (
            f"{where}: R0 is {K} x {M} (K = {K} student units, M = {M} teacher units) but Q0 "
            f"is {shape}; Q0 must be {K} x {K} (one row and column per student unit)"
        )
    r0, q0 = np.asarray(R0, dtype=float), np.asarray(Q0, dtype=float)
    if not np.allclose(q0, q0.T):
        return f"{where}.Q0: {Q0!r} is not symmetric; Q_ik = J_i . J_k / N is a Gram matrix"
    smallest = float(np.linalg.eigvalsh(q0 - r0 @ r0.T).min())
    if smallest < -1e-12:
        return (
            f"{where}: no student has these overlaps (Q0 - R0 R0^T has eigenvalue "
            f"{smallest:.3g} < 0); make the diagonal of Q0 larger or R0 smaller"
        )
    if sim_n is not None and setting.get("sim_etas") and sim_n < K + M:
        return (
            f"{where}: simulations need scm.simulation.N >= K + M = {K + M}, got N = {sim_n}; "
            "raise N or set sim_etas: []"
        )
    return None


def _scm_problems(config: Mapping[str, Any]) -> Iterator[str]:
    scm = config.get("scm") or {}
    sim_n = (scm.get("simulation") or {}).get("N")
    for name, setting in scm.items():
        if isinstance(setting, Mapping) and all(k in setting for k in _START_KEYS):
            problem = _start_problem(name, setting, sim_n)
            if problem:
                yield problem


def _range_problems(node: Any, path: str = "") -> Iterator[str]:
    """Every ``<name>_min`` larger than the ``<name>_max`` beside it (any stage, any depth)."""
    if not isinstance(node, Mapping):
        return
    for key, lo in node.items():
        here = f"{path}.{key}".lstrip(".")
        if isinstance(lo, Mapping):
            yield from _range_problems(lo, here)
        elif isinstance(key, str) and key.endswith("_min"):
            name = key.removesuffix("_min")
            hi = node.get(f"{name}_max")
            numbers = all(isinstance(v, int | float) and not isinstance(v, bool) for v in (lo, hi))
            if numbers and lo > hi:
                where = f"{path}: " if path else ""
                yield (
                    f"{where}{key} = {lo} is larger than {name}_max = {hi}; swap them "
                    f"({name} runs from {key} up to {name}_max)"
                )


def _memorization_problems(config: Mapping[str, Any]) -> Iterator[str]:
    grid = ((config.get("memorization") or {}).get("underparam")) or {}
    ms, ds, ks = (grid.get(key) or [] for key in ("ms", "ds", "ks"))
    if ms and ds and ks and not any(k * d <= m for m in ms for d in ds for k in ks):
        yield (
            f"memorization.underparam: no point has k * d <= m (ms {ms}, ds {ds}, ks {ks}), so "
            "every point would be skipped; add smaller ks or ds, or larger ms"
        )


def _generalization_problems(config: Mapping[str, Any]) -> Iterator[str]:
    parity = (config.get("generalization") or {}).get("parity") or {}
    dim = parity.get("dim")
    too_big = [s for s in parity.get("subset_sizes") or [] if dim is not None and s > dim]
    if too_big:
        yield (
            f"generalization.parity.subset_sizes: {too_big} exceed(s) dim = {dim}; a parity of "
            f"s bits needs s <= dim: drop those sizes or raise generalization.parity.dim"
        )


def _gpu_requests(node: Any, path: str = "") -> Iterator[tuple[str, Any]]:
    """Every ``gpu`` / ``gpus`` setting of the config (any stage, any depth) and its value."""
    if isinstance(node, Mapping):
        for key, value in node.items():
            here = f"{path}.{key}".lstrip(".")
            if key in ("gpu", "gpus") and not isinstance(value, Mapping):
                yield here, value
            else:
                yield from _gpu_requests(value, here)


def _gpu_problems(config: Mapping[str, Any]) -> Iterator[str]:
    if config.get("device") != "cpu":
        return
    for key, value in _gpu_requests(config):
        if value:
            off = "0" if key.endswith("gpus") else "false"
            yield (
                f"{key}: {value!r} asks the scheduler for a GPU, but device: 'cpu' never uses "
                f"one; set {key}: {off}, or device: auto"
            )


def consistency_problems(
    config: Mapping[str, Any], environ: Mapping[str, str] | None = None
) -> list[str]:
    """Every contradiction in a schema-valid ``config``, one line each naming key and fix."""
    environ = os.environ if environ is None else environ
    found = [
        *_mirror_problems(config, environ),
        *_data_problems(config),
        *_scm_problems(config),
        *_range_problems(config),
        *_memorization_problems(config),
        *_generalization_problems(config),
        *_gpu_problems(config),
    ]
    return list(dict.fromkeys(found))


def check_consistency(config: Mapping[str, Any], environ: Mapping[str, str] | None = None) -> None:
    """Raise :class:`galu.config.ConfigError` listing every contradiction in ``config``."""
    from galu.config import SCHEMA_PATH, ConfigError

    problems = consistency_problems(config, environ)
    if problems:
        lines = "\n".join(f"  - {p}" for p in problems)
        raise ConfigError(
            f"contradictory configuration ({len(problems)} problem(s)):\n{lines}\n"
            "Fix the key(s) in config/config.yaml, config/local.yaml or your "
            f"--configfile/--config overrides; {SCHEMA_PATH} documents every key."
        )


# -- data files that lost integrity ------------------------------------------------------------


@dataclass(frozen=True)
class Finding:
    """A dataset file that failed its check, and what the pre-flight did about it."""

    path: str
    problem: str
    action: str

    def __str__(self) -> str:
        return f"{self.path}: {self.problem}; {self.action}"


def lock_held(root: Path) -> bool:
    """Whether a Snakemake run holds (or a killed one left) a lock in ``root``."""
    locks = root / ".snakemake" / "locks"
    return locks.is_dir() and any(locks.glob("*.lock"))


def _set_aside(path: Path) -> Path:
    target = path.with_name(path.name + REJECTED_SUFFIX)
    os.replace(path, target)
    return target


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
            self.entries: dict[str, list] = json.loads(self.path.read_text())
        except (OSError, ValueError):
            self.entries = {}
        self.changed = False

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
        if self.changed:
            data = json.dumps(self.entries, indent=1, sort_keys=True).encode()
            atomic_write_bytes(self.path, data)


def _check_processed(root: Path, dry_run: bool, checked: _Checked) -> Iterator[Finding]:
    for npz in sorted((root / "data" / "processed").glob("*.npz")):
        recorded = recorded_sha256(npz)
        if checked.passed(npz, recorded):
            continue
        problem = sidecar_mismatch(npz)
        if problem is None:
            checked.record(npz, recorded)
            continue
        rel = npz.relative_to(root).as_posix()
        if dry_run:
            action = f"a real run moves it to {rel}{REJECTED_SUFFIX} and rebuilds it"
        else:
            action = (
                f"moved it to {_set_aside(npz).relative_to(root).as_posix()}; "
                "this run rebuilds it from the verified raw archives"
            )
        yield Finding(rel, problem, action)


def _manifest_files(manifest: Path) -> list[dict[str, Any]]:
    try:
        files = json.loads(manifest.read_text())["files"]
        return [f for f in files if isinstance(f, dict) and "name" in f]
    except (OSError, ValueError, KeyError, TypeError):
        return []


def _raw_problem(root: Path, path: Path) -> str | None:
    from galu.audit import check_output

    problems = list(check_output(root, path))
    return "; ".join(problems) if problems else None


def _restore(entry: Mapping[str, Any], dest: Path) -> str | None:
    """Copy the archive back from where the manifest says it came, if those bytes still match.

    Returns the source used, or None when there is no such verifiable local copy.
    """
    source = str(entry.get("source") or "")
    if source.startswith("substitute "):
        source = source.removeprefix("substitute ")
    src = Path(source)
    if not source or "://" in source or not src.is_absolute() or not src.is_file():
        return None
    if sha256_file(src) != entry.get("sha256"):
        return None
    with atomic_path(dest) as tmp:
        shutil.copyfile(src, tmp)
    if sha256_file(dest) != entry.get("sha256"):  # pragma: no cover - the copy itself failed
        _set_aside(dest)
        return None
    return source


def _refetch(root: Path, manifest: Path) -> str:
    """Make Snakemake run the download again: set aside the manifest (the download job's
    output) and the processed array made from these archives (else Snakemake, finding the
    array up to date, would never ask for the missing archive)."""
    processed = root / "data" / "processed" / f"{manifest.parent.name}.npz"
    moved = [
        _set_aside(path).relative_to(root).as_posix()
        for path in (manifest, Path(f"{manifest}{SIDECAR_SUFFIX}"), processed)
        if path.exists()
    ]
    return (
        f"set aside {', '.join(moved)}; this run fetches the archive again from a source that "
        "passes verification and rebuilds what was made from it"
    )


def _check_raw(root: Path, dry_run: bool, checked: _Checked) -> Iterator[Finding]:
    for manifest in sorted((root / "data" / "raw").glob("*/sources.json")):
        for entry in _manifest_files(manifest):
            path = manifest.parent / str(entry["name"])
            expected = entry.get("sha256")
            if not path.is_file() or checked.passed(path, expected):
                continue
            problem = _raw_problem(root, path)
            if problem is None:
                checked.record(path, expected)
                continue
            rel = path.relative_to(root).as_posix()
            if dry_run:
                action = f"a real run moves it to {rel}{REJECTED_SUFFIX} and replaces it"
                yield Finding(rel, problem, action)
                continue
            moved = _set_aside(path).relative_to(root).as_posix()
            source = _restore(entry, path)
            if source is not None:
                action = f"moved it to {moved} and restored it from {source} (sha256 verified)"
            else:
                action = f"moved it to {moved}; " + _refetch(root, manifest)
            yield Finding(rel, problem, action)
            if source is None:
                break  # the whole dataset is fetched again


RESULT_FOLDERS = ("results", "figures")


def _result_files(root: Path) -> Iterator[Path]:
    """Outputs under results/ and figures/ (not sidecars, temporaries or set-aside files)."""
    from galu.audit import is_output

    for folder in RESULT_FOLDERS:
        base = root / folder
        if base.is_dir():
            for path in sorted(base.rglob("*")):
                if path.is_file() and is_output(path):
                    yield path


def _sidecar_problem(root: Path, path: Path) -> tuple[str | None, dict[str, Any], str]:
    """(problem, record, key) of ``path``'s sidecar: the problem is None when it is readable,
    well formed and sealed; the key changes whenever the sidecar's bytes do."""
    side = sidecar_path(path)
    if not side.is_file():
        return "has no provenance sidecar (its job was killed, or it was made by hand)", {}, ""
    from galu.audit import described_elsewhere, shape_problem

    data = side.read_bytes()  # read once: parsed, sealed and keyed from the same bytes
    try:
        record = json.loads(data)
    except (ValueError, UnicodeDecodeError) as error:
        return f"its sidecar is unreadable or malformed ({error})", {}, ""
    malformed = shape_problem(record)
    if malformed:
        return f"its sidecar is unreadable or malformed (it {malformed})", {}, ""
    recorded = record["output"]["sha256"]
    elsewhere = described_elsewhere(root, path, record)
    if elsewhere:
        return elsewhere, {}, ""
    sealed = seal_problem(data)
    if sealed:
        return f"its sidecar {sealed}", {}, ""
    return None, record, f"{recorded}:{hashlib.sha256(data).hexdigest()}"


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


def _check_results(root: Path, dry_run: bool, checked: _Checked) -> Iterator[Finding]:
    """Every intermediate result against its sidecar, as the audit checks it; a failure is
    set aside (with its sidecar) so that its job remakes it before anything reads it."""
    current: dict[str, str] = {}
    sound: dict[Path, dict[str, Any]] = {}
    failed: list[tuple[Path, str]] = []
    for path in _result_files(root):
        problem, record, key = _sidecar_problem(root, path)
        if problem is None and not checked.passed(path, key):
            actual, recorded = sha256_file(path), record["output"]["sha256"]
            if actual == recorded:
                checked.record(path, key)
            else:
                problem = (
                    f"changed after it was written (sha256 {actual[:12]}…,"
                    f" recorded {recorded[:12]}…)"
                )
        if problem is None:
            current[path.relative_to(root).as_posix()] = record["output"]["sha256"]
            sound[path] = record
        else:
            failed.append((path, problem))
    failed += [(p, why) for p, r in sound.items() if (why := _stale_input(root, p, r, current))]
    for path, problem in failed:
        rel = path.relative_to(root).as_posix()
        if dry_run:
            action = f"a real run moves it to {rel}{REJECTED_SUFFIX} and remakes it"
        else:
            for item in (path, sidecar_path(path)):
                if item.exists():
                    _set_aside(item)
            action = f"moved it and its sidecar to {rel}{REJECTED_SUFFIX}; this run remakes it"
        yield Finding(rel, problem, action)


def _check_temporaries(root: Path, dry_run: bool) -> Iterator[Finding]:
    """Hidden ``.<name>.<random>.tmp`` files: what a job killed in the middle of an atomic
    write leaves behind (never an output: only a rename gives a file its final name)."""
    for folder in ("results", "figures", "data"):
        base = root / folder
        if not base.is_dir():
            continue
        for tmp in sorted(base.rglob(".*.tmp")):
            if tmp.is_file():
                rel = tmp.relative_to(root).as_posix()
                if not dry_run:
                    tmp.unlink(missing_ok=True)
                action = "a real run deletes it" if dry_run else "deleted it"
                yield Finding(rel, "left by a job killed while writing", action)


def preflight(root: str | Path = ".", dry_run: bool = False) -> list[Finding]:
    """Find (and unless ``dry_run`` set aside) raw archives and processed arrays that fail,
    and delete the temporary files of killed jobs.

    Nothing is touched while a Snakemake lock is held in ``root``: another run may be
    writing these files right now (its own pre-flight has checked them).
    """
    root = Path(root)
    if lock_held(root):
        return []
    checked = _Checked(root)
    findings: list[Finding] = []
    try:
        for check in (
            _check_temporaries(root, dry_run),
            _check_raw(root, dry_run, checked),
            _check_processed(root, dry_run, checked),
            _check_results(root, dry_run, checked),
        ):
            findings.extend(check)
        checked.save()
    except OSError as error:  # e.g. a read-only data folder, or a file another run moved
        problem = f"the data pre-flight could not finish ({error})"
        findings.append(Finding(str(error.filename or "data"), problem, "jobs verify on use"))
    return findings


def announce(
    findings: Iterable[Finding], emit: Callable[[str], None], root: Path, record: bool = True
) -> None:
    """Send each finding to ``emit`` and, when ``record``, append it to ``logs/integrity.log``
    under ``root`` (a dry run passes ``record=False``: it writes nothing)."""
    lines = [f"galu: {finding}" for finding in findings]
    for line in lines:
        emit(line)
    if lines and record:
        import datetime as _dt

        log = root / _LOG
        log.parent.mkdir(parents=True, exist_ok=True)
        stamp = _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds")
        with open(log, "a", encoding="utf-8") as handle:
            handle.writelines(f"{stamp} {line}\n" for line in lines)
