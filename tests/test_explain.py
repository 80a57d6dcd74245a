"""galu explain CLAIM and galu audit --explain FILE on a hand-made run of four files."""

import re
import shutil

import pandas as pd
import pytest
import yaml

from galu.workflow.cli import main
from galu.workflow.output import Run
from galu.workflow.trust.lineage import Node, explain

from conftest import REPO

CLAIM = {
    "id": "width_about_m_over_d",
    "paper": "galu",
    "section": "sec. 3",
    "statement": "Memorizing m labels takes about m/d neurons.",
    "quantity": "fraction of searches with kd/m within 0.25 of 1",
    "figure": "figures/memorization/zero_error.png",
    "source": "results/memorization/min_width.csv",
    "where": "criterion == 'zero_error'",
    "expression": "abs(kd_over_m - 1) <= 0.25",
    "reduce": "fraction",
    "compare": "at_least",
    "expected": 1.0,
    "tolerance": 0.0,
    "justification": "a width is a whole number of neurons.",
    "finding": "the search at the smallest m/d needs more.",
}
SEARCH = {"settings": {"ms": [32, 64], "lr": 0.01, "models": ["relu"]}, "common": {"seed": 0}}


def _run(root, monkeypatch):
    """A checkout with one claim, its table made from a search part, a figure drawn from the
    part too, and the claims table the workflow would write."""
    from galu.workflow.claim_spec import parse_claims
    from galu.workflow.claims import evaluate

    monkeypatch.chdir(root)
    (root / "config").mkdir()
    (root / "config/config.yaml").write_text("scale: quick\n")
    (root / "workflow").mkdir()
    (root / "workflow/claims.yaml").write_text(yaml.safe_dump([CLAIM]))
    shutil.copytree(REPO / "workflow/schemas/tables", root / "workflow/schemas/tables")
    part = "results/memorization/runs/part0.csv"
    rows = {"model": ["relu"] * 3, "m": [32, 64, 64], "d": [4, 4, 4], "out_dim": [1, 1, 1],
            "seed": [0, 0, 0], "criterion": ["zero_error", "zero_error", "mse"],
            "min_width": [12, 16, 40], "kd_over_m": [1.5, 1.0, 2.5]}  # fmt: skip
    Run("search", wildcards={"part": "0"}, params=SEARCH).write_csv(pd.DataFrame(rows), part)
    Run("collect", inputs=[part]).write_csv(pd.read_csv(part), CLAIM["source"])
    figure = root / CLAIM["figure"]
    figure.parent.mkdir(parents=True)
    figure.write_bytes(b"png")
    Run("plot", inputs=[part], params={"figure": "zero_error"}).stamp(figure)
    table = evaluate(parse_claims([CLAIM], "quick"), root, "quick")
    table.to_csv(root / "results/claims.csv", index=False)


# What `galu explain` prints from the verdict to the lineage's summary, with --chain or not.
VERDICT_TO_LINEAGE = [
    "verdict:       fail",
    "finding:       the search at the smallest m/d needs more.",
    "figure:        figures/memorization/zero_error.png",
    "",
    "How these files were made: 3 file(s), 3 made by 3 job(s) of 3 rule(s) on no recorded"
    " commit; every file checked against its record.",
]


