"""The report's landing page: the verdict first, then the claims table and the run's provenance.

Snakemake shows the workflow description (the Snakefile's ``report:`` file) when the report
opens. The ``claims`` rule writes it from :func:`galu.workflow.claims.evaluate`'s table as
reStructuredText: counts of pass / fail / indicative / not_run, the table with failures,
indicative and not_run claims first (verdicts coloured, each row linking its figure's page in
the report, a failed row saying what we believe explains it), and the commit, package versions and
data status of the run. The same page, as standalone HTML, is ``results/claims.html``.
"""

from __future__ import annotations

import math
import os
import re
import time
from collections.abc import Iterable, Mapping
from typing import Any

import pandas as pd
from docutils.core import publish_parts

from galu.workflow.claims_text import (
    INDICATIVE_HEADING,
    expected_text,
    finding_text,
    indicative_groups,
    measured_text,
    paper_says_text,
    quantity_text,
    reductions_lines,
    summary_line,
    tolerance_text,
    verdict_counts,
    verdict_notes,
)
from galu.workflow.rst import jinja_raw, rst_escape, strip_raw
from galu.workflow.scales import OutputRoot, output_root
from galu.workflow.terminal import terminal_text

# In the closure of the jobs that import it (galu.workflow.closure): it writes their bytes.
RESULT_CODE = "the report's landing page and claims.html"

# Written by the claims rule; the Snakefile's `report:` once it exists.
LANDING_PAGE = "results/captions/index.rst"
ORDER = {"fail": 0, "indicative": 1, "not_run": 2, "pass": 3}
ROLES = {"pass": "passed", "fail": "failed", "indicative": "indicative", "not_run": "notrun"}
PAGE_CSS = (
    "<style>.passed{color:#1a7f37;font-weight:bold}"
    ".failed{color:#cf222e;font-weight:bold}"
    ".notrun{color:#9a6700;font-weight:bold}"
    ".indicative{color:#0969da;font-weight:bold}"
    # Snakemake centres the description vertically in a scrolling box: a page taller than
    # the window would lose its top (the verdict) above the scroll range. Top-align it, and
    # let the table use the width.
    ".h-screen.overflow-auto{align-items:flex-start!important;justify-content:flex-start!important}"
    ".prose.max-w-lg{max-width:80rem!important}"
    # Snakemake puts the rule graph beside the description: wrap it below, so the table
    # gets the page's width and its first row shows without scrolling past the graph.
    "div.flex:has(>div>.prose.max-w-lg){flex-wrap:wrap}"
    "div:has(>.prose.max-w-lg){flex:1 0 100%;min-width:0}"
    # The verdict table fits the window at laptop width (1280 px, the report's sidebar
    # included): fixed columns at the list-table's widths, long claim ids and paths broken
    # anywhere rather than pushing the figure column out of sight.
    "table.docutils{table-layout:fixed;width:100%;font-size:0.9em}"
    "table.docutils td{overflow-wrap:anywhere;vertical-align:top}</style>"
)


def _heading(title: str, underline: str = "-") -> list[str]:
    """A reStructuredText section title (its underline as long as the title)."""
    return [title, underline * len(title), ""]


def _figure_cell(figure: str, linked: set[str]) -> str:
    """A reference to the figure's page in the report (Snakemake defines one link target per
    result, named by its file name), or the plain path when the figure is not in it."""
    name = figure.rsplit("/", 1)[-1]
    return f"`{name}`_" if figure in linked else f"``{figure}``"


def _source(row: Any) -> str:
    """Where a claim comes from: the paper's section when the claim names it."""
    section = getattr(row, "section", "")
    return rst_escape(section) if isinstance(section, str) and section else row.paper


def _statement_cell(row: Any) -> str:
    """The claim's statement; a failed claim's row also says what we believe explains the
    failure, beside the numbers it explains."""
    text = rst_escape(row.statement)
    if row.verdict == "fail":
        text += f" *Why it fails:* {rst_escape(finding_text(row.finding))}"
    return text


