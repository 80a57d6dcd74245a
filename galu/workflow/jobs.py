"""The workflow's jobs, expanded from a configuration the way the rule files expand them.

One :class:`Job` per Snakemake job of ``rule all`` (rule name, wildcards, where its benchmark
TSV lands). :func:`workflow_jobs` mirrors ``workflow/rules/*.smk`` (the plot jobs: from the stages'
declarations, :mod:`galu.workflow.stages`, as ``figures.smk`` makes them); ``tests/test_costs.py``
checks it against Snakemake's own dry run for the quick, paper and smoke configurations, so
the two cannot drift apart silently. Used by the cost plan (:mod:`galu.workflow.costs`).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from galu.workflow.stages import stages

# The stages a config's `stages` may name (each is one paper's experiments), as declared.
EXPERIMENT_STAGES = tuple(stage.name for stage in stages())
STAGE_ORDER = ("data", *EXPERIMENT_STAGES, "report")
IMAGE_DATASETS = ("mnist", "fashion_mnist")
SYNTHETIC_TASKS = ("clusters", "linear", "parity")
SCM_SETTINGS = ("perceptron", "relu_k2m2", "relu_k3m2", "erf_k3m2", "relu_k2m3")
# Rules that run once per configuration, whatever its grids: (stage, rule, benchmark path).
SINGLE = (
    ("memorization", "memorization_underparam", "memorization/underparam"),
    ("memorization", "memorization_min_width", "memorization/min_width"),
    ("generalization", "generalization_accuracy", "generalization/accuracy"),
    ("scm", "scm_trajectories", "scm/trajectories"),
    ("scm", "scm_stability", "scm/stability"),
    ("scm", "scm_schedules", "scm/schedules"),
    ("normalization", "normalization_coefficients", "normalization/coefficients"),
    ("normalization", "normalization_isometry", "normalization/isometry"),
    ("normalization", "normalization_trainability", "normalization/trainability"),
    ("normalization", "normalization_spectra", "normalization/spectra"),
    ("normalization", "normalization_correlations", "normalization/correlations"),
    ("report", "claims", "report/claims"),
)


@dataclass(frozen=True)
class Job:
    """One job: its stage, rule, wildcards and benchmark file (``logs/benchmarks/<x>.tsv``)."""

    stage: str
    rule: str
    benchmark: str
    wildcards: Mapping[str, str] = field(default_factory=dict)

    @property
    def label(self) -> str:
        """``rule`` or ``rule[key=value,...]``, as the plan prints it."""
        if not self.wildcards:
            return self.rule
        inner = ",".join(f"{k}={v}" for k, v in self.wildcards.items())
        return f"{self.rule}[{inner}]"


def stage_of(rule: str) -> str:
    """The stage a rule belongs to: its name's first word for the experiment stages
    (``scm_ode`` -> ``scm``), ``report`` for the claims and report rules, else ``data``."""
    head = rule.split("_")[0]
    if head in EXPERIMENT_STAGES:
        return head
    return "data" if rule in ("download", "prepare") else "report"


def _datasets(config: Mapping[str, Any]) -> list[str]:
    """Datasets some stage of the run reads: the generalization stage's image datasets, and
    CIFAR-10 for the normalization stage."""
    names = []
    if "generalization" in config["stages"]:
        names += [d for d in config["generalization"]["datasets"] if d in IMAGE_DATASETS]
    if "normalization" in config["stages"]:
        names.append("cifar10")
    return sorted(names)


def _data_jobs(config: Mapping[str, Any]) -> Iterator[Job]:
    for name in _datasets(config):
        wc = {"dataset": name}
        yield Job("data", "download", f"data/download_{name}", wc)
        yield Job("data", "prepare", f"data/prepare_{name}", wc)


def _plot_jobs(config: Mapping[str, Any]) -> Iterator[Job]:
    """One job per figure each stage declares (workflow/rules/figures.smk)."""
    for stage in stages():
        for figure in stage.figures(config):
            name = f"{stage.name}/plot_{figure.name}"
            yield Job(stage.name, f"{stage.name}_plot_{figure.name}", name)


def _experiment_jobs(config: Mapping[str, Any]) -> Iterator[Job]:
    for criterion in ("mse", "zero_error"):
        for part in range(config["memorization"]["min_width"][criterion].get("parts", 1)):
            yield Job(
                "memorization", "memorization_search",
                f"memorization/min_width_{criterion}_part{part}",
                {"criterion": criterion, "part": str(part)},
            )  # fmt: skip
        yield Job(
            "memorization", "memorization_search_table",
            f"memorization/stack_min_width_{criterion}", {"criterion": criterion},
        )  # fmt: skip
    for name in config["generalization"]["datasets"]:
        if name in IMAGE_DATASETS:
            yield Job(
                "generalization", "generalization_images", f"generalization/{name}",
                {"gen_image": name},
            )  # fmt: skip
        else:
            yield Job(
                "generalization", "generalization_synthetic", f"generalization/{name}",
                {"gen_task": name},
            )  # fmt: skip
    for setting in SCM_SETTINGS:
        for source in ("ode", "sim"):
            rule = "scm_ode" if source == "ode" else "scm_simulation"
            yield Job("scm", rule, f"scm/{setting}_{source}", {"scm_setting": setting})
    train = config["normalization"]["trainability"]
    for act in train["activations"]:
        wc = {"norm_activation": act}
        yield Job("normalization", "normalization_lr_sweep", f"normalization/lr_sweep_{act}", wc)
        for depth in train["depths"]:
            yield Job(
                "normalization", "normalization_train",
                f"normalization/train_{act}_depth{depth}",
                {"norm_activation": act, "norm_depth": str(depth)},
            )  # fmt: skip


def workflow_jobs(config: Mapping[str, Any]) -> list[Job]:
    """Every job ``snakemake --forceall`` plans for ``config`` (``rule all`` excluded)."""
    jobs = [*_experiment_jobs(config), *_plot_jobs(config)]
    jobs += [Job(stage, rule, bench) for stage, rule, bench in SINGLE]
    made = {*config["stages"], "report"}  # the stages `rule all` asks for, and the verdict
    return [*_data_jobs(config), *(job for job in jobs if job.stage in made)]
