"""``galu plan``: what a configuration will cost, before it runs.

Per stage and rule: the number of jobs, the predicted CPU-core-hours (GPU-hours for GPU
rules), the peak memory of the largest job, and the wall time on the cores and GPUs given,
from the cost model of :mod:`galu.workflow.planning.costs`. Problems are named before anything
starts: a job whose predicted memory exceeds the machine's, or whose predicted time exceeds its
declared ``runtime`` (a ``runtime_min`` override set lower than the model's estimate).
"""

from __future__ import annotations

import heapq
import math
import os
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from galu.declarations import Job
from galu.workflow.planning.costs import (
    CONSTANTS,
    CostModel,
    Prediction,
    RuleCost,
    mem_request,
    runtime_request,
)
from galu.workflow.planning.jobs import STAGE_ORDER

if TYPE_CHECKING:
    from galu.workflow.planning.dag import PlannedJob

# Set to 1 to start a run the pre-flight would refuse (a prediction you know to be wrong).
SKIP_ENV = "GALU_SKIP_COST_CHECK"


def declared_runtime(prediction: Prediction, cost: RuleCost) -> int:
    """The ``runtime`` resource (minutes) the job declares: the override, else the model's."""
    return cost.runtime_override(prediction.job.wildcards) or runtime_request(prediction)


@dataclass(frozen=True)
class Plan:
    """Every job's prediction for one configuration on one machine."""

    predictions: list[Prediction]
    declared: dict[str, int]
    cores: int
    gpus: int

    def wall_hours(self) -> float:
        """Hours until the last job ends: jobs start longest first on the first free core
        (GPU jobs on the first free GPU), dependencies ignored (a lower bound)."""
        return (
            max(
                _makespan([p.seconds for p in self.predictions if not p.gpu], self.cores),
                _makespan([p.seconds for p in self.predictions if p.gpu], max(self.gpus, 1)),
            )
            / 3600
        )


def speed_line(model: CostModel, speed: float) -> str:
    """Which machine the plan's times are for, and the measured machines' factors."""
    known = ", ".join(f"{name} {factor:g}" for name, factor in model.machines.items())
    return (
        f"CPU times for cores {speed:g}x as fast as the reference machine's (--speed;"
        f" measured machines: {known or 'none'})"
    )


def _makespan(seconds: Iterable[float], workers: int) -> float:
    """The wall time of jobs handed out longest first to ``workers`` (more workers than
    jobs finish no sooner: the count is capped at the jobs', so any --cores fits memory)."""
    jobs = sorted(seconds, reverse=True)
    free = [0.0] * max(1, min(workers, len(jobs)))
    for s in jobs:
        heapq.heapreplace(free, free[0] + s)
    return max(free)


def make_plan(
    config: Mapping[str, Any],
    planned: Sequence[PlannedJob],
    model: CostModel,
    cores: int,
    gpus: int,
    speed: float = 1.0,
) -> Plan:
    """Predict every planned job of ``config`` (:func:`galu.workflow.planning.dag.planned_jobs`);
    GPU rules run on a GPU only when ``gpus`` > 0. ``speed``: how many times faster this
    machine's cores are than the reference machine's (:mod:`galu.workflow.planning.costfit`); it
    scales the CPU jobs' times, not the runtimes they declare, which stay the reference
    machine's (with their margin) so that a job's resources do not depend on where it was
    planned."""
    references = [(model.predict(p.job, config, p.cost, gpus=gpus > 0), p.cost) for p in planned]
    declared = {p.job.label: declared_runtime(p, cost) for p, cost in references}
    predictions = [p if p.gpu else replace(p, seconds=p.seconds / speed) for p, _ in references]
    return Plan(predictions, declared, cores, gpus)


def problems(plan: Plan, mem_gb: float | None) -> tuple[list[str], list[str]]:
    """(errors, warnings), one line per rule and kind of problem: jobs whose predicted host
    memory exceeds the machine's ``mem_gb`` (None: no machine to judge against), and jobs
    whose predicted time exceeds their declared runtime (the scheduler would kill them)."""
    too_big: dict[str, list[Prediction]] = defaultdict(list)
    too_long: dict[str, list[Prediction]] = defaultdict(list)
    for p in plan.predictions:
        if mem_gb is not None and p.mem_mb > mem_gb * 1000:
            too_big[p.job.rule].append(p)
        if p.seconds / 60 > plan.declared[p.job.label]:
            too_long[p.job.rule].append(p)
    errors = [
        f"{_jobs(ps)} {_verb(ps, 'need')} {_span([p.mem_mb / 1000 for p in ps], '{:.1f}')} GB"
        f" of host memory; this machine has {mem_gb:.1f} GB: pass --mem-gb for the machine"
        " you will run on, or shrink the grid in the configuration"
        for ps in too_big.values()
    ]
    warnings = [
        f"{_jobs(ps)} {_verb(ps, 'are')} predicted to take"
        f" {_span([p.seconds for p in ps], _duration)}, longer than the declared runtime of"
        f" {_span([plan.declared[p.job.label] for p in ps], '{:d}')} min (runtime_min): raise"
        " it, or set it to 0 to take the cost model's"
        for ps in too_long.values()
    ]
    return errors, warnings


