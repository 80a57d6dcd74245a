"""The claims table in words: the markdown table, the verdict counts, the figure captions'
verdict lines and the scale's reductions, for claims.md, the README, the report and the
landing page. The claims are checked by :mod:`galu.workflow.claims`; this module only writes
them."""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import pandas as pd

from galu.workflow.precision import format_measured
from galu.workflow.rst import jinja_raw, rst_escape

# In the closure of the jobs that import it (galu.workflow.closure): it writes their bytes.
RESULT_CODE = "the wording of the verdicts in the claims table, captions and pages"


def _number(value: float) -> str:
    """A stated number (expected value, tolerance): three significant digits."""
    if isinstance(value, float) and math.isnan(value):
        return "–"
    return f"{value:.3g}"


def tolerance_text(value: float) -> str:
    """A claim's tolerance as every verdict table shows it."""
    return _number(value)


def measured_text(row: Any) -> str:
    """A row of :func:`evaluate` 's measured value at its precision (``–`` when not run),
    and beside it the ``alternative`` one where the claim has it, at the same precision:
    ``0.012`` or ``0.012 (test-selected: 0.010)``."""
    if math.isnan(row.measured):
        return "–"
    text = format_measured(row.measured, row.precision)
    label = getattr(row, "alternative", "")
    if isinstance(label, str) and label:  # a table read back from CSV has NaN for none
        text += f" ({label}: {format_measured(row.measured_alternative, row.precision)})"
    return text


def robustness_of(row: Any) -> str:
    """The row's robustness (``for loss_fraction 0.3 to 0.6 (tried 0.05 to 0.95)``: the
    settings that give the same verdict), or empty (a CSV read back has NaN for none)."""
    text = getattr(row, "robustness", "")
    return text if isinstance(text, str) else ""


def verdict_notes(row: Any) -> str:
    """What follows a row's verdict: its robustness where the claim has one and was judged,
    and ``(substitute data)`` when the claim's inputs descend from a substitute dataset."""
    robust = robustness_of(row)
    return (f" {robust}" if robust and row.verdict in ("pass", "fail") else "") + (
        " (substitute data)" if row.data_substitute else ""
    )


def verdict_text(row: Any) -> str:
    """``**pass**`` and its :func:`verdict_notes`."""
    return f"**{row.verdict}**" + verdict_notes(row)


def _cell(text: str) -> str:
    return str(text).replace("|", "\\|")


def expected_text(compare: str, expected: float) -> str:
    """The expected value with its comparison: ``0.52``, ``≤ 0.02`` or ``≥ 30``."""
    return {"within": "", "at_most": "≤ ", "at_least": "≥ "}[compare] + _number(expected)


# indicative: measured at settings reduced from the paper's (the scale's reductions), not judged.
VERDICTS = ("pass", "fail", "indicative", "not_run")


def verdict_counts(table: pd.DataFrame) -> dict[str, int]:
    """How many claims of each verdict (every verdict present, zeros included)."""
    counts = table["verdict"].value_counts()
    return {v: int(counts.get(v, 0)) for v in VERDICTS}


def summary_line(table: pd.DataFrame) -> str:
    """``26 pass, 4 fail, 1 not_run`` (in that order, zeros included; ``indicative`` only
    where a claim is, e.g. ``31 pass, 1 fail, 8 indicative, 6 not_run``)."""
    counts = verdict_counts(table)
    shown = [v for v in VERDICTS if v != "indicative" or counts[v]]
    return ", ".join(f"{counts[v]} {v}" for v in shown)