def _table(table: pd.DataFrame, linked: set[str]) -> list[str]:
    rows = table.assign(order=table["verdict"].map(ORDER)).sort_values("order", kind="stable")
    lines = [".. list-table::", "   :header-rows: 1", "   :widths: 9 14 24 13 10 7 8 8 7", ""]
    header = [
        "verdict",
        "claim",
        "statement",
        "measured quantity",
        "paper says",
        "expected",
        "measured",
        "tolerance",
        "figure",
    ]
    lines += [f"   {'*' if i == 0 else ' '} - {h}" for i, h in enumerate(header)]
    for r in rows.itertuples():
        verdict = f":{ROLES[r.verdict]}:`{r.verdict}`" + rst_escape(verdict_notes(r))
        cells = [
            verdict,
            f"``{r.claim_id}`` ({_source(r)})",
            _statement_cell(r),
            rst_escape(quantity_text(r)),
            rst_escape(paper_says_text(r)),
            rst_escape(expected_text(r.compare, r.expected)),
            rst_escape(measured_text(r)),
            rst_escape(tolerance_text(r.tolerance)),
            _figure_cell(r.figure, linked),
        ]
        lines += [f"   {'*' if i == 0 else ' '} - {c}" for i, c in enumerate(cells)]
    return lines


def _provenance(record: Mapping[str, Any]) -> list[str]:
    """The run's commit (and every commit its tables were made on, when more than one or any
    from uncommitted changes), versions and data status as a field list."""
    git = record.get("git", {})
    commit = git.get("commit") or "unknown (not a git checkout)"
    dirty = " (with uncommitted changes)" if git.get("dirty") else ""
    versions = ", ".join(f"{k} {v}" for k, v in sorted(record.get("versions", {}).items()) if v)
    lines = [f":Commit: ``{commit}``{dirty}"]
    commits, from_dirty = record.get("made_on") or ({}, [])
    if len(commits) > 1 or from_dirty:
        made = ", ".join(f"``{c[:12]}`` ({n})" for c, n in commits.items())
        lines.append(f":Tables made on: {len(commits)} commit(s), {made}")
    if from_dirty:
        lines.append(
            f":Uncommitted changes: {len(from_dirty)} table(s) made from them, e.g."
            f" ``{from_dirty[0]}``"
        )
    return lines + [
        f":Versions: {versions}",
        f":Data: {rst_escape(record.get('data', ''))}",
        f":Scale: {record.get('scale', '?')}",
    ]


def landing_page(table: pd.DataFrame, figures: Iterable[str], provenance: Mapping[str, Any]) -> str:
    """The report's landing page (reStructuredText, inside Jinja ``raw`` tags because
    Snakemake renders it as a template). ``figures``: those in the report, to link."""
    linked = set(figures)
    scale = table["scale"].iloc[0] if len(table) else "?"
    substitutes = int(table["data_substitute"].sum()) if len(table) else 0
    lines = ["", ""] + _heading(f"Reproduction verdict: {summary_line(table)}", "=")
    lines += [f".. role:: {role}" for role in ROLES.values()] + [""]
    lines += [".. raw:: html", "", f"   {PAGE_CSS}", ""]
    lines += [
        f"Every claim of the three papers (``workflow/claims.yaml``), checked on this run's"
        f" CSVs at the **{scale}** scale. Failures, indicative claims and claims not run come"
        " first; each row links the figure that shows it, whose caption opens with the same"
        " verdicts. Measured values are rounded to a precision that reproduces across machines"
        " (see README, What reproduces).",
        "",
    ]
    lines += reductions_lines(scale, provenance.get("reductions", ()))
    if substitutes:
        lines += [
            f"**{substitutes} claim(s) are measured on substitute data**: a non-official copy"
            " of a dataset, accepted by an explicit opt-in (``data_substitute`` in their"
            " provenance).",
            "",
        ]
    lines += _table(table, linked) + [""]
    indicative = indicative_groups(table)
    if indicative:
        lines += _heading(INDICATIVE_HEADING)
        lines += [
            f"- {rst_escape(reduction.rstrip('.'))}: {', '.join(f'``{c}``' for c in ids)}."
            for reduction, ids in indicative.items()
        ]
        lines.append("")
    skipped = table[table["verdict"] == "not_run"]
    if len(skipped):
        lines += _heading("Not run, and why")
        lines += [f"- ``{r.claim_id}``: {rst_escape(r.reason)}." for r in skipped.itertuples()]
        lines.append("")
    lines += _heading("Provenance of this run") + _provenance(provenance) + ["", ""]
    return jinja_raw("\n".join(lines)) + "\n"


