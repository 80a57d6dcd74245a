"""Calibration of :mod:`galu.workflow.planning.costs`: measurements of real runs in, fitted
constants out.

``workflow/costs/measurements.tsv`` holds one row per measured job: the run it came from
(``run``), the config files that run used (``configfiles``, space-separated, merged as
:func:`galu.workflow.settings.runconfig.run_config` does), the job's benchmark name (``benchmark``,
the path under ``logs/benchmarks/`` without ``.tsv``), its wall seconds ``s``, CPU seconds
``cpu_time`` and peak resident memory ``max_rss`` (MB) from Snakemake's benchmark file, and
the machine. The model is fitted to ``cpu_time``: the core-seconds a job needs, which the
machines we measure on (shared by several people) inflate far less than the wall time.
Each job's sizes are recomputed from the configuration, so a changed formula is refitted
without measuring again (``workflow/costs/fit.py``).

Machines differ in speed. The constants are for the reference machine
(:data:`REFERENCE_MACHINE`, where the quick run was measured); every other machine of the
measurements gets one fitted speed factor (its jobs' core-seconds times the factor are the
reference machine's), stored under ``machines`` in the constants file. ``galu plan --speed``
applies such a factor to a plan.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from scipy.optimize import least_squares

from galu.declarations import Job, Sizes
from galu.workflow.planning.costs import CostModel, Prediction, RuleCost
from galu.workflow.planning.dag import planned_jobs
from galu.workflow.scales import QUICK, scale_of, scaled
from galu.workflow.settings.config import load_yaml
from galu.workflow.settings.runconfig import run_config

MEASUREMENTS = "workflow/costs/measurements.tsv"
COLUMNS = ["run", "configfiles", "benchmark", "s", "cpu_time", "max_rss", "machine"]
# Runs measured while the machine was loaded beyond its cores count less: their CPU times
# are noisier (shared caches and memory bandwidth). The paper-smoke runs ran at a load
# average of ~10 on 2 cores; the paper-cpu run's jobs ran two at a time beside a session's
# other work (tests, a CI run) on the same 2 cores.
RUN_WEIGHTS = {"paper-smoke": 0.3, "paper-smoke-2": 0.3, "paper-cpu": 0.5}
# CPU times below this are below the benchmark's resolution (a job that only links files).
MIN_SECONDS = 0.1
# Snakemake samples a job's process for its benchmark; a job that ends before the first
# sample leaves a CPU time of 0 and the few MB of its wrapper's memory, no measurement of
# the job itself (a Python interpreter alone holds more). Such rows neither fit the
# constants nor count in the check.
SAMPLED_MIN_MB = 10.0
# The assumed GPU speed-up over one CPU core, for GPU rules without a GPU measurement
# (:data:`GPU_MEASUREMENTS`): a placeholder for an honest "unknown", which `galu plan` marks.
ASSUMED_GPU_SPEEDUP = 20.0
# Jobs timed on a GPU: each rule's measured speed-up (:func:`gpu_speedups`).
GPU_MEASUREMENTS = "workflow/costs/gpu.yaml"
# The machine whose core-seconds the constants predict; its speed factor is 1 by definition.
REFERENCE_MACHINE = "2-core VM"


@dataclass(frozen=True)
class Measured:
    """One measured job with its sizes under the configuration it ran with."""

    run: str
    job: Job
    config: Mapping[str, Any]
    sizes: Sizes
    seconds: float
    rss_mb: float
    machine: str = REFERENCE_MACHINE
    cost: RuleCost = RuleCost()  # what the job's rule declares (its formula, its twin)

    @property
    def sampled(self) -> bool:
        """Whether Snakemake's benchmark measured the job at all (:data:`SAMPLED_MIN_MB`)."""
        return self.rss_mb >= SAMPLED_MIN_MB


def machine_name(label: str) -> str:
    """The machine of a measurement's ``machine`` label: the label up to its first comma or
    parenthesis, so that a note on how it was used (``2-core VM, shared (load ~10)``) is
    not another machine."""
    return label.split(" (")[0].split(",")[0].strip()


def read_benchmarks(
    run_dir: str | Path, scale: str = QUICK
) -> dict[str, tuple[float, float, float]]:
    """``benchmark name -> (wall s, CPU s, max_rss MB)`` of a run of ``scale``: the mean over a
    file's rows (one per repeat). The shared data rules' files come from
    ``logs/benchmarks/data/``, every other from the scale's own ``logs/.../benchmarks/``."""
    shared = Path(run_dir) / "logs/benchmarks"
    own = Path(run_dir) / scaled("logs/benchmarks", scale)
    files = {_name(p, own): p for p in sorted(own.rglob("*.tsv"))}
    if own != shared:  # another scale's own folder has no data/: add the shared one
        files.update({_name(p, shared): p for p in sorted((shared / "data").rglob("*.tsv"))})
    found = {}
    for name, path in sorted(files.items()):
        table = pd.read_csv(path, sep="\t")
        found[name] = tuple(_mean(table, column) for column in ("s", "cpu_time", "max_rss"))
    return found


