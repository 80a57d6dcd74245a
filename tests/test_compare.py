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
from galu.workflow.settings.config import load_yaml

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


def test_agreeing_verdicts_from_opposite_sides_of_the_expectation_are_flagged(
    tmp_path, monkeypatch, capsys
):
    """norm_relu_trains_to_about_30_layers fails at the quick scale (depth 0: nothing trains
    in 5 epochs) and at paper-cpu (depth 60): the same verdict for opposite reasons."""
    head = "claim_id,paper,expected,measured,tolerance,verdict,compare,scale,precision\n"
    quick = head + (
        "depth,normalization,30,0,10,fail,within,quick,1\n"
        "near,normalization,30,35,10,pass,within,quick,1\n"
        "above,normalization,0,0.2,0,fail,at_most,quick,0.01\n"
        "edge,normalization,30,40,10,pass,within,quick,1\n"
    )
    paper = head + (
        "depth,normalization,30,60,10,fail,within,paper-cpu,1\n"
        "near,normalization,30,25,10,pass,within,paper-cpu,1\n"
        "above,normalization,0,0.1,0,fail,at_most,paper-cpu,0.01\n"
        "edge,normalization,30,19,10,fail,within,paper-cpu,1\n"
    )
    monkeypatch.chdir(tmp_path)
    claims(tmp_path / "a", quick)
    claims(tmp_path / "b", paper)
    assert galu("a", "b") == 1  # `edge` differs
    out = capsys.readouterr().out.splitlines()
    flags = {line.split()[0]: line.split("  ")[-1].strip() for line in out[4:8]}
    # within the tolerance on both sides is no finding; 40 is 10 above 30, on the bound
    assert flags == {"depth": "OPPOSITE SIDES", "near": "pass", "above": "fail", "edge": "DIFFERS"}
    assert out[-1] == (
        "galu compare: 4 claims, 1 verdict differ (1 pass against fail, 1 agreeing on opposite"
        " sides of the expected value)."
    )
    # every verdict agreeing, `depth` still from opposite sides: a finding (exit 1) on its own
    claims(tmp_path / "b", paper.replace("19,10,fail", "21,10,pass"))
    assert galu("a", "b") == 1
    assert capsys.readouterr().out.splitlines()[-1] == (
        "galu compare: 4 claims, 0 verdicts differ (1 agreeing on opposite sides of the"
        " expected value)."
    )
    claims(tmp_path / "b", quick)
    assert galu("a", "b") == 0
