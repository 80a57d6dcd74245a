"""Publish a run's result tables with the code: ``published/<scale>/``.

A run of a scale other than quick (e.g. ``config/paper-cpu.yaml``) takes hours; its outcome
is worth keeping in the repository, where ``galu audit`` verifies it and the README's second
generated section, "What reproduces at the paper level", quotes it. :func:`publish` copies
every result file of the run (``results/<scale>/``: the verdict, the contract tables and the
per-job tables they are stacked from, all small) and every figure (``figures/<scale>/``: PNG,
0.1 to 0.3 MB, and PDF; files over :data:`MAX_BYTES` are left out and listed) with its
provenance sidecar unchanged, to the same contract paths under ``published/<scale>/``, and
writes ``publication.json``: the scale, the commits its files were made on and whether any of
them or the checkout had uncommitted changes (:func:`_made_on`), the machine, its
configuration, its wall time and job time (from the sidecars), and the files.
``run-state.json`` keeps what continuing the run elsewhere needs (:mod:`galu.workflow.resume`).
``claims.html`` is the run's verdict page with its figure links pointing into the
publication (the run's own ``results/claims.html`` links the run's figure folder), made from
the published landing page and figures (:func:`view_page`).
A published file's sidecar still describes the run's path (``results/<scale>/...``):
:func:`described_path` is how the audit tells a published copy from a file passed off as
another.

A publication is replaced whole: the new one is built and verified in a sibling folder
(``published/.<scale>.publishing``), the old one renamed aside (``.<scale>.replaced``), the
new one renamed into place and the old one deleted, so a crash, a kill or a full disk at any
point leaves the previous publication or the new one, never a mix or half of one; the next
``galu publish`` cleans up what an interrupted one left (:func:`recover_interrupted`), and
``galu audit`` names it meanwhile (:func:`leftover_of`).
"""

from __future__ import annotations

import base64
import contextlib
import errno
import fcntl
import json
import os
import platform
import re
import shutil
from collections.abc import Iterable, Iterator, Mapping
from datetime import datetime
from pathlib import Path, PurePosixPath
from typing import Any

from galu.atomic import atomic_write_bytes
from galu.checkpoints import FOLDER as CHECKPOINTS
from galu.workflow.commits import made_on, made_on_files
from galu.workflow.compare import read_run
from galu.workflow.costs import CONSTANTS
from galu.workflow.jobs import EXPERIMENT_STAGES, STAGE_ORDER, stage_of
from galu.workflow.plan import PAPER_CONFIGFILES, paper_gpu_text
from galu.workflow.provenance import (
    PUBLISHED,
    SIDECAR_SUFFIX,
    Run,
    git_state,
    sealed_sidecar,
    sidecar_mismatch,
    sidecar_path,
)
from galu.workflow.scale_table import beside_quick_lines, scale_notes
from galu.workflow.scales import QUICK, OutputRoot, scaled, unscaled
from galu.workflow.sidecar_shape import shape_problem
from galu.workflow.snakemake_metadata import read_metadata

MANIFEST = "publication.json"
# What continuing the run elsewhere needs besides its files (galu.workflow.resume).
STATE = "run-state.json"
# A published table lives in git: keep the repository small.
MAX_BYTES = 5_000_000
# Not published: the report archive (megabytes: the figures again, Snakemake's HTML), which
# the next run rebuilds from the tables and figures in a minute.
NOT_PUBLISHED = ("results/report.zip",)
# The run's folders a publication copies (scaled: results/<scale>/, figures/<scale>/).
RUN_FOLDERS = ("results", "figures")
# The publication's verdict page, figures linked inside the publication (view_page).
VIEW = "claims.html"
# Always published: the verdict (contract paths).
VERDICT = ("results/claims.csv", "results/claims.md", "results/claims_summary.json")


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


