"""The jobs and their rules' costs read back from Snakemake's DAG (galu/workflow/planning/dag.py;
the internals it uses are pinned in test_snakemake_internals.py)."""

from __future__ import annotations

import re

import pytest

from galu.normalization import costs as norm_costs
from galu.scm import costs as scm_costs
from galu.workflow.planning.costs import RuleCost
from galu.workflow.planning.dag import benchmark_name, planned_jobs, read_dag

from conftest import REPO, run, tool


@pytest.fixture(scope="module")
def paper_cpu():
    return {
        p.job.label: p for p in planned_jobs(REPO, ["config/paper.yaml", "config/paper-cpu.yaml"])
    }


def test_each_job_carries_the_cost_its_rule_declares(paper_cpu):
    train = paper_cpu["normalization_train[norm_activation=relu,norm_depth=60]"]
    assert train.cost.formula is norm_costs.training and train.cost.twin is None
    assert train.job.benchmark == "normalization/train_relu_depth60"
    assert train.job.stage == "normalization" and train.cost.measured
    wide = paper_cpu["normalization_train_wide[norm_activation=relu,norm_depth=60]"]
    assert wide.cost.formula == norm_costs.AtWideWidth(norm_costs.training)
    assert wide.cost.twin == "normalization_train"
    assert wide.job.benchmark == "normalization/wide/train_relu_depth60"
    assert paper_cpu["scm_ode[scm_setting=perceptron]"].cost.formula is scm_costs.ode
    # a collecting rule names no formula: its fitted constants alone
    assert paper_cpu["scm_trajectories"].cost == RuleCost()
    # the shared data rules' benchmarks sit outside the scale's folder
    download = paper_cpu["download[dataset=cifar10]"]
    assert (download.job.stage, download.job.benchmark) == ("data", "data/download_cifar10")
    assert "data/raw/cifar10/sources.json" in download.outputs


def test_the_dag_names_every_rule_and_what_rule_all_asks_for():
    dag = read_dag(REPO, [], {"stages": ["scm"]})
    assert dag.rules[:2] == ("download", "prepare") and "all" not in dag.rules
    assert "normalization_train" in dag.rules  # defined whatever the stages run
    assert "results/scm/trajectories.csv" in dag.targets
    assert not any(t.startswith("results/normalization") for t in dag.targets)
    assert {p.job.stage for p in dag.jobs} == {"scm", "report"}


def test_benchmark_names_are_the_paths_under_the_benchmarks_folder():
    assert benchmark_name("logs/paper-cpu/benchmarks/scm/perceptron_ode.tsv") == (
        "scm/perceptron_ode"
    )
    assert benchmark_name("logs/benchmarks/data/prepare_mnist.tsv") == "data/prepare_mnist"


def test_a_runtime_chosen_by_the_wildcards_is_what_snakemake_requests(repo_copy):
    """memorization.min_width.<criterion>.runtime_min: each search job asks the scheduler
    for its own criterion's minutes (the rule's runtime_min is a function of the wildcards)."""
    overlay = repo_copy / "config/minutes.yaml"
    overlay.write_text("memorization:\n  min_width:\n    mse:\n      runtime_min: 7\n")
    dry = run(
        [tool("snakemake"), "-n", "-F", "--cores", "1", "--configfile", str(overlay), "--",
         "results/memorization/min_width.csv"],
        repo_copy,
    ).stdout  # fmt: skip
    blocks = re.split(r"\n(?=\[|rule )", dry)
    runtime = {
        re.search(r"criterion=(\w+)", b).group(1): int(re.search(r"runtime=(\d+)", b).group(1))
        for b in blocks
        if b.startswith("rule memorization_search:")
    }
    assert runtime["mse"] == 7 and runtime["zero_error"] > 5  # the model's: 2x + 5 minutes


def test_a_parse_that_fails_says_why(capsys):
    with pytest.raises(SystemExit):
        planned_jobs(REPO, [], {"seed": "not a number"})
    assert "seed" in capsys.readouterr().err
