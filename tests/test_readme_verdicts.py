"""The end of `make reproduce`: a run on another CPU whose verdicts are the verdict pages'
(docs/verdicts-*.md) ends with a NOTE and the verdict summary (exit 0); a verdict that differs
is a short block (exit 1)."""

from __future__ import annotations

from pathlib import Path

from readme_support import write_claims, write_readme

from galu.workflow import cli
from galu.workflow.pages.publication_readme import PAPER_MARKERS
from galu.workflow.pages.readme_sections import (
    QUICK_MARKERS,
    compare_section,
    describe_comparison,
    row_verdicts,
)

HEADER = "| claim | measured | verdict |\n|---|---|---|\n"
PAGE = "docs/verdicts-quick.md's quick-scale verdicts"


def section(a: str = "0.050", verdict: str = "pass", words: str = "the gap") -> str:
    return (
        f"Claims: 2.\n\n{HEADER}| `gap` | {words} {a} | **{verdict}** |\n"
        "| `depth` | 30 | **fail** (why) |\n"
    )


def readme(quick: str, paper: str = "paper 1\n") -> str:
    return (
        f"# T\n{QUICK_MARKERS[0]}\n{quick}{QUICK_MARKERS[1]}\n"
        f"{PAPER_MARKERS[0]}\n{paper}{PAPER_MARKERS[1]}\n"
    )


def test_rows_give_each_claim_its_verdict():
    assert row_verdicts(section()) == {"gap": "pass", "depth": "fail"}


def test_numbers_within_one_unit_agree_and_beyond_it_are_named():
    assert compare_section(readme(section()), section("0.051")).numbers == []
    found = compare_section(readme(section()), section("0.052"))
    assert found.numbers == [("gap", "0.050", "0.052")] and not found.verdicts
    assert found.wording == 0
    (note,) = describe_comparison(PAGE, found)
    assert note.startswith("NOTE 1 number(s)") and "gap 0.050 -> 0.052" in note


def test_a_verdict_that_differs_is_a_block_naming_the_claim():
    found = compare_section(readme(section()), section("0.052", "fail"))
    assert found.verdicts == [("gap", "pass", "fail")]
    lines = describe_comparison(PAGE, found)
    assert lines[0] == f"VERDICTS DIFFER from {PAGE} for 1 claim(s):"
    assert lines[1] == "  gap: page pass, this run fail"


def test_other_words_are_a_wording_note():
    found = compare_section(readme(section()), section(words="the mean gap"))
    assert found.wording == 1 and not found.numbers and not found.verdicts


def run_verdicts(tmp_path: Path, monkeypatch, run_section: str, capsys) -> tuple[int, str]:
    """The pages and README taken from a run of ``section()``, then set beside ``run_section``
    (its claims table unchanged: README's counts agree)."""
    monkeypatch.chdir(tmp_path)
    write_readme(tmp_path)
    write_claims(tmp_path / "results/claims.csv", {"gap": "pass", "depth": "fail"})
    (tmp_path / "results/claims.md").write_text(section())
    assert cli.main(["readme", "--update"]) == 0
    (tmp_path / "results/claims.md").write_text(run_section)
    capsys.readouterr()
    status = cli.main(["readme", "--verdicts"])
    return status, capsys.readouterr().out


def test_the_end_of_a_run_on_another_cpu_is_a_note_then_the_summary(tmp_path, monkeypatch, capsys):
    status, out = run_verdicts(tmp_path, monkeypatch, section("0.052"), capsys)
    assert status == 0
    lines = out.strip().splitlines()
    assert lines[0].startswith(f"NOTE 1 number(s) of {PAGE}")
    assert lines[1] == (
        "The verdicts of docs/verdicts-quick.md and docs/verdicts-paper.md are this run's."
    )
    assert lines[2] == "galu: the run finished."  # the verdict summary comes last
    assert "1 pass" in lines[3]


def test_the_end_of_a_run_whose_verdict_differs_exits_1(tmp_path, monkeypatch, capsys):
    status, out = run_verdicts(tmp_path, monkeypatch, section("0.9", "fail"), capsys)
    assert status == 1
    assert "VERDICTS DIFFER" in out and out.rstrip().splitlines()[-1].startswith("  ")
    assert out.index("VERDICTS DIFFER") < out.index("galu: the run finished.")


def test_the_same_run_says_so(tmp_path, monkeypatch, capsys):
    status, out = run_verdicts(tmp_path, monkeypatch, section(), capsys)
    assert status == 0 and out.startswith(
        "The verdicts and numbers of docs/verdicts-quick.md and docs/verdicts-paper.md are this"
        " run's"
    )


def test_readme_counts_that_differ_alone_are_a_note(tmp_path, monkeypatch, capsys):
    """A README whose per-paper counts are not those of the run's claims table, the pages
    current: a NOTE naming them, exit 0."""
    status, _ = run_verdicts(tmp_path, monkeypatch, section(), capsys)
    write_claims(tmp_path / "results/claims.csv", {"gap": "pass", "depth": "pass"})
    assert cli.main(["readme", "--verdicts"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("NOTE README.md's per-paper counts at the quick scale differ"), out
