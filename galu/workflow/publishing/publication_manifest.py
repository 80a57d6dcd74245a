"""What a publication records of its run: its files, its times, its commits, its machine.

:func:`galu.workflow.publishing.publish.publish` copies the files :func:`run_files` lists (the
verdict, the contract tables and the per-job tables they are stacked from, and every figure) and
writes ``publication.json`` from what this module reads off the run: the commits its files
were made on and whether any of them or the checkout had uncommitted changes
(:func:`_made_on`), the device, stages and reductions of the run and its wall time and job
time (:func:`_manifest`, :func:`run_times`, from the sidecars), and the machine
(:func:`this_machine`); ``run-state.json`` holds what continuing the run elsewhere needs
(:func:`run_state`, :mod:`galu.workflow.publishing.resume`). A later publication of the scale reads
the earlier one's record (:func:`galu.workflow.publication_folders.left_out_before`,
:func:`~galu.workflow.publication_folders.previous_machine`).
"""

from __future__ import annotations

import base64
import json
import os
import platform
from collections.abc import Iterable, Mapping
from datetime import datetime
from pathlib import Path, PurePosixPath
from typing import Any

from galu.checkpoints import FOLDER as CHECKPOINTS
from galu.workflow.commits import made_on
from galu.workflow.planning.jobs import EXPERIMENT_STAGES, STAGE_ORDER, stage_of
from galu.workflow.provenance import SIDECAR_SUFFIX, sidecar_path
from galu.workflow.publication_folders import json_record
from galu.workflow.running.snakemake_metadata import read_metadata
from galu.workflow.scales import OutputRoot, scaled, unscaled

# Not published: the report archive (megabytes: the figures again, Snakemake's HTML), which
# the next run rebuilds from the tables and figures in a minute.
NOT_PUBLISHED = ("results/report.zip",)
# The run's folders a publication copies (scaled: results/<scale>/, figures/<scale>/).
RUN_FOLDERS = ("results", "figures")
# Always published: the verdict (contract paths).
VERDICT = ("results/claims.csv", "results/claims.md", "results/claims_summary.json")
# The run's own pages: they link the run's checkout (its figures under figures/<scale>/), so
# they are no pages of a publication; kept in its run state for `galu resume`, byte for byte
# with their sidecars (galu.workflow.publishing.publish explains why).
RUN_PAGES = ("results/claims.html",)


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


def run_state(scale: str, contracts: Iterable[str], pages: Iterable[str] = ()) -> dict[str, Any]:
    """What a publication keeps besides the tables: Snakemake's metadata of each published
    file, each of the run's own pages ``pages`` (:data:`RUN_PAGES`: contract path -> its text
    and its sidecar's, ``run_pages``; only when there are any) and their sidecars (keyed by the
    run's path), every benchmark table of the run (``logs/<scale>/benchmarks``; path -> text)
    and the checkpoints of its unfinished jobs (:func:`kept_checkpoints`; only when there are
    any)."""
    pages = list(pages)
    kept = {
        c: {
            # (bytes as they are: read_text would translate line endings)
            "text": Path(scaled(c, scale)).read_bytes().decode("utf-8"),
            "sidecar": sidecar_path(scaled(c, scale)).read_bytes().decode("utf-8"),
        }
        for c in pages
    }
    paths = [scaled(c, scale) for c in [*contracts, *pages]]
    targets = [p for path in paths for p in (path, f"{path}{SIDECAR_SUFFIX}")]
    benchmarks = Path(scaled("logs/benchmarks", scale))
    tables = sorted(benchmarks.rglob("*.tsv")) if benchmarks.is_dir() else []
    checkpoints, too_large = kept_checkpoints(scale)
    return {
        "snakemake_metadata": read_metadata(targets),
        **({"run_pages": kept} if kept else {}),
        "benchmarks": {p.as_posix(): p.read_text() for p in tables},
        **({"checkpoints": checkpoints} if checkpoints else {}),
        **({"checkpoints_left_out": too_large} if too_large else {}),
    }


# A checkpoint carried in a publication (base64 in its run state, committed to git) is at
# most this large; a larger one (a width-1024 network with its optimizer: hundreds of MB)
# stays in the checkout that made it, and a resumed copy elsewhere starts that job afresh.
CHECKPOINT_MAX_BYTES = 5_000_000


def kept_checkpoints(scale: str) -> tuple[dict[str, str], list[str]]:
    """The saved states of the run's unfinished long jobs (:mod:`galu.checkpoints`), base64
    by path, so that a run kept between sittings goes on from them on the next machine; and
    the paths of those over :data:`CHECKPOINT_MAX_BYTES`, left out."""
    base = CHECKPOINTS / scaled("results", scale)
    files = sorted(base.rglob("*.pt")) if base.is_dir() else []
    small = [p for p in files if p.stat().st_size <= CHECKPOINT_MAX_BYTES]
    kept = {p.as_posix(): base64.b64encode(p.read_bytes()).decode("ascii") for p in small}
    return kept, [p.as_posix() for p in files if p not in small]


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
    records = {c: json_record(sidecar_path(run / c)) for c in files}
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