def _name(path: Path, root: Path) -> str:
    return path.relative_to(root).with_suffix("").as_posix()


def _mean(table: pd.DataFrame, column: str) -> float:
    return float(pd.to_numeric(table[column], errors="coerce").fillna(0).mean())


def measurement_rows(
    run_dir: str | Path, run: str, configfiles: Sequence[str], machine: str
) -> pd.DataFrame:
    """Rows for ``measurements.tsv`` from one run's benchmark files."""
    rows = [
        {"run": run, "configfiles": " ".join(configfiles), "benchmark": name, "s": s,
         "cpu_time": cpu, "max_rss": rss, "machine": machine}
        for name, (s, cpu, rss) in read_benchmarks(run_dir, scale_of(configfiles)).items()
    ]  # fmt: skip
    return pd.DataFrame(rows, columns=COLUMNS)


def measured_jobs(root: str | Path, table: pd.DataFrame) -> list[Measured]:
    """Each row matched to its job; rows of jobs the configuration no longer has are
    dropped (e.g. ``readme_check``, not part of ``all``)."""
    out = []
    for (run, files), rows in table.groupby(["run", "configfiles"], sort=False):
        config = run_config(root, str(files).split())
        jobs = {p.job.benchmark: p for p in planned_jobs(root, str(files).split())}
        for row in rows.itertuples():
            planned = jobs.get(row.benchmark)
            if planned is not None:
                job, cost = planned.job, planned.cost
                sizes = cost.sizes(config, job.wildcards)
                seconds = max(float(row.cpu_time), MIN_SECONDS)
                out.append(
                    Measured(
                        run, job, config, sizes, seconds, float(row.max_rss),
                        machine_name(str(row.machine)), cost,
                    )
                )  # fmt: skip
    return out


def _fit(
    features: np.ndarray,
    ys: np.ndarray,
    floor: float,
    slope: float | None = None,
    weights: np.ndarray | None = None,
) -> np.ndarray:
    """Non-negative coefficients ``c`` of ``y = c0 + c . features`` minimizing the squared
    log ratios of prediction to measurement (every job counts by its ratio, not its size).

    A feature that is zero for every measurement gets 0; a weak pull towards the starting
    point (intercept ``floor``, each term ``slope`` or else half the median measurement)
    settles the coefficients the measurements cannot separate, e.g. a rule measured at one
    size only. ``weights`` scale each measurement's log ratio.
    """
    weights = np.ones(len(ys)) if weights is None else weights
    used = np.flatnonzero(np.any(features > 0, axis=0))
    x = features[:, used]
    start = np.log(
        [max(floor, 1e-3)]
        + [
            slope or max(0.5 * float(np.median(ys / np.where(col > 0, col, np.inf))), 1e-30)
            for col in x.T
        ]
    )

    def residuals(p: np.ndarray) -> np.ndarray:
        c = np.exp(p)
        fit = weights * np.log((c[0] + x @ c[1:]) / ys)
        return np.concatenate([fit, 0.01 * (p - start)])

    c = np.exp(least_squares(residuals, start).x)
    out = np.zeros(features.shape[1] + 1)
    out[0] = c[0]
    out[used + 1] = c[1:]
    return out


def fit_constants(measured: Iterable[Measured]) -> dict[str, Any]:
    """Per rule: ``base_s, rate, step_s`` from the CPU times and ``base_mb, mem_rate`` from
    the peak memory (:mod:`galu.workflow.planning.costs`), a default for rules never measured, and
    each machine's speed factor relative to :data:`REFERENCE_MACHINE` (``machines``)."""
    measured = list(measured)
    # the factors compare each machine with the model fitted to the reference machine alone
    reference = [m for m in measured if m.machine == REFERENCE_MACHINE]
    speeds = machine_speeds(CostModel(_fit_rules(reference, {})), measured)
    return {**_fit_rules(measured, speeds), "machines": speeds}


def machine_speeds(model: CostModel, measured: Sequence[Measured]) -> dict[str, float]:
    """Each machine's speed factor: the median over its jobs of a second or more of the
    predicted reference core-seconds over the measured ones (the median, so that a few
    jobs the formulas miss do not move it); the reference machine's is 1."""
    ratios_by: dict[str, list[float]] = defaultdict(list)
    for m in measured:
        if m.seconds >= 1 and m.sampled:
            predicted = model.cpu_seconds(m.job.rule, m.sizes, m.cost.twin)
            ratios_by[m.machine].append(predicted / m.seconds)
    speeds = {name: _round(float(np.median(r))) for name, r in sorted(ratios_by.items())}
    speeds[REFERENCE_MACHINE] = 1.0
    return speeds


