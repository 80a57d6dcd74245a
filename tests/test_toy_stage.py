"""A fourth paper, added the way CONTRIBUTING.md's "Adding a stage" says, in a scratch copy.

The toy stage computes the partial sums of 1/k² (one compute rule, one table), draws them
(one figure), says what its data show (one caption sentence), checks its settings (one
cross-key check) and claims they approach pi²/6 (one claim). Its files are written into a copy
of the repository; no machinery module (nothing under galu/workflow/, no Snakefile or shared
rule file) is touched. The tiny run then makes its table and figure, judges its claim, plans
it (`galu plan`) and gives it DVC deps (`galu dvc --update`) from its declaration alone.
"""

from __future__ import annotations

import json
import math

import pandas as pd
import pytest
import yaml
from test_reliability_support import OVERLAY, TINY, smk, tiny_repo

from conftest import run, tool

pytestmark = pytest.mark.slow

N = 200
FILES = {
    "galu/toy/__init__.py": '"""A toy paper: the Basel problem, sum of 1/k^2 = pi^2/6."""\n',
    "galu/toy/sums.py": '''"""Partial sums of the Basel series."""

import numpy as np
import pandas as pd


def sum_table(n: int) -> pd.DataFrame:
    """k and s_k = sum of 1/j^2 for j <= k, for k = 1..n."""
    k = np.arange(1, n + 1)
    return pd.DataFrame({"k": k, "partial_sum": np.cumsum(1.0 / k**2)})
''',
    "galu/toy/figures.py": '''"""The toy stage's one figure."""

from galu.plotting import plt


def draw_sums(tables, *, scale):
    """The partial sums against k."""
    fig, ax = plt.subplots()
    ax.plot(tables["sums"]["k"], tables["sums"]["partial_sum"])
    ax.set_title(f"Basel partial sums ({scale} scale)")
    return fig


DRAW = {"sums": draw_sums}
''',
    "galu/toy/stage.py": '''"""The toy stage's declaration."""

from galu.declarations import Figure, Job, Stage, Table


def checks(config):
    if config["seed"] == 77:
        yield "seed: 77 is the toy stage's unlucky seed; pick another"


def figures(config):
    table = Table("results/toy/sums.csv", ("galu.toy.sums.sum_table",))
    return [Figure("sums", "sums", "toy_sums.rst", "Partial sums", {"sums": table})]


def jobs(config):
    return [Job("toy", "toy_sums", "toy/sums")]


STAGE = Stage(
    name="toy", paper="toy", category="Toy", order=5, figures=figures, jobs=jobs,
    checks=checks,
)
''',
    "galu/toy/sentences.py": '''"""What the toy figure's data show."""


def describe(tables):
    sums = tables["results/toy/sums.csv"]
    return [f"After {len(sums)} terms the partial sum is {sums['partial_sum'].iloc[-1]:.4f}."]


SENTENCES = {"figures/toy/sums.png": (("results/toy/sums.csv",), describe)}
''',
    "scripts/toy_sums.py": '''"""Partial sums -> results/toy/sums.csv."""

from galu.toy.sums import sum_table
from galu.workflow.output import Run

run = Run.from_snakemake(snakemake)
run.write_csv(sum_table(snakemake.params.n), snakemake.output.csv)
''',
    "workflow/rules/toy.smk": f"""rule toy_sums:
    output:
        **with_sidecars(csv=out("results/toy/sums.csv")),
    log:
        job_log("toy/sums"),
    benchmark:
        job_benchmark("toy/sums")
    conda:
        ENV
    threads: 1
    resources:
        **job_resources("toy_sums"),
    params:
        n={N},
    script:
        "../../scripts/toy_sums.py"


stage_targets("toy", [rules.toy_sums.output.csv])
""",
    "workflow/report/toy_sums.rst": (
        "Partial sums of 1/k². Drawn by ``draw_sums`` (``galu.toy.figures``) from the table"
        " made by ``galu.toy.sums.sum_table``.\n"
    ),
}
CLAIM = {
    "id": "toy_basel",
    "paper": "toy",
    "section": "Euler (1734)",
    "statement": "The partial sums of 1/k^2 approach pi^2/6 (within 1/n at n terms).",
    "figure": "figures/toy/sums.png",
    "source": "results/toy/sums.csv",
    "where": f"k == {N}",
    "expression": f"abs(partial_sum - {math.pi**2 / 6!r})",
    "reduce": "max",
    "compare": "at_most",
    "expected": 0.0,
    "tolerance": 1.0 / N,
    "justification": "the tail of the series is below 1/n.",
}
DVC_STAGE = """
  toy:
    cmd: >-
      snakemake --cores all --allowed-rules toy_sums toy_plot_sums
      -- results/toy/sums.csv figures/toy/sums.png
    deps:
      - workflow/rules/toy.smk
    outs:
      - results/toy:
          persist: true
      - figures/toy:
          persist: true
"""