def markdown_table(table: pd.DataFrame) -> str:
    """The readable claims table (``results/claims.md`` and the README section)."""
    scale = table["scale"].iloc[0] if len(table) else "?"
    lines = [f"Claims checked at the **{scale}** scale: {summary_line(table)}."]
    substitutes = int(table["data_substitute"].sum())
    if substitutes:
        lines.append(
            f"{substitutes} of them are measured on substitute data (a non-official copy of a"
            " dataset, accepted by an explicit opt-in; its provenance says `data_substitute`)."
        )
    lines += [
        "",
        "| claim | paper | statement | measured quantity | paper says | expected | measured"
        " | tolerance | verdict |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in table.itertuples():
        cells = [
            f"`{r.claim_id}`",
            r.paper,
            _cell(r.statement),
            _cell(quantity_text(r)),
            _cell(paper_says_text(r)),
            expected_text(r.compare, r.expected),
            _cell(measured_text(r)),
            tolerance_text(r.tolerance),
            verdict_text(r),
        ]
        lines.append("| " + " | ".join(cells) + " |")
    failed = table[table["verdict"] == "fail"]
    if len(failed):
        lines += ["", "What we believe explains each failure:", ""]
        lines += [f"- `{r.claim_id}`: {finding_text(r.finding)}" for r in failed.itertuples()]
    indicative = indicative_groups(table)
    if indicative:
        lines += ["", INDICATIVE_HEADING + ":", ""]
        lines += [
            f"- {reduction.rstrip('.')}: {', '.join(f'`{c}`' for c in ids)}."
            for reduction, ids in indicative.items()
        ]
    skipped = table[table["verdict"] == "not_run"]
    if len(skipped):
        lines += ["", "Not run, and why:", ""]
        lines += [f"- `{r.claim_id}`: {r.reason}." for r in skipped.itertuples()]
    return "\n".join(lines) + "\n"


INDICATIVE_HEADING = (
    "Indicative: measured at settings reduced from the paper's, so not judged (each reduction"
    " once, with the claims it touches)"
)


def indicative_groups(table: pd.DataFrame) -> dict[str, list[str]]:
    """Reduction text -> the ids of the indicative claims it touches, in table order."""
    groups: dict[str, list[str]] = {}
    for r in table[table["verdict"] == "indicative"].itertuples():
        groups.setdefault(str(r.reason), []).append(r.claim_id)
    return groups


def quantity_text(row: Any) -> str:
    """What a claim's measured number is, in words (empty for a table made before claims
    named it)."""
    return _text_or(getattr(row, "quantity", ""), "–")


def paper_says_text(row: Any) -> str:
    """The claim's quantity as the paper or its authors' published results give it (its
    ``paper_says``), or ``–`` where they give no number (a CSV read back has NaN for none)."""
    return _text_or(getattr(row, "paper_says", ""), "–")


def _text_or(value: object, fallback: str) -> str:
    """``value`` when it is a non-empty string, else ``fallback`` (a table read back from CSV
    has NaN for an empty cell)."""
    return value if isinstance(value, str) and value else fallback


def finding_text(text: object) -> str:
    """A failed claim's ``finding``, or that there is none yet (also for a table read back
    from CSV, where an empty cell is NaN)."""
    return _text_or(text, "not investigated yet.")


CAPTIONS_DIR = "results/captions"


def caption_path(figure: str) -> str:
    """Where the claims rule writes the report caption of ``figure``:
    ``figures/scm/k3m2.png`` -> ``results/captions/scm/k3m2.rst``."""
    relative = Path(figure).relative_to("figures").with_suffix(".rst")
    return f"{CAPTIONS_DIR}/{relative.as_posix()}"


def bound_short(compare: str, expected: float, tolerance: float) -> str:
    """The bound a measurement must meet, the tolerance folded in: ``≤ 0.05`` (expected at
    most 0, tolerance 0.05), ``≥ 60``, ``30 ± 10``."""
    if compare == "within":
        return _number(expected) + (f" ± {_number(tolerance)}" if tolerance else "")
    limit = expected + tolerance if compare == "at_most" else expected - tolerance
    return expected_text(compare, limit)


def bound_text(compare: str, expected: float, tolerance: float) -> str:
    """:func:`bound_short` for a caption, saying how the tolerance was folded in:
    ``≤ 0.05 (0 plus tolerance 0.05)`` rather than "expected ≤ 0, tolerance 0.05", which
    reads like a failure next to a passing measurement of 0.01; ``0.52 ± 0.05`` for within."""
    text = bound_short(compare, expected, tolerance)
    if compare != "within" and tolerance:
        sign = "plus" if compare == "at_most" else "minus"
        text += f" ({_number(expected)} {sign} tolerance {_number(tolerance)})"
    return text


def caption_verdicts(table: pd.DataFrame, figure: str) -> str:
    """The report-caption paragraph stating the verdict of every claim ``figure`` shows.

    ``table`` is :func:`evaluate`'s output. The text is wrapped in Jinja ``raw`` tags
    because Snakemake renders captions as Jinja templates.
    """
    rows = table[table["figure"] == figure]
    if not len(rows):
        body = "No claim of ``workflow/claims.yaml`` is checked on this figure."
    else:
        scale = rows["scale"].iloc[0]
        items = []
        for r in rows.itertuples():
            if r.verdict == "not_run":
                evidence = f"not measured: {rst_escape(r.reason)}"
            elif r.verdict == "indicative":
                evidence = (
                    f"Measured {rst_escape(measured_text(r))} at settings reduced from the"
                    f" paper's ({rst_escape(str(r.reason).rstrip('.'))}), so not judged;"
                    f" the paper's bound: {bound_text(r.compare, r.expected, r.tolerance)}."
                )
            else:
                why = str(r.reason).rstrip(".")
                evidence = (
                    f"Expected {bound_text(r.compare, r.expected, r.tolerance)}, measured"
                    f" {rst_escape(measured_text(r))}"
                    f"{' (' + rst_escape(why) + ')' if why else ''}."
                )
                if robustness_of(r):
                    evidence += f" The same verdict {rst_escape(robustness_of(r))}."
            if r.verdict == "fail":
                evidence += f" *What we believe explains it:* {rst_escape(finding_text(r.finding))}"
            substitute = " (measured on substitute data)" if r.data_substitute else ""
            items.append(
                f"- **{r.verdict}** ``{r.claim_id}``{substitute}: {rst_escape(r.statement)}"
                f" {evidence}"
            )
        body = (
            f"**Claims this figure tests, checked at the {scale} scale** "
            "(all claims: ``results/claims.csv``):\n\n" + "\n".join(items)
        )
    return "\n" + jinja_raw(f"\n\n{body}\n\n") + "\n"


def reductions_lines(scale: str, reductions: Iterable[Mapping[str, Any]]) -> list[str]:
    """reStructuredText lines saying what ``scale`` reduces from the paper's settings (its
    config's ``reductions``, e.g. config/paper-cpu.yaml); none when it reduces nothing."""
    texts = [str(r["text"]) for r in reductions]
    if not texts:
        return []
    return [
        f"**Reduced from the paper's settings at the {scale} scale** (the config's"
        " ``reductions``; claims that depend on a reduction are indicative: measured, not"
        " judged):",
        "",
        *(f"- {rst_escape(text)}" for text in texts),
        "",
    ]


def caption_reductions(scale: str, reductions: Iterable[Mapping[str, Any]]) -> str:
    """:func:`reductions_lines` as a caption paragraph (inside Jinja ``raw`` tags)."""
    lines = reductions_lines(scale, reductions)
    if not lines:
        return ""
    body = "\n".join(lines)
    return "\n" + jinja_raw(f"\n\n{body}\n") + "\n"
