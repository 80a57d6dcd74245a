"""Cost model of the workflow's jobs: seconds and peak memory per job, from its sizes.

Every job's cost is a formula in the sizes of its configuration and wildcards::

    seconds = base_s + rate * work + step_s * steps        mem_mb = base_mb + mem_rate * bytes / 1e6

``work`` counts the job's arithmetic in flops (the multiply-adds of the networks it trains,
times 6 for forward and backward, times steps and samples; n^3 of eigendecompositions;
updates of the simulated committee machines; ...), ``steps`` its Python-level iterations
(optimizer steps of each ensemble, simulation steps), which bound small networks more than
their arithmetic, and ``bytes`` what it holds at once. Rules without a formula (plots,
collectors) cost their constants only. The constants are fitted per rule by
``workflow/costs/fit.py`` from our own measurements (``workflow/costs/measurements.tsv``:
the benchmark TSVs of real quick and paper-smoke runs) and stored in
``workflow/costs/constants.yaml``; only the shape of each formula is written in code: the data
rules' here, each stage's in its ``galu/<paper>/costs.py`` (named by its declaration's
``costs``).

Times are for one CPU core (every training rule runs with ``threads: 1``) of the reference
machine the constants were fitted for; other measured machines' speed factors are stored
beside them (:mod:`galu.workflow.costfit`), and ``galu plan --speed`` scales a plan by one. A GPU
rule's GPU time is its CPU prediction's work (the time beyond its start-up ``base_s``) divided
by the rule's speed-up measured on a GPU (``gpu_speedups`` of the constants file, fitted from
``workflow/costs/gpu.yaml``), or, for a rule never timed on a GPU, by the assumed
``gpu_speedup``, which ``galu plan`` flags as uncalibrated.
"""

from __future__ import annotations

import importlib
import math
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from galu.declarations import Config, Formula, Job, Sizes, Wildcards
from galu.workflow.config import load_yaml
from galu.workflow.data.registry import get_dataset
from galu.workflow.stages import stages

CONSTANTS = "workflow/costs/constants.yaml"

# -- data ------------------------------------------------------------------------------------


def _download(config: Config, wc: Wildcards) -> Sizes:
    """Verifying (hashing) and linking or copying the archives: their bytes."""
    return Sizes(work=sum(f.size for f in get_dataset(wc["dataset"]).files))


def _prepare(config: Config, wc: Wildcards) -> Sizes:
    """Decompressing and converting every image: its values."""
    data = get_dataset(wc["dataset"])
    values = (data.n_train + data.n_test) * math.prod(data.image_shape)
    return Sizes(work=values, bytes=values * 2)


# rule -> its cost formula: the data rules', and each stage's (its declaration's ``costs``).
FORMULAS: dict[str, Formula] = {
    "download": _download,
    "prepare": _prepare,
    **{rule: formula for stage in stages() for rule, formula in stage.costs.items()},
}


# rule -> the measured rule whose constants it borrows: a formula with a ``twin`` (e.g.
# galu.normalization.costs.AtWideWidth, the same script at another width)
TWINS = {
    rule: formula.twin
    for stage in stages()
    for rule, formula in stage.costs.items()
    if isinstance(getattr(formula, "twin", None), str)
}


def _unmeasured() -> dict[str, str]:
    """rule -> its stage: the rules a stage declares not measured yet (``UNMEASURED``, a tuple
    of rule names, in its ``galu/<paper>/stage.py``, saying so). They run with the
    ``default`` constants of ``workflow/costs/constants.yaml`` until a finished run's
    benchmarks measure them (``workflow/costs/fit.py --add``; CONTRIBUTING.md, "A new rule's
    costs"); tests/test_costs.py accepts no other rule without measurements, and no measured
    rule still declared unmeasured."""
    return {
        rule: each.name
        for each in stages()
        for rule in getattr(importlib.import_module(f"galu.{each.name}.stage"), "UNMEASURED", ())
    }


UNMEASURED = _unmeasured()