def landing_html(rst: str, links: Mapping[str, str] = {}) -> str:
    """The landing page as a standalone HTML document (``results/claims.html``). A figure
    reference (a target inside the report) becomes a link to the figure's file: ``links``
    maps each figure's contract path to its address relative to the page; a figure without
    one stays plain text."""
    by_name = {figure.rsplit("/", 1)[-1]: href for figure, href in links.items()}

    def link(match: re.Match[str]) -> str:
        name = match.group(1)
        return f"`{name} <{by_name[name]}>`__" if name in by_name else name

    text = strip_raw(rst)
    text = re.sub(r"`([^`<]+)`_(?!_)", link, text)
    return publish_parts(text, writer="html")["whole"]


def verdict_metrics(table: pd.DataFrame) -> dict[str, Any]:
    """``results/claims_summary.json`` (``dvc metrics diff --targets`` reads it; ``dvc metrics
    show`` prints its counts alone, ``results/claims_counts.json``): the verdict counts and each
    claim's measured value at the precision the tables show (``"not_run"`` when
    not run; an infinite value as its text, ``"inf"``, since strict JSON has no Infinity), so
    ``dvc metrics diff`` compares runs at digits that reproduce."""
    measured = {}
    for r in table.itertuples():
        text = measured_text(r).split(" (")[0]
        try:
            value = float(text)
        except ValueError:  # "–" (not run: DVC drops nulls) or "< 1e-4" (below the step)
            measured[r.claim_id] = "not_run" if text == "–" else text
            continue
        # strict JSON has no Infinity or NaN: such a value stays its text ("inf")
        measured[r.claim_id] = value if math.isfinite(value) else text
    return {
        "scale": str(table["scale"].iloc[0]) if len(table) else "?",
        **verdict_counts(table),
        "substitute_data": int(table["data_substitute"].sum()) if len(table) else 0,
        "measured": measured,
    }


def run_summary(
    root: str | os.PathLike[str] | OutputRoot = ".", report: str = "results/report.zip"
) -> str:
    """:func:`_summary_text` for a terminal (control characters from the table escaped)."""
    return terminal_text(_summary_text(root, report))


def _summary_text(
    root: str | os.PathLike[str] | OutputRoot = ".", report: str = "results/report.zip"
) -> str:
    """The lines printed when a run ends: verdict counts, failed claims, report and table.
    ``root``: the run's outputs (a folder is a quick run's checkout; see galu.workflow.scales)."""
    root = output_root(root)
    claims = root / "results/claims.csv"
    lines = ["galu: the run finished."]
    if not claims.is_file():
        lines.append(
            "  No claims table yet: run `snakemake` (all targets) to check the papers' claims."
        )
        return "\n".join(lines)
    try:
        table = pd.read_csv(claims)
        summary = summary_line(table)
    except (ValueError, KeyError) as error:  # an empty or foreign table: say so, never crash
        lines.append(
            f"  {root.relative('results/claims.csv')} could not be read ({error}); `galu audit`"
            " checks it."
        )
        return "\n".join(lines)
    scale = table["scale"].iloc[0] if "scale" in table and len(table) else "?"
    made = time.strftime("%Y-%m-%d %H:%M", time.localtime(claims.stat().st_mtime))
    md = root.relative("results/claims.md")
    lines.append(f"  Claims at the {scale} scale ({md}, written {made}): {summary}.")
    failed = table[table["verdict"] == "fail"]
    for row in failed.itertuples():
        lines.append(f"  FAIL {row.claim_id}: measured {measured_text(row)} ({row.figure})")
    path, report = root / report, root.relative(report)
    if path.is_file():
        lines.append(f"  Report: {report} (unzip it, open report/report.html).")
    else:
        lines.append(f"  No report yet: `snakemake --report {report}` after a full run builds it.")
    return "\n".join(lines)
