"""``galu compare A B``: two runs' claims side by side, on tiny claims tables; the metrics
files DVC reads are strict JSON, and ``dvc metrics diff`` compares two commits'
publications."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from galu.workflow.cli import main
from galu.workflow.config import load_yaml

from conftest import REPO, run, strict_json, tool

HEADER = "claim_id,paper,measured,verdict,scale,precision\n"
QUICK = HEADER + (
    "norm_a,normalization,0.0123,pass,quick,0.001\n"
    "scm_b,scm,,not_run,quick,\n"
    "mem_c,memorization,30,fail,quick,1\n"
    "gen_d,generalization,-inf,pass,quick,0.1\n"
)
PAPER = HEADER + (
    "norm_a,normalization,0.00004,pass,paper-cpu,0.001\n"
    "scm_b,scm,0.52,pass,paper-cpu,0.01\n"
    "mem_c,memorization,61,pass,paper-cpu,1\n"
    "new_e,normalization,0.3,indicative,paper-cpu,0.1\n"
)


def claims(folder: Path, text: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "claims.csv").write_text(text)
    return folder


def galu(*args: str) -> int:
    return main(["compare", *args])


def test_compare_shows_both_runs_per_claim_and_flags_differing_verdicts(
    tmp_path, monkeypatch, capsys
):
    monkeypatch.chdir(tmp_path)
    claims(tmp_path / "results", QUICK)
    claims(tmp_path / "published/paper-cpu/results", PAPER)
    # A differing verdict is the finding: exit 1.
    assert galu("results", "published/paper-cpu/results") == 1
    assert capsys.readouterr().out.splitlines() == [
        "A: results (quick scale)",
        "B: published/paper-cpu/results (paper-cpu scale)",
        "",
        "claim   A measured  A verdict  B measured  B verdict",
        "norm_a  0.012       pass       < 1e-3      pass",
        "scm_b   –           not_run    0.52        pass        DIFFERS",
        "mem_c   30          fail       61          pass        DIFFERS",
        "gen_d   -inf        pass                               only in A",
        "new_e                          0.3         indicative  only in B",
        "",
        "galu compare: 5 claims, 2 verdicts differ (1 pass against fail, 1 only in A,"
        " 1 only in B).",
    ]


def test_same_verdicts_exit_0_and_a_publication_folder_or_a_file_names_a_run(
    tmp_path, monkeypatch, capsys
):
    monkeypatch.chdir(tmp_path)
    claims(tmp_path / "results", QUICK)
    # A publication folder holds its claims under results/; a claims.csv names its run too.
    claims(tmp_path / "published/quick/results", QUICK.replace("0.0123", "0.0124"))
    assert galu("results/claims.csv", "published/quick") == 0
    out = capsys.readouterr().out.splitlines()
    assert out[4] == "norm_a  0.012       pass       0.012       pass"
    assert out[-1] == "galu compare: 4 claims, 0 verdicts differ."


def test_a_table_without_precision_shows_three_digits(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    claims(tmp_path / "old", "claim_id,measured,verdict\nnorm_a,0.012345,pass\nscm_b,,not_run\n")
    assert galu("old", "old") == 0
    out = capsys.readouterr().out.splitlines()
    assert out[:2] == ["A: old (? scale)", "B: old (? scale)"]
    assert out[4:6] == [
        "norm_a  0.0123      pass       0.0123      pass",
        "scm_b   –           not_run    –           not_run",
    ]


def git(*args: str, cwd: Path) -> None:
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t"}
    env |= {"GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@t"}
    subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, env=env)


@pytest.fixture
def two_publications(tmp_path: Path) -> Path:
    """A git repository whose two commits publish paper-cpu's claims (and summary) differently."""
    folder = tmp_path / "published/paper-cpu/results"
    git("init", "-q", cwd=tmp_path)
    for text, fail in ((QUICK.replace("quick", "paper-cpu"), 1), (PAPER, 0)):
        claims(folder, text)
        summary = {"scale": "paper-cpu", "pass": 3 - fail, "fail": fail, "measured": {}}
        (folder / "claims_summary.json").write_text(json.dumps(summary))
        git("add", "-A", cwd=tmp_path)
        git("commit", "-qm", "publish", cwd=tmp_path)
    return tmp_path


def test_rev_colon_folder_compares_two_commits_publications(two_publications, monkeypatch, capsys):
    monkeypatch.chdir(two_publications)
    assert galu("HEAD~1:published/paper-cpu", "published/paper-cpu/results") == 1
    out = capsys.readouterr().out.splitlines()
    assert out[:2] == [
        "A: HEAD~1:published/paper-cpu (paper-cpu scale)",
        "B: published/paper-cpu/results (paper-cpu scale)",
    ]
    assert out[-1].startswith("galu compare: 5 claims, 2 verdicts differ")
    assert galu("HEAD:published/paper-cpu/results/", "published/paper-cpu/results") == 0


@pytest.mark.parametrize(
    ("a", "message"),
    [
        ("nothere", "galu compare: no folder nothere; name a run's results folder (results,"),
        ("empty", "galu compare: empty has no claims.csv: run the workflow first (make"),
        ("other", "galu compare: other/claims.csv lacks the column(s) measured, verdict: not"),
        ("HEAD:nothere", "galu compare: HEAD:nothere: commit HEAD holds no nothere/claims.csv"),
    ],
)
def test_a_run_that_cannot_be_read_is_named_with_the_fix_exit_2(
    a, message, two_publications, monkeypatch, capsys
):
    monkeypatch.chdir(two_publications)
    (two_publications / "empty").mkdir()
    claims(two_publications / "other", "claim_id,value\nx,1\n")
    assert galu(a, "published/paper-cpu/results") == 2
    err = capsys.readouterr().err
    assert err.startswith(message) and "REV:FOLDER" in err and err.count("\n") == 1


def test_dvc_metrics_diff_compares_two_commits_publications(two_publications):
    """The committed summaries of a publication need neither dvc.lock nor a cache."""
    run([tool("dvc"), "init", "-q"], two_publications)
    target = "published/paper-cpu/results/claims_summary.json"
    diff = run(
        [tool("dvc"), "metrics", "diff", "HEAD~1", "HEAD", "--targets", target],
        cwd=two_publications,
    )
    rows = [line.split() for line in diff.stdout.splitlines()]
    assert rows[1:] == [[target, "fail", "1", "0", "-1"], [target, "pass", "2", "3", "1"]]


def test_strict_json_refuses_what_python_writes_for_infinities():
    with pytest.raises(ValueError, match="-Infinity is not JSON"):
        strict_json(json.dumps({"x": -float("inf")}))


def test_every_committed_metrics_file_is_strict_json():
    """Each file dvc.yaml declares as metrics, in every committed publication."""
    names = {Path(m).name for m in load_yaml(REPO / "dvc.yaml")["metrics"]} | {
        "claims_summary.json"
    }
    found = sorted(p for name in names for p in (REPO / "published").rglob(name))
    assert len(found) >= 2  # paper-cpu's claims summary and coefficients summary at least
    for path in found:
        assert isinstance(strict_json(path.read_text()), dict), path
