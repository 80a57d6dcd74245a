"""The workflow's jobs read back from Snakemake's own DAG, for what plans outside a run.

A job is declared once, in its rule (``workflow/rules/*.smk``): name, wildcards, inputs,
outputs, params, log and benchmark, and, in its ``resources:``, its cost
(:class:`~galu.workflow.planning.costs.RuleCost`: formula, runtime setting, twin). ``galu plan`` and
the cost fit (:mod:`galu.workflow.planning.costfit`) need every job of a configuration with its
rule's cost: :func:`planned_jobs` parses the Snakefile in this process, builds the DAG of
``snakemake --forceall --dry-run`` and reads both from it, so no job list is kept beside the
rules. Two Snakemake internals are used, because no public interface hands out the jobs of
a DAG or the callable behind a resource: ``Workflow._prepare_dag``/``_build_dag`` (what
``--dry-run`` and ``--dag`` call) and ``Resource._evaluator``;
``tests/test_snakemake_internals.py`` pins their source, so an upgrade that changes them
fails a test at once.
"""

from __future__ import annotations

import contextlib
import io
import os
import sys
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from galu.declarations import Job
from galu.workflow.planning.costs import RuleCost
from galu.workflow.planning.jobs import stage_of

# A rule whose resources do not come from job_resources (``rule all``) costs nothing.
NO_COST = RuleCost()


@dataclass(frozen=True)
class PlannedJob:
    """One job Snakemake plans, with the cost its rule declares and its files."""

    job: Job
    cost: RuleCost
    inputs: tuple[str, ...] = ()
    outputs: tuple[str, ...] = ()


@dataclass(frozen=True)
class Dag:
    """What Snakemake made of a configuration: every rule the workflow defines (in the order
    the rule files define them; ``rule all`` left out), every job ``--forceall`` plans, and
    what ``rule all`` asks for."""

    rules: tuple[str, ...]
    jobs: list[PlannedJob]
    targets: tuple[str, ...]


def rule_cost(rule: Any) -> RuleCost:
    """The :class:`RuleCost` a Snakemake rule's ``runtime`` resource was made from
    (``job_resources`` in workflow/rules/common.smk), or :data:`NO_COST`."""
    resource = rule.resources.get("runtime") if "runtime" in rule.resources.keys() else None
    evaluator = getattr(resource, "_evaluator", None)
    return getattr(evaluator, "cost", NO_COST)


def benchmark_name(path: str) -> str:
    """A benchmark file's name as the cost model keys it: the path under the scale's
    ``logs/.../benchmarks/`` (the data rules': under ``logs/benchmarks/``), no ``.tsv``."""
    parts = Path(path).with_suffix("").parts
    return "/".join(parts[parts.index("benchmarks") + 1 :])


def snakemake_job(job: Any) -> PlannedJob:
    """One of Snakemake's jobs as a :class:`PlannedJob`."""
    rule = job.rule.name
    wildcards = {str(k): str(v) for k, v in dict(job.wildcards.items()).items()}
    bench = benchmark_name(str(job.benchmark)) if job.benchmark else rule
    return PlannedJob(
        Job(stage_of(rule), rule, bench, wildcards),
        rule_cost(job.rule),
        tuple(str(f) for f in job.input),
        tuple(str(f) for f in job.output),
    )


@contextlib.contextmanager
def _quiet_in(root: Path) -> Iterator[None]:
    """Work in ``root`` (the Snakefile reads paths relative to it) with what the parse
    prints (Snakemake's config merges, "Building DAG of jobs", the pre-flight's notes) held
    back, and printed after all when the parse fails, to say why."""
    here, held = Path.cwd(), io.StringIO()
    os.chdir(root)
    try:
        with contextlib.redirect_stderr(held), contextlib.redirect_stdout(held):
            yield
    except BaseException:
        sys.stderr.write(held.getvalue())
        raise
    finally:
        os.chdir(here)


def planned_jobs(
    root: str | Path, configfiles: Sequence[str | Path] = (), config: Mapping[str, Any] = ()
) -> list[PlannedJob]:
    """Every job ``snakemake --forceall --dry-run`` plans in the checkout ``root`` with
    ``--configfile configfiles`` and the overrides ``config`` (a nested mapping, merged as
    ``--config`` is), each with its rule's cost."""
    return read_dag(root, configfiles, config).jobs


def read_dag(
    root: str | Path, configfiles: Sequence[str | Path] = (), config: Mapping[str, Any] = ()
) -> Dag:
    """The :class:`Dag` of :func:`planned_jobs`' configuration."""
    from snakemake.api import SnakemakeApi
    from snakemake.settings.types import (
        ConfigSettings,
        DAGSettings,
        OutputSettings,
        Quietness,
        ResourceSettings,
        StorageSettings,
    )

    root = Path(root).resolve()
    files = [Path(f) if Path(f).is_absolute() else root / f for f in configfiles]
    with _quiet_in(root), SnakemakeApi(OutputSettings(quiet={Quietness.ALL}, dryrun=True)) as api:
        workflow_api = api.workflow(
            resource_settings=ResourceSettings(cores=1),
            config_settings=ConfigSettings(configfiles=files, config=dict(config)),
            storage_settings=StorageSettings(),
            snakefile=root / "Snakefile",
        )
        dag_api = workflow_api.dag(dag_settings=DAGSettings(forceall=True))
        workflow = workflow_api._workflow
        workflow.dag_settings = dag_api.dag_settings
        workflow._prepare_dag(
            forceall=True, ignore_incomplete=True, lock_warn_only=True, nolock=True
        )
        workflow._build_dag()
        jobs = list(workflow.dag.jobs)
        return Dag(
            rules=tuple(r.name for r in workflow.rules if r.name != "all"),
            jobs=[snakemake_job(j) for j in jobs if j.rule.name != "all"],
            targets=tuple(str(f) for j in jobs if j.rule.name == "all" for f in j.input),
        )
