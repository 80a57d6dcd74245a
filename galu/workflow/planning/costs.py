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
rules' here, each stage's in its ``galu/<paper>/costs.py``. A rule names its formula in its
``resources:`` (:class:`RuleCost`, through ``job_resources`` of workflow/rules/common.smk);
``galu plan`` reads the jobs and their rules' costs back from Snakemake's own DAG
(:mod:`galu.workflow.planning.dag`).

Times are for one CPU core (every training rule runs with ``threads: 1``) of the reference
machine the constants were fitted for; other measured machines' speed factors are stored
beside them (:mod:`galu.workflow.planning.costfit`), and ``galu plan --speed`` scales a plan by one.
A GPU rule's GPU time is its CPU prediction's work (the time beyond its start-up ``base_s``) divided
by the rule's speed-up measured on a GPU (``gpu_speedups`` of the constants file, fitted from
``workflow/costs/gpu.yaml``), or, for a rule never timed on a GPU, by the assumed
``gpu_speedup``, which ``galu plan`` flags as uncalibrated.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from galu.declarations import Config, Formula, Job, Sizes, Wildcards
from galu.workflow.data.registry import get_dataset
from galu.workflow.settings.config import load_yaml

CONSTANTS = "workflow/costs/constants.yaml"

# -- the data rules' formulas (workflow/rules/data.smk names them) ---------------------------


def download_sizes(config: Config, wc: Wildcards) -> Sizes:
    """Verifying (hashing) and linking or copying the archives: their bytes."""
    return Sizes(work=sum(f.size for f in get_dataset(wc["dataset"]).files))


def prepare_sizes(config: Config, wc: Wildcards) -> Sizes:
    """Decompressing and converting every image: its values."""
    data = get_dataset(wc["dataset"])
    values = (data.n_train + data.n_test) * math.prod(data.image_shape)
    return Sizes(work=values, bytes=values * 2)


@dataclass(frozen=True)
class RuleCost:
    """What a rule's ``resources: **job_resources(...)`` (workflow/rules/common.smk) says of
    its cost, the one place it is said: its ``formula`` (None: its fitted constants only),
    the minutes a configuration sets for its ``runtime`` (``runtime_min``: a number, or a
    function of the job's wildcards; 0: the cost model's), the rule whose constants it
    borrows until it is measured itself (``twin``: the same script at other settings), and
    whether it is ``measured`` (a new rule runs with the ``default`` constants of
    ``workflow/costs/constants.yaml`` until a finished run's benchmarks measure it:
    ``workflow/costs/fit.py --add``; CONTRIBUTING.md, "A new rule's costs")."""

    formula: Formula | None = None
    runtime_min: int | Callable[[Wildcards], int] = 0
    twin: str | None = None
    measured: bool = True

    def sizes(self, config: Config, wildcards: Wildcards) -> Sizes:
        """The sizes of one job; a rule without a formula costs only its constants."""
        return self.formula(config, wildcards) if self.formula else Sizes()

    def runtime_override(self, wildcards: Wildcards) -> int:
        """The ``runtime_min`` the configuration sets for a job (0: none)."""
        value = self.runtime_min(wildcards) if callable(self.runtime_min) else self.runtime_min
        return int(value)


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

    def constants(self, rule: str, twin: str | None = None) -> RuleConstants:
        """A rule's constants; one never measured gets its ``twin``'s (:class:`RuleCost`),
        or else (a new rule, declared not measured) the default's."""
        return self.rules.get(rule) or self.rules.get(twin or "", self.default)

    def cpu_seconds(self, rule: str, sizes: Sizes, twin: str | None = None) -> float:
        c = self.constants(rule, twin)
        return c.base_s + c.rate * sizes.work + c.step_s * sizes.steps

    def predict(self, job: Job, config: Config, cost: RuleCost, gpus: bool = True) -> Prediction:
        """The prediction for ``job`` of a rule whose resources declare ``cost``. ``gpus``:
        whether the machine has GPUs; a GPU rule without one runs on the CPU (as do all
        rules with ``device: cpu``)."""
        sizes = cost.sizes(config, job.wildcards)
        c = self.constants(job.rule, cost.twin)
        seconds = self.cpu_seconds(job.rule, sizes, cost.twin)
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
