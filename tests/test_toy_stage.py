"""A fourth paper, added the way CONTRIBUTING.md's "Adding a stage" says, in a scratch copy,
which then passes the checks the repository passes.

The toy stage computes the partial sums of 1/k² (one compute rule, one table with its column
contract), draws them (one figure), checks its settings (one cross-key check), claims they
approach pi²/6 (one claim) and declares its compute rule not measured yet (it runs with the
cost model's default constants, as its figure's plot rule does until measured). Its files
are written into a copy of the repository; the test
counts what it wrote there (git's view of the copy: at most ten paths, each named in
CONTRIBUTING.md's "Adding a stage"; no machinery module, no Snakefile or shared rule file, no
configuration). On the copy it then runs the style gates, `galu dvc`, and the copy's own
tests of what a stage must satisfy (configuration, declarations, table contracts, DVC deps,
repository files, the cost checks), which import the copy's galu and find the toy stage; then
the tiny run makes its table and figure, judges its claim and plans it (`galu plan`).
"""

from __future__ import annotations

import json
import math
import re
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
import yaml
from test_reliability_support import OVERLAY, TINY, smk, tiny_repo

from conftest import REPO, run, tool

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
    "galu/toy/stage.py": '''"""The toy stage's declaration (the Basel problem, Euler 1734)."""

from galu.declarations import Figure, Stage, Table


def checks(config):
    if config["seed"] == 77:
        yield "seed: 77 is the toy stage's unlucky seed; pick another"


def figures(config):
    table = Table("results/toy/sums.csv", ("galu.toy.sums.sum_table",))
    return [Figure("sums", "sums", "toy_sums.rst", "Partial sums", {"sums": table})]


# name, paper (a claim's), report section, place among the stages, figures
STAGE = Stage("toy", "toy", "Toy", 5, figures, checks=checks)
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
    # not measured yet: the cost model's default constants until a quick run's benchmarks
    # are added (workflow/costs/fit.py; CONTRIBUTING.md, "A new rule's costs")
    resources:
        **job_resources(measured=False),
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
    "workflow/schemas/tables/toy_sums.yaml": """\
# The Basel series' partial sums: one row per number of terms k.
path: toy/sums.csv
key: [k]
columns:
  k: {type: integer, min: 1}
  partial_sum: {type: number, min: 0}
""",
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
      written by galu dvc --update
    deps:
      - workflow/rules/toy.smk
    outs:
      - results/toy:
          persist: true
      - figures/toy:
          persist: true
"""
# At most this many files written to add a stage (CONTRIBUTING.md, "Adding a stage").
MAX_FILES = 10
# The copy's own tests of what every stage must satisfy: whole files, and the cost checks.
COPY_TESTS = (
    "tests/test_config.py",
    "tests/test_stages.py",
    "tests/test_tables.py",
    "tests/test_dvc_deps.py",
    "tests/test_repository_files.py",
    "tests/test_costs.py::test_every_quick_job_is_measured_and_predicted_within_a_factor_1_5",
    "tests/test_costs.py::test_only_a_rule_declared_unmeasured_runs_with_the_default_constants",
    "tests/test_costs.py::test_the_stored_constants_are_the_fit_of_the_stored_measurements",
    "tests/test_costs.py::test_the_job_list_read_in_process_is_the_one_the_snakemake_command_plans",
    "tests/test_costs.py::test_galu_plan_prints_every_stage_and_refuses_too_little_memory",
)


def changed(root: Path) -> set[str]:
    """The paths git sees changed or added in the copy (its commit is the repository as
    copied)."""
    out = subprocess.run(
        ["git", "status", "--porcelain", "--untracked-files=all", "-z"],
        cwd=root, capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    return {entry[3:] for entry in out.split("\0") if entry}


def named_in_contributing(stage: str) -> list[re.Pattern[str]]:
    """The paths CONTRIBUTING.md's "Adding a stage" names (``<paper>`` being ``stage``, any
    other ``<placeholder>`` a name), as patterns."""
    text = (REPO / "CONTRIBUTING.md").read_text()
    section = text.split("\n## Adding a stage\n", 1)[1].split("\n## ", 1)[0]
    paths = {p for p in re.findall(r"`([\w./<>-]+)`", section) if "/" in p or "." in p}
    return [
        re.compile(re.sub(r"<\w+>", "[a-z0-9_]+", re.escape(p.replace("<paper>", stage))))
        for p in paths
    ]


def test_a_toy_stage_passes_the_repositorys_checks_and_runs(tmp_path):
    overlay = {**TINY, "stages": ["toy"], "report": {"on_success": False}}
    root = tiny_repo(tmp_path / "repo", overlay)
    before = changed(root)  # the test's own run settings (OVERLAY)
    for rel, text in FILES.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    with (root / "workflow/claims.yaml").open("a") as claims:
        claims.write("\n" + yaml.safe_dump([CLAIM], sort_keys=False))
    dvc = root / "dvc.yaml"
    dvc.write_text(dvc.read_text().replace("\nstages:\n", "\nstages:" + DVC_STAGE, 1))

    # What adding the stage wrote: few files, each one CONTRIBUTING.md names, no machinery.
    written = changed(root) - before
    assert before == {OVERLAY}
    assert len(written) <= MAX_FILES, sorted(written)
    patterns = named_in_contributing("toy")
    assert [w for w in written if not any(p.fullmatch(w) for p in patterns)] == []
    assert not any(w.startswith(("galu/workflow/", "config/")) for w in written)
    assert not {"Snakefile", "workflow/rules/common.smk", "workflow/rules/figures.smk"} & written

    # The copy's own library (the installed one is this checkout's, without the toy stage).
    own = {"env": {"PYTHONPATH": str(root)}}
    run([tool("galu"), "dvc", "--update"], root, **own)
    run([tool("galu"), "dvc"], root, **own)
    toy = yaml.safe_load(dvc.read_text())["stages"]["toy"]
    assert toy["cmd"] == (
        "snakemake --cores all --allowed-rules toy_sums toy_plot_sums"
        " -- results/toy/sums.csv figures/toy/sums.png"
    )
    deps = toy["deps"]
    assert {"galu/toy/sums.py", "galu/toy/figures.py", "galu/toy/stage.py", "scripts/toy_sums.py",
            "scripts/plot.py", "workflow/rules/figures.smk"} <= set(deps)  # fmt: skip

    # The style gates, and the copy's own tests, on the copy.
    run([tool("ruff"), "check", "."], root)
    run([tool("ruff"), "format", "--check", "."], root)
    run([tool("snakefmt"), "--check", "Snakefile", "workflow"], root)
    inner = ["-p", "no:cacheprovider", "--basetemp", str(tmp_path / "t")]  # its own temporaries
    tests = run([sys.executable, "-m", "pytest", *inner, *COPY_TESTS], root, **own)
    # they tested the copy: its checkout (conftest.REPO), its galu, which declares the toy stage
    header = f"galu checkout: {root.resolve()}; package: {root.resolve() / 'galu'}; stages: "
    assert re.search(rf"^{re.escape(header)}.* toy$", tests.stdout, re.M), tests.stdout[:2000]
    assert re.search(r"^=+ \d+ passed", tests.stdout.splitlines()[-1]), tests.stdout[-2000:]

    # The tiny run: the table, the figure and its caption, the claim's verdict.
    smk(root, "--cores", "2")
    sums = pd.read_csv(root / "results/toy/sums.csv")
    assert len(sums) == N and sums["partial_sum"].iloc[0] == 1.0
    figure = json.loads((root / "figures/toy/sums.png.meta.json").read_text())
    assert figure["drawn_by"] == "galu.toy.figures.draw_sums"
    assert figure["params"]["computed_by"] == {"sums": ["galu.toy.sums.sum_table"]}
    assert "galu/toy/figures.py" in figure["code"]["files"]
    caption = (root / "results/captions/toy/sums.rst").read_text()
    assert "Partial sums of 1/k². Drawn by ``draw_sums``" in caption
    assert "**pass** ``toy_basel``: The partial sums of 1/k^2 approach" in caption
    # its cross-key check stops a run before any job, beside the other stages' checks
    refused = smk(root, "-n", "--config", "seed=77", check=False)
    assert refused.returncode != 0 and "toy stage's unlucky seed" in refused.stderr
    claims = pd.read_csv(root / "results/claims.csv").set_index("claim_id")
    assert claims.loc["toy_basel", "verdict"] == "pass"
    assert set(claims.loc[claims["paper"] != "toy", "verdict"]) == {"not_run"}
    plan = run([tool("galu"), "plan", "--configfile", OVERLAY], root, **own).stdout
    assert "toy_sums" in plan and "toy_plot_sums" in plan