def _sidecars(folder: Path) -> Iterable[dict[str, Any]]:
    for side in sorted(folder.rglob(f"*{SIDECAR_SUFFIX}")):
        try:
            record = json.loads(side.read_text())
        except (OSError, ValueError):
            continue
        if isinstance(record, dict):
            yield record


def _time(text: Any) -> datetime | None:
    try:
        return datetime.fromisoformat(str(text))
    except ValueError:
        return None


def run_times(records: Iterable[Mapping[str, Any]]) -> dict[str, Any]:
    """How long the run took, from its outputs' sidecars (a job with several outputs counted
    once):

    - ``wall_hours``: from the first job's start to the last job's end, pauses between an
      interrupted run and its continuation included;
    - ``running_hours``: the time during which some job was running (the pauses left out);
    - ``job_hours``: the sum of the jobs' own times;
    - ``stage_hours``: per stage, the time during which one of its jobs was running (stages
      that ran at once shared the machine, so these can add up to more than
      ``running_hours``).
    """
    jobs: dict[tuple[str, str, str], tuple[datetime, datetime]] = {}
    for record in records:
        start, end = _time(record.get("started")), _time(record.get("finished"))
        if start is None or end is None:
            continue
        key = (str(record.get("rule")), json.dumps(record.get("wildcards")), str(start))
        previous = jobs.get(key, (start, end))
        jobs[key] = (start, max(end, previous[1]))
    if not jobs:
        return {"wall_hours": 0.0, "running_hours": 0.0, "job_hours": 0.0, "stage_hours": {}}
    first = min(s for s, _ in jobs.values())
    last = max(e for _, e in jobs.values())
    busy = sum((e - s).total_seconds() for s, e in jobs.values())
    by_stage: dict[str, list[tuple[datetime, datetime]]] = {}
    for (rule, _, _), interval in jobs.items():
        by_stage.setdefault(stage_of(rule), []).append(interval)
    return {
        "wall_hours": (last - first).total_seconds() / 3600,
        "running_hours": _covered_seconds(jobs.values()) / 3600,
        "job_hours": busy / 3600,
        "stage_hours": {
            stage: _covered_seconds(by_stage[stage]) / 3600
            for stage in STAGE_ORDER
            if stage in by_stage
        },
    }


def _rounded(times: Mapping[str, Any]) -> dict[str, Any]:
    """:func:`run_times` to the hundredth of an hour (36 s: finer is noise)."""
    return {
        k: {s: round(h, 2) for s, h in v.items()} if isinstance(v, dict) else round(v, 2)
        for k, v in times.items()
    }


def _covered_seconds(intervals: Iterable[tuple[datetime, datetime]]) -> float:
    """Seconds covered by the union of ``(start, end)`` intervals."""
    total, reach = 0.0, None
    for start, end in sorted(intervals):
        if reach is None or start > reach:
            total += (end - start).total_seconds()
            reach = end
        elif end > reach:
            total += (end - reach).total_seconds()
            reach = end
    return total


def this_machine() -> str:
    """A one-line description of the machine: CPU model and core count, or the GPU."""
    model = platform.processor() or platform.machine()
    cpuinfo = Path("/proc/cpuinfo")
    if cpuinfo.is_file():
        for line in cpuinfo.read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    return f"{model}, {os.cpu_count()} cores ({platform.system()})"


def run_files(scale: str) -> list[str]:
    """Every result file and figure of the run of ``scale`` in the current checkout, as
    contract paths: the verdict first, then the rest in path order (sidecars, temporaries and
    the report excluded)."""
    found = [
        unscaled(p.as_posix(), scale)
        for base in (Path(scaled(folder, scale)) for folder in RUN_FOLDERS)
        for p in sorted(base.rglob("*"))
        if p.is_file() and not p.name.endswith(SIDECAR_SUFFIX) and not p.name.startswith(".")
    ]
    found = [c for c in found if c not in NOT_PUBLISHED]
    return list(dict.fromkeys([*(v for v in VERDICT if v in found), *found]))