def job_sizes(rule: str, config: Config, wildcards: Wildcards) -> Sizes:
    """The sizes of one job; rules without a formula cost only their constant."""
    formula = FORMULAS.get(rule)
    return formula(config, wildcards) if formula else Sizes()


# -- the model: constants fitted to measurements -------------------------------------------


@dataclass(frozen=True)
class RuleConstants:
    """One rule's fitted constants (see the module docstring)."""

    base_s: float
    rate: float = 0.0
    step_s: float = 0.0
    base_mb: float = 0.0
    mem_rate: float = 0.0


@dataclass(frozen=True)
class Prediction:
    """A job's predicted cost: ``seconds`` on one CPU core (GPU rules: on the GPU), peak
    resident memory in MB, whether it runs on a GPU, and whether that GPU time comes from a
    measured speed-up (``gpu_measured``) rather than the assumed one."""

    job: Job
    seconds: float
    mem_mb: float
    gpu: bool
    gpu_measured: bool = False


class CostModel:
    """Fitted constants per rule (``workflow/costs/constants.yaml``) applied to job sizes."""

    def __init__(self, constants: Mapping[str, Any]):
        self.gpu_speedup = float(constants["gpu_speedup"])
        # rule -> speed-up measured on a GPU (workflow/costs/gpu.yaml)
        self.gpu_speedups = {k: float(v) for k, v in constants.get("gpu_speedups", {}).items()}
        self.default = RuleConstants(**constants["default"])
        self.rules = {name: RuleConstants(**c) for name, c in constants["rules"].items()}
        # speed factor of each measured machine relative to the one the constants are for
        self.machines = {str(k): float(v) for k, v in constants.get("machines", {}).items()}

    @classmethod
    def load(cls, path: str | Path = CONSTANTS) -> CostModel:
        return cls(load_yaml(path))

    def speed(self, machine: str) -> float:
        """A measured machine's speed factor (1: the reference machine, or one never
        measured)."""
        return self.machines.get(machine, 1.0)

    def constants(self, rule: str) -> RuleConstants:
        """A rule's constants; one never measured gets its twin's (the same script at other
        settings, :data:`TWINS`), or else (a new rule, declared in :data:`UNMEASURED`) the
        default's."""
        return self.rules.get(rule) or self.rules.get(TWINS.get(rule, ""), self.default)

    def cpu_seconds(self, rule: str, sizes: Sizes) -> float:
        c = self.constants(rule)
        return c.base_s + c.rate * sizes.work + c.step_s * sizes.steps

    def predict(self, job: Job, config: Config, gpus: bool = True) -> Prediction:
        """``gpus``: whether the machine has GPUs; a GPU rule without one runs on the CPU
        (as do all rules with ``device: cpu``)."""
        sizes = job_sizes(job.rule, config, job.wildcards)
        c = self.constants(job.rule)
        seconds = self.cpu_seconds(job.rule, sizes)
        gpu = sizes.gpu and gpus and config.get("device") != "cpu"
        measured = gpu and job.rule in self.gpu_speedups
        if gpu:
            speedup = self.gpu_speedups.get(job.rule, self.gpu_speedup)
            seconds = c.base_s + (seconds - c.base_s) / speedup
        mem_mb = c.base_mb + c.mem_rate * sizes.bytes / 1e6
        return Prediction(job, seconds, mem_mb, gpu, measured)


# Requests: a job gets twice its predicted time (plus 5 minutes) and 1.5 times its predicted
# memory (plus 200 MB): shared machines and other CPUs run slower than ours, and a job
# killed at its limit loses everything it computed.
TIME_MARGIN, TIME_SLACK_MIN = 2.0, 5
MEM_MARGIN, MEM_SLACK_MB = 1.5, 200


def runtime_request(prediction: Prediction) -> int:
    """The ``runtime`` resource (minutes) the rule files declare for a job."""
    return math.ceil(TIME_MARGIN * prediction.seconds / 60) + TIME_SLACK_MIN


def mem_request(prediction: Prediction) -> int:
    """The ``mem_mb`` resource the rule files declare for a job."""
    return math.ceil(MEM_MARGIN * prediction.mem_mb) + MEM_SLACK_MB