def _fit_rules(measured: Sequence[Measured], speeds: Mapping[str, float]) -> dict[str, Any]:
    """:func:`fit_constants` with the machines' speed factors given: each job's CPU time is
    turned into the reference machine's (times its machine's factor) before the fit."""
    by_rule: dict[str, list[Measured]] = defaultdict(list)
    for m in measured:
        by_rule[m.job.rule].append(m)

    def on_reference(m: Measured) -> float:
        return m.seconds * speeds.get(m.machine, 1.0)

    # Rules without a formula (plots, collectors) measure the per-job startup: the
    # starting intercept of the others.
    light = [m for ms in by_rule.values() for m in ms if m.sizes == Sizes() and m.sampled]
    startup_s = float(np.median([on_reference(m) for m in light])) if light else 1.0
    startup_mb = float(np.median([m.rss_mb for m in light])) if light else 200.0
    rules = {}
    for rule, ms in sorted(by_rule.items()):
        times = np.array([[m.sizes.work, m.sizes.steps] for m in ms])
        weights = np.array([RUN_WEIGHTS.get(m.run, 1.0) * m.sampled for m in ms])
        seconds = np.array([on_reference(m) for m in ms])
        base_s, rate, step_s = _fit(times, seconds, startup_s, weights=weights)
        held = np.array([[m.sizes.bytes / 1e6] for m in ms])
        # prior slope 1: the bytes a formula counts are held in memory, one MB per MB
        rss = np.array([max(m.rss_mb, 1.0) for m in ms])
        base_mb, mem_rate = _fit(held, rss, startup_mb, slope=1.0, weights=weights)
        values = {"base_s": base_s, "rate": rate, "step_s": step_s, "base_mb": base_mb,
                  "mem_rate": mem_rate}  # fmt: skip
        rules[rule] = {key: _round(v) for key, v in values.items()}
    default = {"base_s": _round(max(c["base_s"] for c in rules.values())),
               "base_mb": _round(startup_mb * 4)}  # fmt: skip
    return {"gpu_speedup": ASSUMED_GPU_SPEEDUP, "default": default, "rules": rules}


def gpu_speedups(root: str | Path, model: CostModel) -> dict[str, float]:
    """Each rule's measured GPU speed-up over the reference CPU core: the median, over the
    rule's jobs in :data:`GPU_MEASUREMENTS`, of the work seconds ``model`` predicts on the
    CPU (its start-up ``base_s`` taken off) over the seconds measured on the GPU."""
    entries = load_yaml(Path(root) / GPU_MEASUREMENTS)["jobs"]
    by_rule: dict[str, list[float]] = defaultdict(list)
    for entry in entries:
        config = run_config(root, entry["configfiles"])
        rule = entry["rule"]
        wildcards = {key: str(value) for key, value in entry["wildcards"].items()}
        jobs = [
            p
            for p in planned_jobs(root, entry["configfiles"])
            if p.job.rule == rule and p.job.wildcards == wildcards
        ]
        if not jobs:
            raise ValueError(
                f"{GPU_MEASUREMENTS}: no job of rule {rule!r} with wildcards {wildcards} in"
                f" {' + '.join(entry['configfiles'])}: correct the entry or remove it"
            )
        cost = jobs[0].cost
        work_s = model.cpu_seconds(rule, cost.sizes(config, wildcards), cost.twin)
        base_s = model.constants(rule, cost.twin).base_s
        by_rule[rule].append((work_s - base_s) / float(entry["seconds"]))
    return {rule: _round(float(np.median(r))) for rule, r in sorted(by_rule.items())}


def _round(x: float) -> float:
    """Four significant digits: what the measurements support."""
    return float(f"{x:.4g}") if x else 0.0


def ratios(model: CostModel, measured: Iterable[Measured]) -> pd.DataFrame:
    """Predicted / measured CPU time and memory of every measured job (on the CPU: the
    measurements were made there), the time predicted for the job's own machine."""
    rows = []
    for m in measured:
        p: Prediction = model.predict(m.job, m.config, m.cost, gpus=False)
        seconds = p.seconds / model.speed(m.machine)
        rows.append(
            {
                "run": m.run, "job": m.job.label, "measured_s": m.seconds,
                "predicted_s": seconds, "time_ratio": seconds / m.seconds,
                "measured_mb": m.rss_mb, "predicted_mb": p.mem_mb,
                "mem_ratio": p.mem_mb / max(m.rss_mb, 1.0), "sampled": m.sampled,
            }
        )  # fmt: skip
    return pd.DataFrame(rows)


def worst(table: pd.DataFrame, column: str) -> float:
    """The largest factor by which a ratio column misses 1, either way."""
    values = table[column].to_numpy(float)
    return float(np.max(np.maximum(values, 1 / values))) if len(values) else math.nan


# The model check (tests/test_costs.py): predicted within this factor of the measured CPU
# time, or, for jobs of about a second whose time is process startup and file-system
# caching more than work, within this many seconds.
TOLERANCE_FACTOR = 1.5
TOLERANCE_S = 0.5


def misses(table: pd.DataFrame) -> pd.DataFrame:
    """The rows of :func:`ratios` outside the model check's tolerance (of the jobs the
    benchmark sampled)."""
    factor = np.maximum(table["time_ratio"], 1 / table["time_ratio"])
    close = (table["predicted_s"] - table["measured_s"]).abs() <= TOLERANCE_S
    return table[(factor > TOLERANCE_FACTOR) & ~close & table["sampled"]]
