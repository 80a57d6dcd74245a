"""README's per-paper verdict counts (galu/workflow/pages/readme_pages.py), and the links of the
README and its pages under docs/."""

from __future__ import annotations

import re

import pandas as pd

from galu.workflow.pages.readme_pages import counts_agree, exact_differences, summary_block
from galu.workflow.verdict_lines import is_ours, paper_counts

from conftest import REPO

# Two papers, each with a claim of its own and one of ours; one claim of a paper the README
# does not name; the normalization paper first in the table, listed after GaLU all the same.
TINY = pd.DataFrame(
    {
        "claim_id": ["n1", "n2", "g1", "g2", "g3", "g4", "x1"],
        "paper": ["normalization", "normalization", "galu", "galu", "galu", "galu", "other"],
        "statement": [
            "Deep plain MLPs train.",
            "Ours, not from the paper: images decorrelate.",
            "GaLU0 is close to ReLU.",
            "Ablation (ours, not the paper's model): sigmoid gates.",
            "Our finding, not a claim of the paper: step gates lag.",
            "Parity is at chance.",
            "  Ours (what the figure shows): a third paper.",
        ],
        "verdict": ["fail", "pass", "indicative", "pass", "fail", "not_run", "pass"],
    }
)


def test_claims_of_ours_are_told_by_how_their_statement_starts():
    assert [is_ours(s) for s in TINY["statement"]] == [False, True, False, True, True, False, True]
    assert not is_ours(float("nan")) and not is_ours("Our own words, later: ours")


def test_each_papers_claims_are_counted_apart_from_ours():
    zero = {"pass": 0, "fail": 0, "indicative": 0, "not_run": 0}
    assert paper_counts(TINY) == {
        "galu": ({**zero, "indicative": 1, "not_run": 1}, {**zero, "pass": 1, "fail": 1}),
        "normalization": ({**zero, "fail": 1}, {**zero, "pass": 1}),
        "other": (zero, {**zero, "pass": 1}),
    }


def test_the_block_is_one_line_per_paper_with_a_link():
    judged = TINY.assign(
        measured=[20.0, 1.0, 0.5, 1.0, 0.3, float("nan"), 1.0],
        compare=["at_least", "within", "within", "within", "at_most", "within", "within"],
        expected=[60.0, 1.0, 0.5, 1.0, 0.1, 0.0, 1.0],
        tolerance=[0.0, 0.1, 0.1, 0.1, 0.0, 0.1, 0.1],
        precision=[1.0, 0.1, 0.1, 0.1, 0.1, float("nan"), 0.1],
        quantity=["deepest depth (0: none)", "", "", "", "", "", ""],
    )
    assert summary_block(judged, "At the **quick** scale", "docs/q.md") == (
        "At the **quick** scale, 7 claims: 3 pass, 2 fail, 1 indicative, 1 not_run. Per"
        " paper:\n"
        "- **GaLU**: 0 of its 2 claims reproduce, 1 is indicative (measured at this scale's"
        " reduced settings, not judged) and 1 is not run. Our own checks: 1 pass, 1 fail."
        " ([every claim](docs/q.md))\n"
        "- **static activation normalization**: 0 of its 1 claims reproduce and 1 does not:"
        " deepest depth: 20, bound ≥ 60. Our own checks: 1 pass. ([every claim](docs/q.md))\n"
        "- **other**: none of its own claims is checked. Our own checks: 1 pass."
        " ([every claim](docs/q.md))\n"
    )


def test_counts_are_compared_to_the_letter():
    assert exact_differences("a 12\nb 3\n", "a 12\nb 3\n") == []
    assert exact_differences("a 12\nb 3\n", "a 13\nb 3\nc 1\n") == [("a 12", "a 13"), ("", "c 1")]


def test_every_link_of_the_readme_and_its_pages_leads_to_a_file():
    pages = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
    for page in pages:
        for target in re.findall(r"\]\(([^)\s]+)\)", page.read_text()):
            if target.startswith(("http://", "https://", "#")):
                continue
            path = (page.parent / target.split("#")[0]).resolve()
            assert path.exists(), f"{page.relative_to(REPO)} links {target}"


def test_a_quoted_measurement_may_round_the_other_way_but_a_count_may_not():
    line = "- **GaLU**: 12 of its 13 claims reproduce and 1 does not: fraction: 0.8, bound ≥ 1."
    assert counts_agree(line, line.replace("0.8,", "0.9,"))  # one unit of the last digit
    assert not counts_agree(line, line.replace("0.8,", "0.6,"))
    assert not counts_agree(line, line.replace("12 of its 13", "11 of its 13"))
    assert not counts_agree(line, line.replace("1 does not", "2 do not"))
    alternative = (
        "- x: 0 of its 1 claims reproduce and 1 does not: gap: 0.019 (test: 0.02), bound ≥ 0."
    )
    assert counts_agree(alternative, alternative.replace("0.019", "0.020"))


ROW = (
    "| `norm_abs_trains_deep` | normalization | |x| trains deep. | deepest depth | – | ≥ 30 |"
    " {measured} | 0 | **{verdict}** (substitute data) |"
)


def test_an_indicative_claims_value_may_move_but_nothing_else_in_its_row():
    from galu.workflow.pages.readme_sections import QUICK_MARKERS, readme_differences

    def page(row):
        return f"{QUICK_MARKERS[0]}\n{row}\n{QUICK_MARKERS[1]}"

    held = ROW.format(measured="0.08", verdict="indicative")
    for run, differ in [
        (ROW.format(measured="< 0.1", verdict="indicative"), False),  # another CPU's noise
        (ROW.format(measured="0.5", verdict="indicative"), False),
        (ROW.format(measured="0.5", verdict="fail"), True),  # a verdict is compared
        (ROW.format(measured="0.08", verdict="indicative").replace("≥ 30", "≥ 20"), True),
    ]:
        assert bool(readme_differences(page(held), f"{run}\n")) is differ, run
    judged = ROW.format(measured="0.08", verdict="fail")
    assert readme_differences(page(judged), ROW.format(measured="0.5", verdict="fail") + "\n")