def _jobs(predictions: Sequence[Prediction]) -> str:
    """``"rule[key=value]"`` for one job; for several, their count, rule and the range of
    each wildcard that varies (``"15 <rule> jobs (norm_depth 40 to 100)"``)."""
    if len(predictions) == 1:
        return predictions[0].job.label
    rule = predictions[0].job.rule
    spans = []
    for key in predictions[0].job.wildcards:
        values = sorted({p.job.wildcards[key] for p in predictions}, key=_numeric_first)
        if len(values) > 1:
            spans.append(
                f"{key} {values[0]} to {values[-1]}"
                if _numeric(values)
                else f"{key} {', '.join(values[:3])}{', ...' if len(values) > 3 else ''}"
            )
    return f"{len(predictions)} {rule} jobs" + (f" ({'; '.join(spans)})" if spans else "")


def _verb(predictions: Sequence[Prediction], plural: str) -> str:
    """``plural`` for several jobs, its singular for one (need/needs, are/is)."""
    return plural if len(predictions) > 1 else {"need": "needs", "are": "is"}[plural]


def _numeric(values: Sequence[str]) -> bool:
    try:
        [float(v) for v in values]
    except ValueError:
        return False
    return True


def _numeric_first(value: str) -> tuple[int, float, str]:
    return (0, float(value), "") if _numeric([value]) else (1, 0.0, value)


def _span(values: Sequence[float], form: Any) -> str:
    """The smallest and largest of ``values`` formatted (one value when they agree)."""
    show = form.format if isinstance(form, str) else form
    low, high = show(min(values)), show(max(values))
    return low if low == high else f"{low} to {high}"


def _duration(seconds: float) -> str:
    if seconds < 120:
        return f"{seconds:.0f} s"
    if seconds < 7200:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"


def table(plan: Plan) -> list[str]:
    """The plan as text: one line per rule, grouped by stage, then the totals."""
    by_rule: dict[tuple[str, str], list[Prediction]] = defaultdict(list)
    for p in plan.predictions:
        by_rule[(p.job.stage, p.job.rule)].append(p)
    head = (
        f"{'stage':15s} {'rule':34s} {'jobs':>5s} {'total time':>10s} {'device':6s}"
        f" {'largest job':>11s} {'host GB':>8s}"
    )
    lines = [head, "-" * len(head)]
    order = sorted(by_rule, key=lambda k: (STAGE_ORDER.index(k[0]), k[1]))
    for stage, rule in order:
        ps = by_rule[(stage, rule)]
        total = sum(p.seconds for p in ps)
        device = _device(ps)
        longest = max(p.seconds for p in ps)
        peak = max(p.mem_mb for p in ps) / 1000
        lines.append(
            f"{stage:15s} {rule:34s} {len(ps):5d} {_duration(total):>10s} {device:6s}"
            f" {_duration(longest):>11s} {peak:8.2f}"
        )
    cpu = sum(p.seconds for p in plan.predictions if not p.gpu)
    gpu = sum(p.seconds for p in plan.predictions if p.gpu)
    lines.append("-" * len(head))
    lines.append(
        f"{len(plan.predictions)} jobs: {_duration(cpu)} of one CPU core, {_duration(gpu)} of"
        f" one GPU; the largest job's peak host memory (RAM, not GPU memory)"
        f" {max(p.mem_mb for p in plan.predictions) / 1000:.2f} GB"
    )
    lines.append(
        f"wall time on {plan.cores} core(s) and {plan.gpus} GPU(s): at least"
        f" {_duration(plan.wall_hours() * 3600)} (longest job first on the first free core)"
    )
    if any(p.gpu and not p.gpu_measured for p in plan.predictions):
        lines.append(
            "* GPU times uncalibrated: no such job was timed on a GPU, so they are the CPU"
            " predictions divided by an assumed speed-up (workflow/costs/constants.yaml); the"
            " other GPU rules' speed-ups were measured (workflow/costs/gpu.yaml)"
        )
    return lines


def _device(predictions: list[Prediction]) -> str:
    """Where a rule's jobs run: CPU, GPU (speed-up measured) or GPU* (assumed)."""
    if not any(p.gpu for p in predictions):
        return "CPU"
    return "GPU" if all(p.gpu_measured for p in predictions if p.gpu) else "GPU*"


