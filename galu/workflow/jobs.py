"""The workflow's jobs, expanded from a configuration the way the rule files expand them.

One :class:`~galu.declarations.Job` per Snakemake job of ``rule all`` (rule name, wildcards,
where its benchmark TSV lands). :func:`workflow_jobs` reads each stage's compute jobs and
figures from its declaration (:mod:`galu.workflow.stages`; ``figures.smk`` makes a plot rule
per figure) and adds the data and report jobs; ``tests/test_costs.py`` checks the list
against Snakemake's own dry run for the quick, paper and smoke configurations, so the rule
files and the declarations cannot drift apart silently. Used by the cost plan
(:mod:`galu.workflow.costs`).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from galu.declarations import Job
from galu.workflow.stages import STAGE_NAMES, stage, stages

# The stages a config's `stages` may name (each is one paper's experiments), as declared.
EXPERIMENT_STAGES = STAGE_NAMES
STAGE_ORDER = ("data", *EXPERIMENT_STAGES, "report")
# The verdict: one job whatever the configuration.
CLAIMS = Job("report", "claims", "report/claims")


def stage_of(rule: str) -> str:
    """The stage a rule belongs to: its name's first word for the experiment stages
    (``scm_ode`` -> ``scm``), ``report`` for the claims and report rules, else ``data``."""
    head = rule.split("_")[0]
    if head in EXPERIMENT_STAGES:
        return head
    return "data" if rule in ("download", "prepare") else "report"


def _datasets(config: Mapping[str, Any]) -> list[str]:
    """The datasets the configured stages read (each stage's declared ``datasets``)."""
    wanted = set(config["stages"])
    return sorted({d for each in stages() if each.name in wanted for d in each.datasets(config)})


def _data_jobs(config: Mapping[str, Any]) -> Iterator[Job]:
    for name in _datasets(config):
        wc = {"dataset": name}
        yield Job("data", "download", f"data/download_{name}", wc)
        yield Job("data", "prepare", f"data/prepare_{name}", wc)


def _stage_jobs(config: Mapping[str, Any]) -> Iterator[Job]:
    """Each asked-for stage's compute jobs, then one plot job per figure it declares."""
    for each in stages():
        if each.name not in config["stages"]:
            continue
        yield from each.jobs(config)
        yield from (each.plot_job(figure) for figure in each.figures(config))


def runtime_override(config: Mapping[str, Any], job: Job) -> int:
    """The ``runtime_min`` a configuration sets for ``job`` (0: none, the model decides),
    as the stage of its rule declares it (the data and report rules have none)."""
    name = stage_of(job.rule)
    return stage(name).runtime_min(config, job) if name in EXPERIMENT_STAGES else 0


def workflow_jobs(config: Mapping[str, Any]) -> list[Job]:
    """Every job ``snakemake --forceall`` plans for ``config`` (``rule all`` excluded)."""
    return [*_data_jobs(config), *_stage_jobs(config), CLAIMS]
