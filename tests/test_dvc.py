"""DVC over the Snakemake workflow, in a throw-away repository: repro, push, pull."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pandas as pd
import pytest

from galu.workflow.settings.config import load_yaml

from conftest import REPO, copy_of_run, run, strict_json, tool

pytestmark = pytest.mark.slow


FOLDERS = ("results", "figures")
COUNTS, SUMMARY = "results/claims_counts.json", "results/claims_summary.json"


def digests(root: Path, folders=FOLDERS) -> dict[str, bytes]:
    return {
        p.relative_to(root).as_posix(): p.read_bytes()
        for folder in folders
        for p in sorted((root / folder).rglob("*"))
        if p.is_file() and not p.name.startswith("report.zip")  # the report is not a DVC out
    }


def find_metrics(tree, key: str) -> dict:
    """The metrics file's content inside `dvc metrics show --json` (nested by revision and
    file): the first mapping that has ``key``."""
    if isinstance(tree, dict):
        if key in tree:
            return tree
        for value in tree.values():
            found = find_metrics(value, key)
            if found:
                return found
    return {}


def test_repro_after_snakemake_recomputes_nothing_and_push_pull_round_trips(finished_run, tmp_path):
    """On a copy of the shared finished run (made by `snakemake`): `dvc repro` runs every
    stage's Snakemake call and none of them recomputes anything; push, delete, pull restores
    the same bytes; after the documented `snakemake --touch`, nothing is planned."""
    snakemake, dvc = tool("snakemake"), tool("dvc")
    finished_run = copy_of_run(finished_run, tmp_path / "repo")
    made = digests(finished_run)
    repro = run([dvc, "repro"], finished_run)
    said = repro.stdout + repro.stderr
    assert said.count("Nothing to be done") == len(load_yaml(REPO / "dvc.yaml")["stages"]), said
    # Same bytes, sidecars included: a recomputed output would carry new start/finish times.
    # (mtimes are not compared: DVC re-links file outputs from its cache when it commits them.)
    assert digests(finished_run) == made
    # The README's first steps: up to date, the verdict as metrics, plots offline, a clean
    # strict audit.
    assert "up to date" in run([dvc, "status"], finished_run).stdout
    metrics = run([dvc, "metrics", "show", "--json"], finished_run).stdout
    claims = pd.read_csv(finished_run / "results/claims.csv")
    # (the run's own counts: the published run's are declared too, for a fresh clone)
    shown = find_metrics(find_metrics(json.loads(metrics), COUNTS)[COUNTS], "fail")
    assert shown["fail"] == int((claims["verdict"] == "fail").sum()) and shown["pass"] > 0
    # One column per key: the counts keep the table's lines short; each claim's value is
    # one command away, and every metrics file is strict JSON.
    table = run([dvc, "metrics", "show"], finished_run).stdout
    assert max(len(line) for line in table.splitlines()) < 300, table
    summary = [dvc, "metrics", "show", "--json", SUMMARY]
    shown = find_metrics(json.loads(run(summary, finished_run).stdout), "measured")
    assert set(shown["measured"]) == set(claims["claim_id"])
    for path in [*load_yaml(REPO / "dvc.yaml")["metrics"], SUMMARY]:
        assert isinstance(strict_json((finished_run / path).read_text()), dict), path
    page = run([tool("galu"), "plots"], finished_run)
    html = (finished_run / "dvc_plots/index.html").read_text()
    assert "cdn.jsdelivr" not in html and "<script src=" not in html  # nothing to download
    # Every plot has data in this run: none is left out, each is drawn.
    assert "left out" not in page.stdout, page.stdout
    assert html.count("vegaEmbed('#") == len(load_yaml(REPO / "dvc.yaml")["plots"]), page.stdout
    for column in ("gamma", "train_loss", "min_width", "test_error", "max_trainable_depth"):
        assert f'"{column}"' in html  # each plot carries its data
    # (The run's own folders: the repository's published runs are judged against today's
    # code too, and a stale one fails --strict until it is remade; test_equivalence_workflow.)
    own = ["--folders", "results", "figures", "data/processed", "data/raw"]
    assert run([tool("galu"), "audit", "--strict", *own], finished_run).returncode == 0
    assert "dvc_plots" not in run(["git", "status", "--porcelain"], finished_run).stdout

    run([dvc, "remote", "add", "--local", "-d", "store", str(tmp_path / "remote")], finished_run)
    run([dvc, "push"], finished_run)
    for folder in FOLDERS:
        shutil.rmtree(finished_run / folder)
    run([dvc, "pull"], finished_run)
    assert digests(finished_run) == made  # byte-identical
    # Policy (README): after a pull, mark the restored outputs as up to date, since DVC has
    # verified their hashes; their new mtimes would otherwise look arbitrary to Snakemake.
    run([snakemake, "--touch", "--cores", "1"], finished_run)
    plan = run([snakemake, "-n", "--cores", "1"], finished_run)
    assert "Nothing to be done" in plan.stdout + plan.stderr
    assert digests(finished_run) == made

    # dvc metrics diff between commits (README, DVC): with dvc.lock committed, DVC reads each
    # commit's metrics from its cache. Another run, here a hand-made one, is recorded:
    git = {f"GIT_{w}_{x}": "t" for w in ("AUTHOR", "COMMITTER") for x in ("NAME", "EMAIL")}
    run(["git", "add", "dvc.lock"], finished_run)
    run(["git", "commit", "-qm", "run"], finished_run, env=git)
    counts = json.loads((finished_run / COUNTS).read_text())
    (finished_run / COUNTS).write_text(json.dumps({**counts, "fail": counts["fail"] + 1}))
    values = json.loads((finished_run / SUMMARY).read_text())
    eta_c = values["measured"]["scm_perceptron_eta_c"]
    values["measured"]["scm_perceptron_eta_c"] = eta_c + 1
    (finished_run / SUMMARY).write_text(json.dumps(values))
    run([dvc, "commit", "-f", "report"], finished_run)
    run(["git", "commit", "-qam", "another run"], finished_run, env=git)
    diff = run([dvc, "metrics", "diff", "HEAD~1", "HEAD"], finished_run).stdout
    assert [line.split() for line in diff.splitlines()][1:] == [
        [COUNTS, "fail", str(counts["fail"]), str(counts["fail"] + 1), "1"]
    ]
    diff = run([dvc, "metrics", "diff", "HEAD~1", "--targets", SUMMARY], finished_run).stdout
    (row,) = [line.split() for line in diff.splitlines()][1:]
    assert row[:2] == [SUMMARY, "measured.scm_perceptron_eta_c"]
    assert [float(x) for x in row[2:]] == [eta_c, eta_c + 1, 1.0]


# Rules named for another stage than their prefix; `all` belongs to none.
RULE_STAGE = {"download": "data", "prepare": "data", "claims": "report", "readme_check": "report"}


def stage_of(rule: str) -> str | None:
    if rule == "all":
        return None
    return RULE_STAGE.get(rule, rule.split("_")[0])


def test_each_dvc_stage_allows_exactly_its_own_rules():
    listed = run([tool("snakemake"), "--list-rules"], REPO).stdout.split()
    stages = load_yaml(REPO / "dvc.yaml")["stages"]
    assert {stage_of(r) for r in listed} - {None} == set(stages)  # every rule has a stage
    for name, stage in stages.items():
        allowed = re.search(r"--allowed-rules ([\w ]+?) --", stage["cmd"]).group(1).split()
        assert sorted(allowed) == sorted(r for r in listed if stage_of(r) == name), name
        for rule_file in sorted((REPO / "workflow/rules").glob(f"{name}*.smk")):
            assert rule_file.relative_to(REPO).as_posix() in stage["deps"]
