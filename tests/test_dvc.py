"""DVC over the Snakemake workflow, in a throw-away repository: repro, push, pull."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from galu.config import load_yaml

from conftest import REPO, run, tool

pytestmark = pytest.mark.slow


STAGE_FOLDERS = ("results/normalization", "figures/normalization")


def digests(root: Path, folders=STAGE_FOLDERS) -> dict[str, bytes]:
    return {
        p.relative_to(root).as_posix(): p.read_bytes()
        for folder in folders
        for p in sorted((root / folder).rglob("*"))
        if p.is_file()
    }


def test_repro_after_snakemake_recomputes_nothing_and_push_pull_round_trips(repo_copy, tmp_path):
    snakemake, dvc = tool("snakemake"), tool("dvc")
    run([snakemake, "--cores", "2"], repo_copy)
    made = digests(repo_copy)
    stamps = {p: (repo_copy / p).stat().st_mtime_ns for p in made}
    # -s: this stage alone; the data stage upstream needs mirrors and has its own tests.
    repro = run([dvc, "repro", "-s", "normalization"], repo_copy)
    assert "Nothing to be done" in repro.stdout + repro.stderr
    assert {p: (repo_copy / p).stat().st_mtime_ns for p in made} == stamps  # untouched
    assert digests(repo_copy) == made

    run([dvc, "remote", "add", "-d", "store", str(tmp_path / "remote")], repo_copy)
    run([dvc, "push", "normalization"], repo_copy)
    for folder in STAGE_FOLDERS:
        shutil.rmtree(repo_copy / folder)
    run([dvc, "pull", "normalization"], repo_copy)
    assert digests(repo_copy) == made  # byte-identical
    # Policy (README): after a pull, mark the restored outputs as up to date, since DVC has
    # verified their hashes; their new mtimes would otherwise look arbitrary to Snakemake.
    run([snakemake, "--touch", "--cores", "1"], repo_copy)
    plan = run([snakemake, "-n", "--cores", "1"], repo_copy)
    assert "Nothing to be done" in plan.stdout + plan.stderr
    assert digests(repo_copy) == made


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