def test_explain_prints_the_claim_its_rows_verdict_and_each_file_once(
    tmp_path, monkeypatch, capsys
):
    _run(tmp_path, monkeypatch)
    # The answer first: the paper's number and ours, the bound, the verdict, the lineage in
    # one line (a made-up claim without a paper number; files with no commit recorded).
    assert main(["explain", "width_about_m_over_d"]) == 0
    assert capsys.readouterr().out.splitlines() == [
        "width_about_m_over_d (galu paper; sec. 3; quick run)",
        "statement:     Memorizing m labels takes about m/d neurons.",
        "paper says:    no number for this",
        "we measure:    0.5: fraction of searches with kd/m within 0.25 of 1",
        "expected:      ≥ 1",
        *VERDICT_TO_LINEAGE,
        "Every file, its job, parameters and inputs: galu explain width_about_m_over_d --chain",
        "galu explain: 0 problem(s) in the chain of width_about_m_over_d.",
    ]
    assert main(["explain", "width_about_m_over_d", "--chain"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[:23] == [
        "width_about_m_over_d (galu paper; sec. 3; quick run)",
        "statement:     Memorizing m labels takes about m/d neurons.",
        "quantity:      fraction of searches with kd/m within 0.25 of 1",
        "measured on:   results/memorization/min_width.csv",
        "  where:       criterion == 'zero_error'",
        "  expression:  abs(kd_over_m - 1) <= 0.25",
        "  reduce:      fraction",
        # the key of the contract and the columns the claim names; those the same on every
        # row said once
        "rows:          2 of the table's 3, all with model=relu, d=4, out_dim=1, seed=0,"
        " criterion=zero_error:",
        "   m  kd_over_m  value",
        "  32        1.5  False",
        "  64        1.0   True",
        "measured:      0.5 (1 of 2 rows)",
        "expected:      ≥ 1",
        "tolerance:     0",
        "justification: a width is a whole number of neurons.",
        *VERDICT_TO_LINEAGE,
        "Each file once (one met again: see above):",
        "results/memorization/min_width.csv  [ok]",
        lines[22],
    ]
    said = r"rule {} on commit \S+, code not recorded, device cpu, finished \S+"
    assert re.fullmatch("   " + said.format("collect"), lines[22]), lines[22]
    chain = lines[23:]
    # parameter values, not their hash; the part the figure shares is only named again
    assert chain == [
        "   params: none",
        "  <- results/memorization/runs/part0.csv  [ok]",
        chain[2],
        '     params: common.seed=0, settings.lr=0.01, settings.models=["relu"],'
        " settings.ms=[32,64]",
        "figures/memorization/zero_error.png  [ok]",
        chain[5],
        "   params: figure=zero_error",
        "  <- results/memorization/runs/part0.csv  (see above)",
        "galu explain: 0 problem(s) in the chain of width_about_m_over_d.",
    ]
    assert re.fullmatch("     " + said.format("search part=0"), chain[2]), chain[2]
    assert re.fullmatch("   " + said.format("plot"), chain[5]), chain[5]


def test_explain_says_when_the_rows_no_longer_give_the_recorded_value(
    tmp_path, monkeypatch, capsys
):
    _run(tmp_path, monkeypatch)
    claims = pd.read_csv("results/claims.csv")
    claims["measured"] = 1.0  # as if the table changed after the verdict was written
    claims.to_csv("results/claims.csv", index=False)
    assert main(["explain", "width_about_m_over_d", "--chain"]) == 0
    lines = capsys.readouterr().out.splitlines()
    at = next(i for i, line in enumerate(lines) if line.startswith("measured:"))
    assert lines[at : at + 2] == [
        "measured:      1 (1 of 2 rows); the rows give 0.5 now: the table or workflow/claims.yaml"
        " changed",
        "               since the verdict was written",
    ]


def test_a_broken_shared_input_is_one_problem_and_the_exit_status_says_so(
    tmp_path, monkeypatch, capsys
):
    _run(tmp_path, monkeypatch)
    part = tmp_path / "results/memorization/runs/part0.csv"
    part.write_text(part.read_text() + "relu,128,4,1,0,mse,60,1.9\n")
    assert main(["explain", "width_about_m_over_d"]) == 1
    out = capsys.readouterr().out
    assert out.count("changed after it was written") == 1
    assert out.count("input results/memorization/runs/part0.csv changed") == 2  # table, figure
    assert "galu explain: 3 problem(s) in the chain of width_about_m_over_d." in out


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (
            ["explain", "width_about_m_over"],
            "galu explain: no claim 'width_about_m_over' in workflow/claims.yaml; did you mean"
            " width_about_m_over_d? (`galu explain` without an id lists them)",
        ),
        (
            ["explain", "width_about_m_over_d", "--results", "results/paper"],
            "galu explain: no results/paper/claims.csv under {root}: run the workflow first"
            " (`make reproduce`), or pass --results the results folder of a run (e.g."
            " results/paper-cpu, published/paper-cpu/results)",
        ),
        (
            ["audit", "--explain", "width_about_m_over_d"],
            "galu audit: width_about_m_over_d does not exist under {root}: nothing to explain;"
            " to explain a claim, `galu explain width_about_m_over_d`",
        ),
    ],
)
def test_what_cannot_be_explained_is_a_usage_error_that_says_what_to_do(
    tmp_path, monkeypatch, capsys, argv, message
):
    _run(tmp_path, monkeypatch)
    assert main(argv) == 2
    assert capsys.readouterr().err == message.format(root=tmp_path.resolve()) + "\n"


