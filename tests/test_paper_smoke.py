"""The paper scale's smoke run: every paper-scale rule, with the paper's shapes, in minutes.

``config/paper-smoke.yaml`` keeps the paper's grids and sizes and cuts steps, epochs and
alpha (each cut written down there). A shape, memory or code error in a path only the paper
scale takes fails this test instead of a cluster run hours in; the run's own pre-flight
refuses to start when a job is predicted to need more memory than the machine has.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from galu.workflow.planning.costfit import read_benchmarks
from galu.workflow.planning.dag import planned_jobs
from galu.workflow.settings.runconfig import run_config

from conftest import copy_repo, run, tool

pytestmark = pytest.mark.slow

SMOKE = ["config/paper.yaml", "config/paper-smoke.yaml"]


def _table(root: Path, name: str) -> pd.DataFrame:
    """A result table wherever this scale writes it (its own output root, or results/)."""
    found = sorted(root.glob(f"results/**/{name}"))
    assert found, f"no {name} under {root / 'results'}"
    return pd.read_csv(found[0])


@pytest.fixture(scope="module")
def smoke_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = copy_repo(tmp_path_factory.mktemp("smoke"))
    run([tool("snakemake"), "--cores", "2", "--configfile", *SMOKE], root)
    return root


def test_every_rule_the_paper_scale_plans_ran(smoke_run):
    config = run_config(smoke_run, SMOKE)
    jobs = [p.job for p in planned_jobs(smoke_run, SMOKE)]
    assert len(jobs) > 60  # the paper's grids, not the quick ones
    ran = read_benchmarks(smoke_run, config["scale"])
    assert [j.label for j in jobs if j.benchmark not in ran] == []
    paper = planned_jobs(smoke_run, ["config/paper.yaml"])
    assert {j.rule for j in jobs} == {p.job.rule for p in paper}
    # Nothing of this scale was written where a quick run's outputs go.
    assert not (smoke_run / "logs/benchmarks/scm").exists()


def test_the_paper_shapes_were_used(smoke_run):
    paper = run_config(smoke_run, ["config/paper.yaml"])
    curves = _table(smoke_run, "relu_depth100_curves.csv")
    assert sorted(curves["width"].unique()) == paper["normalization"]["trainability"]["widths"]
    zero = _table(smoke_run, "min_width_zero_error.csv")
    assert zero["m"].max() == 2048 and zero["d"].max() == 64
    sims = _table(smoke_run, "trajectories.csv")
    assert set(sims["N"].dropna()) == {paper["scm"]["simulation"]["N"]}
    images = _table(smoke_run, "mnist_grid.csv")
    assert (
        sorted(images["width"][images["width"] > 0].unique())
        == paper["generalization"]["images"]["widths"]
    )


def test_the_smoke_outputs_pass_the_audit(smoke_run):
    run([tool("galu"), "audit"], smoke_run)