def test_a_toy_stage_runs_with_its_figure_claim_plan_and_dvc_stage(tmp_path):
    overlay = {**TINY, "stages": ["toy"], "report": {"on_success": False}}
    root = tiny_repo(tmp_path / "repo", overlay)
    for rel, text in FILES.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    with (root / "workflow/claims.yaml").open("a") as claims:
        claims.write("\n" + yaml.safe_dump([CLAIM], sort_keys=False))
    dvc = root / "dvc.yaml"
    dvc.write_text(dvc.read_text().replace("\nstages:\n", "\nstages:" + DVC_STAGE, 1))
    # the stage's files, and the two shared data files it adds an entry to: nothing else
    assert not any(rel.startswith("galu/workflow/") for rel in FILES)
    assert len(FILES) + 2 <= 12

    smk(root, "--cores", "2")
    sums = pd.read_csv(root / "results/toy/sums.csv")
    assert len(sums) == N and sums["partial_sum"].iloc[0] == 1.0
    figure = json.loads((root / "figures/toy/sums.png.meta.json").read_text())
    assert figure["drawn_by"] == "galu.toy.figures.draw_sums"
    assert figure["params"]["computed_by"] == {"sums": ["galu.toy.sums.sum_table"]}
    assert "galu/toy/figures.py" in figure["code"]["files"]
    # its caption states what the data show (its sentences.py, found by name)
    caption = (root / "results/captions/toy/sums.rst").read_text()
    assert f"After {N} terms the partial sum is 1.6399." in caption
    assert (
        "galu/toy/sentences.py"
        in json.loads((root / "results/claims.csv.meta.json").read_text())["code"]["files"]
    )
    # its cross-key check stops a run before any job, beside the other stages' checks
    refused = smk(root, "-n", "--config", "seed=77", check=False)
    assert refused.returncode != 0 and "toy stage's unlucky seed" in refused.stderr
    claims = pd.read_csv(root / "results/claims.csv").set_index("claim_id")
    assert claims.loc["toy_basel", "verdict"] == "pass"
    assert set(claims.loc[claims["paper"] != "toy", "verdict"]) == {"not_run"}

    # the copy's own library (the installed one is this checkout's, without the toy stage)
    own = {"env": {"PYTHONPATH": str(root)}}
    plan = run([tool("galu"), "plan", "--configfile", OVERLAY], root, **own).stdout
    assert "toy_sums" in plan and "toy_plot_sums" in plan
    run([tool("galu"), "dvc", "--update"], root, **own)
    deps = yaml.safe_load(dvc.read_text())["stages"]["toy"]["deps"]
    assert "galu/toy/sentences.py" in yaml.safe_load(dvc.read_text())["stages"]["report"]["deps"]
    assert {"galu/toy/sums.py", "galu/toy/figures.py", "galu/toy/stage.py", "scripts/toy_sums.py",
            "scripts/plot.py", "workflow/rules/figures.smk"} <= set(deps)  # fmt: skip