def run_state(scale: str, contracts: Iterable[str]) -> dict[str, Any]:
    """What a publication keeps besides the tables: Snakemake's metadata of each published
    file and of its sidecar (keyed by the run's path), every benchmark table of the run
    (``logs/<scale>/benchmarks``; path -> text) and the checkpoints of its unfinished jobs
    (:func:`kept_checkpoints`; only when there are any)."""
    paths = [scaled(c, scale) for c in contracts]
    targets = [p for path in paths for p in (path, f"{path}{SIDECAR_SUFFIX}")]
    benchmarks = Path(scaled("logs/benchmarks", scale))
    tables = sorted(benchmarks.rglob("*.tsv")) if benchmarks.is_dir() else []
    kept = kept_checkpoints(scale)
    return {
        "snakemake_metadata": read_metadata(targets),
        "benchmarks": {p.as_posix(): p.read_text() for p in tables},
        **({"checkpoints": kept} if kept else {}),
    }


def kept_checkpoints(scale: str) -> dict[str, str]:
    """The saved states of the run's unfinished long jobs (:mod:`galu.checkpoints`), base64
    by path: a run kept between sittings goes on from them on the next machine."""
    base = CHECKPOINTS / scaled("results", scale)
    files = sorted(base.rglob("*.pt")) if base.is_dir() else []
    return {p.as_posix(): base64.b64encode(p.read_bytes()).decode("ascii") for p in files}


def is_figure(path: str) -> bool:
    """Whether a publication's file (a contract path) is a figure (a PNG or PDF drawing)
    rather than a table."""
    return PurePosixPath(path).parts[0] == RUN_FOLDERS[1]


def counted(files: Iterable[str]) -> str:
    """``N table(s) and M figure(s)``: a figure is one drawing, published as a PNG and a PDF."""
    files = list(files)
    figures = {PurePosixPath(f).with_suffix("") for f in files if is_figure(f)}
    tables = sum(1 for f in files if not is_figure(f))
    return f"{tables} table(s) and {len(figures)} figure(s)"


def unfinished_stages(files: Iterable[str], stages: Iterable[str] | None) -> dict[str, int]:
    """Stage -> how many of ``files`` (contract paths) are tables of a stage the run's claims
    did not cover: finished jobs of a stage still running, kept so that a resume need not
    redo them."""
    covered = set(stages or ())
    counts: dict[str, int] = {}
    for path in (f for f in files if not is_figure(f)):
        parts = PurePosixPath(path).parts
        stage = parts[1] if len(parts) > 2 else ""
        if stages is not None and stage in EXPERIMENT_STAGES and stage not in covered:
            counts[stage] = counts.get(stage, 0) + 1
    return counts


def _dirty_refusal(checkout_dirty: bool, dirty: list[str]) -> str:
    what = []
    if checkout_dirty:
        what.append("the checkout has uncommitted changes")
    if dirty:
        what.append(f"{len(dirty)} file(s) were made from uncommitted changes (e.g. {dirty[0]})")
    return (
        f"{' and '.join(what)}: a publication names the commits its files were made on."
        " Commit, rerun those jobs and publish again, or pass --allow-dirty to publish anyway"
        " (the publication then says so wherever it is shown)"
    )


def _sidecar_problem(side: Path) -> str | None:
    """Why a run file's sidecar cannot vouch for it: not JSON, or malformed."""
    try:
        record = json.loads(side.read_text())
    except (OSError, ValueError) as error:
        return f"is not readable JSON ({error})"
    return shape_problem(record)