def job_request(
    model: CostModel, config: Mapping[str, Any], rule: str, wildcards: Any, cost: RuleCost
) -> tuple[int, int]:
    """``(runtime minutes, mem_mb)`` a job declares (the rule files' ``resources``):
    the cost model's prediction with margins, or the ``runtime_min`` override."""
    job = Job("", rule, "", {str(k): str(v) for k, v in dict(wildcards.items()).items()})
    prediction = model.predict(job, config, cost)
    return declared_runtime(prediction, cost), mem_request(prediction)


@dataclass(frozen=True)
class Request:
    """One resource of a rule's jobs, from the cost its rule declares: ``which`` is
    ``runtime`` (minutes) or ``mem_mb``. Snakemake calls it per job with the job's
    wildcards and its rule's name; :func:`galu.workflow.planning.dag.rule_cost` reads ``cost``
    back."""

    cost: RuleCost
    model: CostModel
    config: Mapping[str, Any]
    which: str

    def __call__(self, wildcards: Any, rulename: str) -> int:
        runtime, mem_mb = job_request(self.model, self.config, rulename, wildcards, self.cost)
        return runtime if self.which == "runtime" else mem_mb


def cost_preflight(
    model: CostModel,
    config: Mapping[str, Any],
    planned: Iterable[tuple[PlannedJob, int | None]],
    mem_gb: float,
) -> tuple[list[str], list[str]]:
    """:func:`problems` of the jobs a run is about to start: each with the runtime it
    declares, as Snakemake planned them."""
    predictions, declared = [], {}
    for each, runtime in planned:
        prediction = model.predict(each.job, config, each.cost)
        predictions.append(prediction)
        declared[each.job.label] = runtime or declared_runtime(prediction, each.cost)
    return problems(Plan(predictions, declared, 1, 0), mem_gb)


# The memory a run may use in GB, when less than the machine's (e.g. a container's limit).
MEMORY_ENV = "GALU_MACHINE_MEM_GB"


def machine_memory_gb() -> float:
    """This machine's physical memory in GB, or :data:`MEMORY_ENV` when set. A setting that
    is not a finite positive number is a ValueError naming it (NaN would switch the memory
    check off: every comparison with it is false)."""
    value = os.environ.get(MEMORY_ENV)
    if value:
        return memory_gb(value, f"{MEMORY_ENV}={value}")
    return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 1e9


def memory_gb(value: str | float, where: str) -> float:
    """``value`` as a memory size in GB, or a ValueError naming ``where`` it came from."""
    try:
        number = float(value)
    except (TypeError, ValueError):
        number = math.nan
    if not (math.isfinite(number) and number > 0):
        raise ValueError(f"{where} is not a memory size: give a positive number of GB, e.g. 16")
    return number


def format_problems(errors: Sequence[str], warnings: Sequence[str]) -> list[str]:
    return [f"ERROR {e}" for e in errors] + [f"WARNING {w}" for w in warnings]


# The paper's own settings, planned on one GPU for the README's paper-level section: what a
# reduced paper-level run leaves to a GPU.
PAPER_CONFIGFILES = ("config/paper.yaml",)


def paper_gpu_text(root: str | os.PathLike[str]) -> str:
    """One sentence: the GPU time ``config/paper.yaml`` needs per stage on one GPU, each
    marked ``*`` where part of it rests on the assumed speed-up
    (:mod:`galu.workflow.planning.costs`)."""
    from galu.workflow.planning.dag import planned_jobs
    from galu.workflow.settings.runconfig import run_config

    config = run_config(root, list(PAPER_CONFIGFILES))
    jobs = planned_jobs(root, PAPER_CONFIGFILES)
    plan = make_plan(config, jobs, CostModel.load(Path(root) / CONSTANTS), cores=2, gpus=1)
    gpu = [p for p in plan.predictions if p.gpu]
    stages = [s for s in STAGE_ORDER if any(p.job.stage == s for p in gpu)]
    parts = []
    for stage in stages:
        ps = [p for p in gpu if p.job.stage == stage]
        mark = "*" if _device(ps) == "GPU*" else ""
        parts.append(f"{stage} {_duration(sum(p.seconds for p in ps))}{mark}")
    measured = sum(p.seconds for p in gpu if p.gpu_measured)
    total = sum(p.seconds for p in gpu)
    cpu = sum(p.seconds for p in plan.predictions if not p.gpu)
    rules = ", ".join(sorted({f"`{p.job.rule}`" for p in gpu if p.gpu_measured}))
    return (
        "At the paper's own settings (`config/paper.yaml`, every reduction undone) the"
        f" workflow needs a GPU: `galu plan --configfile {' '.join(PAPER_CONFIGFILES)} --gpus 1`"
        f" plans {_duration(total)} of one GPU ({', '.join(parts)}) and {_duration(cpu)} of"
        f" CPU; {measured / total:.0%} of the GPU time from speed-ups measured on a GPU"
        f" ({rules}; lower bounds: workflow/costs/gpu.yaml), the rest (*) from an assumed"
        " speed-up."
    )
