"""README's paper-level claims beside the quick scale's (galu/workflow/pages/scale_table.py)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from galu.workflow.pages.compare import Run
from galu.workflow.pages.scale_table import NO_NOTE, SCALE_NOTES, beside_quick_lines, scale_notes


def _run(scale: str, rows: list[tuple[str, float, str]]) -> Run:
    table = pd.DataFrame(rows, columns=["claim_id", "measured", "verdict"])
    return Run(f"results/{scale}", scale, table.assign(precision=0.001, scale=scale))


QUICK = _run(
    "quick",
    [
        ("same", 0.5, "pass"),
        ("split", 0.2, "pass"),
        ("unjudged", 0.3, "pass"),
        ("gone", 1.0, "fail"),
    ],
)
PAPER = _run(
    "paper-cpu",
    [("same", 0.5, "pass"), ("split", 0.9, "fail"), ("unjudged", 0.31, "indicative")]
    + [("new", 2.0, "pass")],
)


def test_each_claim_with_both_scales_values_and_verdicts_side_by_side():
    lines = beside_quick_lines(QUICK, PAPER, {"split": "Believe paper-cpu: it trains longer."})
    assert lines[2:9] == [
        "| claim | quick | verdict | paper-cpu | verdict | verdicts |",
        "|---|---|---|---|---|---|",
        "| `same` | 0.500 | pass | 0.500 | pass |  |",
        "| `split` | 0.200 | pass | 0.900 | fail | differ |",
        "| `unjudged` | 0.300 | pass | 0.310 | indicative | differ |",
        "| `gone` | 1 | fail |  | not in this run |  |",
        "| `new` |  | not in this run | 2 | pass |  |",
    ]
    assert lines[10] == (
        "5 claims; the verdicts differ for 2: 1 where one scale passes and the other fails, the"
        " rest where one of them does not judge the claim (not_run or indicative)."
    )
    # one sentence per disagreement, and only for those (pass against fail)
    assert lines[12:] == [
        "Which scale to believe where one passes and the other fails:",
        "",
        "- `split`: Believe paper-cpu: it trains longer.",
        "",
    ]
    # a disagreement nobody explained says so, in the README itself
    assert f"- `split`: {NO_NOTE}" in beside_quick_lines(QUICK, PAPER, {})


def test_the_notes_file_is_read_per_scale_and_checked(tmp_path: Path):
    assert scale_notes(tmp_path, "paper-cpu") == {}  # no file: no notes
    notes = tmp_path / SCALE_NOTES
    notes.parent.mkdir()
    notes.write_text("paper-cpu:\n  split: Believe paper-cpu.\npaper-smoke: {}\n")
    assert scale_notes(tmp_path, "paper-cpu") == {"split": "Believe paper-cpu."}
    assert scale_notes(tmp_path, "other") == {}
    for bad in ("paper-cpu: [a, b]\n", "paper-cpu:\n  split: [one, two]\n", "- a list\n"):
        notes.write_text(bad)
        with pytest.raises(ValueError, match="must map each scale"):
            scale_notes(tmp_path, "paper-cpu")