def left_out_before(scale: str, root: str | os.PathLike[str] = ".") -> list[str]:
    """The files (contract paths) the scale's publications in checkout ``root``, finished or
    in progress, left out as too large: `galu resume` cannot put them back, so a resumed run
    lacks them by design."""
    names: set[str] = set()
    for in_progress in (False, True):
        manifest = Path(root) / publication_folder(scale, in_progress) / MANIFEST
        record = _record(manifest) if manifest.is_file() else {}
        names.update(c for c in record.get("left_out", []) if isinstance(c, str))
    return sorted(names)


def previous_machine(scale: str, root: str | os.PathLike[str] = ".") -> str | None:
    """The machine the scale's last publication (finished, else in progress) records: a
    republished run keeps it unless told otherwise (``galu publish --machine``)."""
    for in_progress in (False, True):
        manifest = Path(root) / publication_folder(scale, in_progress) / MANIFEST
        record = _record(manifest) if manifest.is_file() else {}
        if isinstance(record.get("machine"), str) and record["machine"]:
            return record["machine"]
    return None


# One publication at a time per checkout: a second would delete the first's staging folder.
LOCK = Path(".snakemake/galu/publish.lock")


@contextlib.contextmanager
def publication_lock(root: str | os.PathLike[str] = ".") -> Iterator[None]:
    """Hold the checkout's publication lock (released when the process ends, however), or
    raise PublishError at once when another ``galu publish`` holds it."""
    path = Path(root) / LOCK
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise PublishError(
                f"another galu publish is running in this checkout (it holds {LOCK});"
                " wait for it to finish, then publish again"
            ) from None
        yield


def _check_run(run: OutputRoot, files: list[str], scale: str, left_out: list[str]) -> None:
    """Refuse, before the last publication is touched, a run whose files their sidecars do
    not vouch for (truncated, edited) or whose tables were made from run files that are gone
    (a run partly deleted: its verdicts would outlive their evidence; not a file an earlier
    publication left out as too large, ``left_out``, which a resumed run lacks by design)."""
    malformed = [
        f"{sidecar_path(run / c).as_posix()} {why}"
        for c in files
        if (why := _sidecar_problem(sidecar_path(run / c)))
    ]
    if malformed:
        raise PublishError(
            "; ".join(malformed) + ". Nothing was published: rerun their jobs (Snakemake"
            " reruns an output whose sidecar is malformed)"
        )
    bad = [f"{(run / c).as_posix()} {why}" for c in files if (why := sidecar_mismatch(run / c))]
    if bad:
        raise PublishError(
            "; ".join(bad) + ". Nothing was published: rerun their jobs (Snakemake reruns an"
            " output its sidecar does not vouch for)"
        )
    records = {(run / c).as_posix(): _record(sidecar_path(run / c)) for c in files}
    root = scaled("results", scale) + "/"
    excused = {scaled(c, scale) for c in left_out}
    gone = sorted(
        {
            item["path"]
            for record in records.values()
            for item in record.get("inputs", [])
            if item["path"].startswith(root)
            and not Path(item["path"]).is_file()
            and item["path"] not in excused
        }
    )
    if gone:
        raise PublishError(
            f"the run is incomplete: {', '.join(gone[:3])}{' …' if len(gone) > 3 else ''}"
            f" ({len(gone)} file(s)) made other tables of it and are gone. Nothing was"
            " published: rerun the run (`snakemake` remakes them) and publish again"
        )
    stale = _made_from_other_bytes(records)
    if stale:
        raise PublishError(
            "; ".join(stale[:3]) + f"{' …' if len(stale) > 3 else ''}. Nothing was published:"
            " a table and the one it was made from must be of the same run; rerun the run"
            " (its pre-flight sets such a table aside and `snakemake` remakes it) and publish"
            " again"
        )


def _made_from_other_bytes(records: Mapping[str, Mapping[str, Any]]) -> list[str]:
    """Run files (path -> sidecar record) made from another version of a run file than the
    one to be published (e.g. a claims table older than a table rerun since): its numbers
    are not these."""
    current = {path: record["output"]["sha256"] for path, record in records.items()}
    return [
        f"{path} was made from another version of {item['path']} (sha256"
        f" {item['sha256'][:12]}…, now {current[item['path']][:12]}…)"
        for path, record in records.items()
        for item in record.get("inputs", [])
        if item["path"] in current and current[item["path"]] != item["sha256"]
    ]