def test_explain_without_an_id_lists_the_runs_claims(tmp_path, monkeypatch, capsys):
    _run(tmp_path, monkeypatch)
    assert main(["explain"]) == 0
    assert capsys.readouterr().out == (
        "width_about_m_over_d  (galu, fail)\n"
        "1 claim(s) in results/claims.csv; `galu explain ID` explains one.\n"
    )


def test_a_published_runs_claim_is_read_from_its_folder():
    from galu.workflow.pages.explain import located

    results = "published/paper-cpu/results"
    assert located(results, "results/scm/x.csv") == "published/paper-cpu/results/scm/x.csv"
    assert located("results/paper-cpu", "figures/scm/k.png") == "figures/paper-cpu/scm/k.png"
    assert located("results", "figures/scm/k.png") == "figures/scm/k.png"


def _stamp(path, inputs=(), **params):
    Run("r", inputs=inputs, params=params).write_csv(pd.DataFrame({"x": [1]}), path)


def test_audit_explain_describes_a_shared_input_once_and_counts_its_problem_once(
    tmp_path, monkeypatch, capsys
):
    monkeypatch.chdir(tmp_path)
    _stamp("data.csv", lr=0.1)
    inputs = ["a.csv", "b.csv", "c.csv"]
    for name in inputs:
        _stamp(name, ["data.csv"], lr=0.1, width=8)
    _stamp("t1.csv", inputs)
    _stamp("t2.csv", inputs)
    _stamp("top.csv", ["t1.csv", "t2.csv"])
    node = explain("top.csv")
    lines = node.lines()
    # each file described once: a sibling job with the same values and a table with the same
    # inputs point back instead of repeating them
    assert [line for line in lines if "rule" not in line] == [
        "top.csv  [ok]",
        "   params: none",
        "  <- t1.csv  [ok]",
        "     params: none",
        "    <- a.csv  [ok]",
        "       params: lr=0.1, width=8",
        "      <- data.csv  [ok]",
        "         params: lr=0.1",
        "    <- b.csv  [ok]",
        "       params: lr=0.1, width=8",
        "      <- data.csv  (see above)",
        "    <- c.csv  [ok]",
        "       params: lr=0.1, width=8",
        "      <- data.csv  (see above)",
        "  <- t2.csv  [ok]",
        "     params: none",
        "    <- the 3 inputs of t1.csv  (see above)",
    ]
    (tmp_path / "data.csv").write_text("x\n2\n")
    assert len(explain("top.csv").findings()) == 4  # data.csv, and a.csv b.csv c.csv
    assert main(["audit", "--explain", "top.csv"]) == 1
    assert "galu audit --explain: 4 problem(s) in the chain of top.csv." in capsys.readouterr().out


def test_params_are_shown_as_values_and_a_sidecar_without_them_says_so():
    from galu.workflow.trust.lineage import params_text

    record = {"params": {"computed_by": {"t": ["f"]}, "draw": {}, "sweep": {"lrs": [0.1, 1]}}}
    assert params_text(record) == "params: draw={}, sweep.lrs=[0.1,1]"
    assert params_text({"params": {"note": "two words", "none": None}}) == (
        'params: note="two words", none=null'
    )
    assert params_text({"params_sha256": "a" * 64}) == (
        "params: not recorded in the sidecar (only their sha256)"
    )
    long = Node("x.csv", "rule r", [], params="params: " + ", ".join(["key=value"] * 12))
    assert [len(line) <= 100 for line in long.lines()] == [True, True, True, True]


def test_the_chain_summary_counts_each_file_job_rule_and_commit_once():
    from galu.workflow.trust.lineage import Node, chain_summary

    raw = Node("data/raw/x.gz", "raw archive", [], raw=True)
    part = Node("runs/p0.csv", "", [], inputs=[raw], job="search part=0", commit="a1")
    part1 = Node("runs/p1.csv", "", ["changed"], job="search part=1", commit="b2")
    table = Node("t.csv", "", [], inputs=[part, part1], job="collect", commit="a1")
    figure = Node("f.png", "", [], inputs=[Node("runs/p0.csv", "", [], repeats=True)],
                  job="plot figure=f", commit="a1")  # fmt: skip
    assert chain_summary([table, figure]) == (
        "5 file(s), 4 made by 4 job(s) of 3 rule(s) on 2 commit(s), from 1 raw data file(s);"
        " 1 problem(s)"
    )
    assert chain_summary([figure]) == (
        "1 file(s), 1 made by 1 job(s) of 1 rule(s) on 1 commit(s); every file checked against"
        " its record"
    )
