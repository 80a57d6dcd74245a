"""Every claims.csv a command reads goes through one checker (galu/workflow/pages/claims_table.py):
a damaged, foreign or hostile table is one error naming the file, the line and the fix, exit
2, and no byte of it is written anywhere."""

from __future__ import annotations

import pytest

from galu.workflow.cli import main
from galu.workflow.pages import claims_table
from galu.workflow.pages.claims_table import ClaimsTableError, parse_claims_table

HEADER = "claim_id,paper,measured,precision,verdict,scale\n"
GOOD = HEADER + "a,galu,0.5,0.01,pass,quick\nb,scm,,,not_run,quick\nc,scm,inf,,fail,quick\n"


def test_a_good_table_reads_with_numbers_and_missing_values():
    table = parse_claims_table(GOOD, "t.csv")
    assert table["claim_id"].tolist() == ["a", "b", "c"]
    assert table["measured"].iloc[0] == 0.5 and table["measured"].isna().iloc[1]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (HEADER + "a,galu,abc,,pass,quick\n", "t.csv, line 2: measured 'abc' is no number"),
        (HEADER + "a,galu,1,inf,pass,quick\n", "t.csv, line 2: precision 'inf' is not a positive"),
        (HEADER + "a,galu,1,0,pass,quick\n", "t.csv, line 2: precision '0' is not a positive"),
        ("claim_id,measured\na,1\n", "t.csv lacks the column(s) verdict: not a claims table"),
        (HEADER, "t.csv has no claim rows"),
        (b"\x9f\x00\xff" * 50, "t.csv is not a CSV table"),
        (GOOD + "a,galu,0.5,0.01,pass,quick\n", "t.csv, line 5: claim a appears twice (line 2"),
        (HEADER + "x\x1b[2J,galu,1,,pass,quick\n", "claim id 'x\\x1b[2J' is not a claim id"),
        (HEADER + "a,galu,1,,maybe,quick\n", "t.csv, line 2: verdict 'maybe' is not one of"),
    ],
)
def test_each_malformation_is_named_with_its_line_and_fix(text, message):
    with pytest.raises(ClaimsTableError) as raised:
        parse_claims_table(text, "t.csv")
    assert message in str(raised.value) and "remake it with the workflow" in str(raised.value)


def test_a_huge_file_is_refused_before_it_is_read(tmp_path, monkeypatch):
    monkeypatch.setattr(claims_table, "MAX_BYTES", 100)
    big = tmp_path / "claims.csv"
    big.write_text(GOOD * 10)
    with pytest.raises(ClaimsTableError, match="bytes: not a claims table"):
        claims_table.read_claims_table(big)


def test_compare_and_explain_answer_a_bad_table_with_one_line_and_exit_2(
    tmp_path, monkeypatch, capsys
):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "config").mkdir()
    (tmp_path / "config/config.yaml").write_text("")  # a checkout, as explain asks
    (tmp_path / "results").mkdir()
    (tmp_path / "results/claims.csv").write_text(HEADER + "a,galu,abc,,pass,quick\n")
    (tmp_path / "good").mkdir()
    (tmp_path / "good/claims.csv").write_text(GOOD)
    assert main(["compare", "results", "good"]) == 2
    assert main(["explain", "a", "--root", str(tmp_path)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 2 and all("line 2: measured 'abc' is no number" in e for e in err)


def test_a_revision_that_looks_like_an_option_is_refused(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "good").mkdir()
    (tmp_path / "good/claims.csv").write_text(GOOD)
    target = tmp_path / "written"
    assert main(["compare", "good", "--", f"--output={target}:results"]) == 2
    assert not target.exists()
    assert "is no commit" in capsys.readouterr().err