def publish(
    scale: str,
    *,
    configfiles: list[str],
    machine: str,
    allow_dirty: bool = False,
    in_progress: bool = False,
) -> dict[str, Any]:
    """Copy the run of ``scale`` in the current checkout to ``published/<scale>/`` (or, for a
    run kept between sittings, ``published/in-progress/<scale>/``) and return its manifest.
    Raises PublishError for the quick scale (the README's first section is its verdict),
    when the run has no claims table, when a result has no sidecar, and (unless
    ``allow_dirty``) when the checkout or any result's job had uncommitted changes."""
    check_scale_name(scale)
    run = OutputRoot(Path("."), scale)
    claims = run / "results/claims.csv"
    if not claims.is_file() and not in_progress:  # a run in progress may not have it yet
        raise PublishError(
            f"no finished run of the {scale} scale: {claims} is missing; run"
            f" `snakemake --cores 2 --configfile {' '.join(configfiles)}` first"
        )
    files = run_files(scale)
    unsealed = [run / c for c in files if not sidecar_path(run / c).is_file()]
    if unsealed:
        names = ", ".join(p.as_posix() for p in unsealed)
        raise PublishError(f"{names}: no provenance sidecar; rerun their jobs")
    earlier = left_out_before(scale)  # read once: the check and the manifest use it
    _check_run(run, files, scale, earlier)
    checkout = git_state()
    made = _made_on(run, files, checkout, allow_dirty)
    checkout_dirty = bool(checkout.get("dirty"))
    if (checkout_dirty or made["dirty_files"]) and not allow_dirty:
        raise PublishError(_dirty_refusal(checkout_dirty, made["dirty_files"]))
    target = Path(publication_folder(scale, in_progress))
    recover_interrupted(target)
    staging = _sibling(target, STAGING)
    try:
        copied, left_out = _copy_run(run, files, staging)
        # still left out: what an earlier publication left out and this resumed run lacks
        left_out += [c for c in earlier if not (run / c).is_file()]
        record = _record(sidecar_path(claims)) if claims.is_file() else {}
        manifest = {
            "scale": scale,
            "in_progress": in_progress,
            **made,
            "machine": machine,
            "configfiles": configfiles,
            **_manifest(scale, record, files=copied, left_out=left_out),
        }
        _write_records(staging, target, manifest, run_state(scale, copied))
        _verify(run, copied, staging)
        _fsync_tree(staging)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    _swap(staging, target)
    return manifest


def copy_file(source: Path, dest: Path) -> None:
    """Copy one file of a publication (bytes and times); tests inject faults here. A full
    disk names the destination, where the space is missing."""
    try:
        shutil.copy2(source, dest)
    except OSError as error:
        if error.errno in (errno.ENOSPC, errno.EDQUOT):
            raise OSError(error.errno, error.strerror, str(dest)) from error
        raise


def _copy_run(run: OutputRoot, files: list[str], staging: Path) -> tuple[list[str], list[str]]:
    """Copy the run's files with their sidecars into ``staging``: (copied, left out as too
    large)."""
    copied, left_out = [], []
    for contract in files:
        source = run / contract
        if source.stat().st_size > MAX_BYTES:
            left_out.append(contract)
            continue
        dest = staging / contract
        dest.parent.mkdir(parents=True, exist_ok=True)
        copy_file(source, dest)
        copy_file(sidecar_path(source), sidecar_path(dest))
        copied.append(contract)
    return copied, left_out


def _record(side: Path) -> dict[str, Any]:
    """A sidecar's record, {} when it is not a JSON mapping (the checks named it already)."""
    try:
        record = json.loads(side.read_text())
    except (OSError, ValueError):
        return {}
    return record if isinstance(record, dict) else {}


def _mapping(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _manifest(
    scale: str, record: Mapping[str, Any], files: list[str], left_out: list[str]
) -> dict[str, Any]:
    """What the manifest says of the run: from the claims table's sidecar (``record``), the
    run's sidecars and the files published."""
    params = _mapping(record.get("params"))
    stages = params.get("stages")
    stages = stages if isinstance(stages, list) else None
    reductions = params.get("reductions")
    return {
        "device": record.get("device"),
        "stages": stages,
        "unfinished_stages": unfinished_stages(files, stages),
        "reductions": [
            r["text"]
            for r in (reductions if isinstance(reductions, list) else [])
            if isinstance(r, dict) and isinstance(r.get("text"), str)
        ],
        **_rounded(run_times(_sidecars(Path(f"results/{scale}")))),
        "files": files,
        "left_out": left_out,
    }


def _made_on(
    run: OutputRoot, files: list[str], checkout: Mapping[str, Any], allow_dirty: bool
) -> dict[str, Any]:
    """What the publication says of its commits: every commit its files were made on (from
    their sidecars), ``commit`` only when that is one commit, ``dirty`` when the checkout or
    any file had uncommitted changes (None when that is not known: no git, or a sidecar that
    does not say), the files made from uncommitted changes or with no recorded state, and the
    checkout's own state when it was published."""
    records = {c: _record(sidecar_path(run / c)) for c in files}
    commits, dirty = made_on(records)
    unknown = sorted(
        c for c, r in records.items() if not isinstance(_mapping(r.get("git")).get("dirty"), bool)
    )
    known = [c for c in commits if c != "unknown"]
    states = [bool(dirty), checkout.get("dirty")]
    return {
        "commit": known[0] if len(known) == 1 and len(commits) == 1 else None,
        "dirty": True if True in states else None if unknown or None in states else False,
        "commits": commits,
        "dirty_files": dirty,
        "unrecorded_files": unknown,
        "published_from": {**checkout, "allow_dirty": allow_dirty},
    }


def _write_records(
    staging: Path, target: Path, manifest: Mapping[str, Any], state: Mapping[str, Any]
) -> None:
    """``run-state.json``, ``publication.json`` and the verdict page (:func:`view_page`) in
    ``staging``, each with a sidecar that records the published files it was made from as its
    inputs (the audit checks the set), under the paths they take once the publication is in
    place."""
    files = manifest["files"]
    for name, content in ((STATE, state), (MANIFEST, manifest)):
        data = (json.dumps(content, indent=1) + "\n").encode()
        _write_with_sidecar(staging, target, name, data, files)
    view = view_page(staging, files)
    if view is not None:
        _write_with_sidecar(staging, target, VIEW, view[0], view[1])


def _write_with_sidecar(
    staging: Path, target: Path, name: str, data: bytes, inputs: list[str]
) -> None:
    """``name`` in ``staging`` with a sidecar made by ``galu publish`` from the published
    files ``inputs`` (contract paths), every path as it will be once in place."""
    path = staging / name
    atomic_write_bytes(path, data)
    record = Run("publish", inputs=[staging / c for c in inputs]).sidecar(path)
    record["output"]["path"] = (target / name).as_posix()
    for item, contract in zip(record["inputs"], inputs, strict=True):
        item["path"] = (target / contract).as_posix()
    atomic_write_bytes(sidecar_path(path), sealed_sidecar(record))


def png_figures(files: Iterable[str]) -> list[str]:
    """The PNG figures among a publication's files (contract paths), in their order: what its
    pages link (the PDF beside each is for print)."""
    return [c for c in files if c.startswith("figures/") and c.endswith(".png")]


def view_page(staging: Path, files: list[str]) -> tuple[bytes, list[str]] | None:
    """The publication's verdict page (``claims.html`` at its root) and what it is made from:
    the run's landing page (:data:`~galu.workflow.landing.LANDING_PAGE`) as HTML, each figure
    it names linked to the published PNG; None for a run without a landing page yet (a run
    in progress). The run's own ``results/claims.html`` links the figures of the run's
    checkout (``figures/<scale>/``), which are elsewhere in a publication."""
    from galu.workflow.landing import LANDING_PAGE, landing_html

    if LANDING_PAGE not in files:
        return None
    figures = png_figures(files)
    page = landing_html((staging / LANDING_PAGE).read_text(), {f: f for f in figures})
    return page.encode(), [LANDING_PAGE, *figures]


def _verify(run: OutputRoot, copied: list[str], staging: Path) -> None:
    """Every copy has the bytes its run file's sidecar records (a copy that went wrong
    never replaces the last publication)."""
    bad = [
        c
        for c in copied
        if not sidecar_path(staging / c).is_file() or sidecar_mismatch(staging / c)
    ]
    if bad:
        raise PublishError(
            f"the copies of {', '.join(bad)} differ from their sidecars; nothing was published"
            f" (the last publication is kept). Check the disk and publish again"
        )


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


NO_PUBLICATION = (
    "No run at the paper level is published yet: `snakemake --cores 2 --configfile"
    " config/paper.yaml config/paper-cpu.yaml`, then `galu publish --scale paper-cpu`.\n"
)
PAPER_MARKERS = (
    "<!-- paper-claims:start (generated by galu publish from published/) -->",
    "<!-- paper-claims:end -->",
)


def _time_text(manifest: Mapping[str, Any]) -> str:
    """The run's times as the README states them (see :func:`run_times`)."""
    text = (
        f"wall time {manifest['wall_hours']:.1f} h from the first job's start to the last job's end"
    )
    if "running_hours" in manifest:
        text += (
            f", {manifest['running_hours']:.1f} h of it with a job running (the rest: pauses"
            " between sittings)"
        )
    text += f" ({manifest['job_hours']:.1f} h of jobs)"
    stages = manifest.get("stage_hours") or {}
    if stages:
        text += "; per stage, the time one of its jobs was running: " + ", ".join(
            f"{stage} {hours:.1f} h" for stage, hours in stages.items()
        )
    return text


def commits_text(manifest: Mapping[str, Any]) -> str:
    """The commits the published files were made on, and any made from uncommitted changes."""
    commits = manifest.get("commits") or {manifest.get("commit"): None}
    if len(commits) == 1:
        text = f"commit `{next(iter(commits))}`"
    else:
        text = f"made on {len(commits)} commits, " + ", ".join(
            f"`{c[:12]}` ({n} files)" for c, n in commits.items()
        )
    dirty = manifest.get("dirty_files")
    if dirty:
        text += f", **{len(dirty)} file(s) from uncommitted changes** (e.g. `{dirty[0]}`)"
    elif manifest.get("dirty") and dirty is None:
        text += " (with uncommitted changes)"
    unrecorded = manifest.get("unrecorded_files")
    if unrecorded:
        text += (
            f", {len(unrecorded)} file(s) whose sidecar does not say whether they were made"
            f" from uncommitted changes (e.g. `{unrecorded[0]}`)"
        )
    checkout = manifest.get("published_from") or {}
    if checkout.get("dirty"):
        text += (
            f"; published from a checkout of `{checkout.get('commit')}` with uncommitted changes"
        )
    elif "dirty" in checkout and checkout["dirty"] is None:
        text += "; published from outside a git checkout (its state is not known)"
    elif checkout.get("commit") and set(commits) != {checkout["commit"]}:
        # a run made over several sittings: the commit whose code the files were checked
        # against when published (``galu audit --strict`` at that commit)
        text += f"; published from a clean checkout of `{checkout['commit'][:12]}`"
    return text


def _figure_lines(folder: Path, files: list[str]) -> list[str]:
    """The publication's verdict page and its figures, linked (none for a publication without
    figures)."""
    figures = png_figures(files)
    if not figures:
        return []
    where = f"{PUBLISHED}/{folder.name}"
    links = ", ".join(f"[{PurePosixPath(c).stem}]({where}/{c})" for c in figures)
    line = f"Its figures (PNG, a PDF beside each): {links}."
    if (folder / VIEW).is_file():
        line += f" Each claim with a link to its figure: [`{where}/{VIEW}`]({where}/{VIEW})."
    return [line, ""]


def _publication_lines(folder: Path, quick: Path | None) -> list[str]:
    """One published run: where, when, on what and how long; its reductions; its table; its
    claims beside the quick run's (``quick``, its claims.csv; a line saying how to get one
    when there is none)."""
    manifest = json.loads((folder / MANIFEST).read_text())
    scale = manifest["scale"]
    if "commits" not in manifest:  # published before manifests listed them: the sidecars do
        files = {c: folder / c for c in manifest.get("files", [])}
        manifest["commits"], manifest["dirty_files"] = made_on_files(files)
    configs = " + ".join(f"`{c}`" for c in manifest.get("configfiles", []))
    lines = [
        f"The **{scale}** run: {commits_text(manifest)}; machine:"
        f" {manifest.get('machine')} (device {manifest.get('device')}); configuration"
        f" {configs}; {_time_text(manifest)}. Its tables and their provenance sidecars are"
        f" in `{PUBLISHED}/{scale}/` (`galu audit` verifies them).",
        "",
    ]
    lines += _figure_lines(folder, manifest.get("files", []))
    if manifest.get("stages"):
        lines += [
            f"Stages run: {', '.join(manifest['stages'])} (configuration key `stages`; the"
            " claims of any other stage are not_run).",
            "",
        ]
    if manifest.get("unfinished_stages"):
        kept = ", ".join(f"{n} of {s}" for s, n in manifest["unfinished_stages"].items())
        lines += [
            f"Also kept, for `galu resume`: the tables of finished jobs of stages still running"
            f" ({kept}); no claim reads them yet.",
            "",
        ]
    if manifest.get("reductions"):
        lines += [
            "Reduced from the paper's settings (claims that depend on it are indicative:"
            " measured, not judged):",
            "",
        ]
        lines += [f"- {text}" for text in manifest["reductions"]] + [""]
        root = folder.parent.parent
        # a checkout (not a test's bare folder): the paper's configuration and the cost model
        if all((root / f).is_file() for f in (*PAPER_CONFIGFILES, CONSTANTS)):
            lines += [paper_gpu_text(root), ""]
    lines += [(folder / "results/claims.md").read_text().rstrip("\n"), ""]
    if quick is None or not quick.is_file():
        return lines + [
            "(Its claims beside the quick scale's: `galu readme --update` after a quick run,"
            " `make reproduce`.)",
            "",
        ]
    published = read_run(str(folder / "results"))
    notes = scale_notes(folder.parent.parent, published.scale)
    return lines + beside_quick_lines(read_run(str(quick)), published, notes)


def paper_section(root: str | os.PathLike[str] = ".", quick: Path | None = None) -> str:
    """README's "What reproduces at the paper level", generated from ``published/``: each
    published run with its verdicts beside those of the quick run ``quick`` (its claims.csv;
    :mod:`galu.workflow.scale_table`), or how to publish one when none is."""
    base = Path(root) / PUBLISHED
    folders = (
        sorted(d for d in base.iterdir() if not d.name.startswith(".") and (d / MANIFEST).is_file())
        if base.is_dir()
        else []
    )
    if not folders:
        return NO_PUBLICATION
    lines: list[str] = []
    for folder in folders:
        lines += _publication_lines(folder, quick)
    return "\n".join(lines)
