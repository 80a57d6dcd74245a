"""The report's landing page: per paper whether it holds, then the verdict table, the scale's
reductions and the run's provenance.

Snakemake shows the workflow description (the Snakefile's ``report:`` file) when the report
opens. The ``claims`` rule writes it from :func:`galu.workflow.claims.evaluate`'s table as
reStructuredText: one line per paper (:mod:`galu.workflow.verdict_lines`: its own claims in a
sentence, our own checks apart), the counts of every check, the verdict table as HTML
(:mod:`galu.workflow.verdict_table`: failures, indicative and not_run claims first, each row
linking its figure's page in the report, the "why" behind a click), and the commit, package
versions and data status of the run. The same page, as standalone HTML, is
``results/claims.html``.
"""

from __future__ import annotations

import math
import os
import time
from collections.abc import Iterable, Mapping
from typing import Any

import pandas as pd
from docutils.core import publish_parts

from galu.workflow.claims_text import (
    INDICATIVE_HEADING,
    indicative_groups,
    measured_text,
    reductions_lines,
    summary_line,
    verdict_counts,
)
from galu.workflow.rst import jinja_raw, rst_escape, strip_raw
from galu.workflow.scales import OutputRoot, output_root, scaled
from galu.workflow.terminal import terminal_text
from galu.workflow.verdict_lines import paper_lines
from galu.workflow.verdict_table import CSS, relink, report_link, table_html

# In the closure of the jobs that import it (galu.workflow.closure): it writes their bytes.
RESULT_CODE = "the report's landing page and claims.html"

# Written by the claims rule; the Snakefile's `report:` once it exists.
LANDING_PAGE = "results/captions/index.rst"
PAGE_CSS = (
    "<style>h1.title,h1{font-size:1.6em;margin:0.3em 0}"
    # Snakemake centres the description vertically in a scrolling box: a page taller than
    # the window would lose its top (the verdict) above the scroll range. Top-align it, and
    # let the table use the width.
    ".h-screen.overflow-auto{align-items:flex-start!important;justify-content:flex-start!important}"
    ".prose.max-w-lg{max-width:80rem!important}"
    # Snakemake puts the rule graph beside the description: wrap it below, so the table
    # gets the page's width and its first row shows without scrolling past the graph.
    "div.flex:has(>div>.prose.max-w-lg){flex-wrap:wrap}"
    "div:has(>.prose.max-w-lg){flex:1 0 100%;min-width:0}"
    # The report's typography puts wide margins around a table's lines; the verdict table
    # keeps its own, so five claims and more fit a laptop's screen.
    ".prose .verdicts :where(p,td,th){margin:0}"
    # The report's typography writes backquotes around code; the page's code is code.
    ".prose code::before,.prose code::after{content:none!important}"
    # A phone: the report's menu above the page rather than beside it (it took 80 % of the
    # width), the page below it at the screen's width.
    "@media (max-width:700px){#app>div.flex-row{flex-direction:column;height:auto}"
    "#app nav.transition-all{width:100%;height:auto}"
    "#app .h-screen.overflow-auto{height:auto;overflow:visible}"
    "div.flex:has(>div>.prose.max-w-lg){padding:0 4px;min-width:0;max-width:100%}"
    "div.flex:has(>div>.prose.max-w-lg) :where(svg,img){max-width:100%;height:auto}"
    # the rule graph beside the page: scrolled within its own box, never widening the page
    ".vega-embed{max-width:100%;overflow-x:auto}}"
    f"{CSS}</style>"
)
# The standalone page only (the report has its own fonts): readable on a phone, in the
# reader's own sans-serif.
STANDALONE_HEAD = (
    '<meta name="viewport" content="width=device-width, initial-scale=1">'
    "<style>body{font-family:system-ui,-apple-system,'Segoe UI',sans-serif;margin:0 auto;"
    "max-width:90rem;padding:0 8px}</style>"
)


def _heading(title: str, underline: str = "-") -> list[str]:
    """A reStructuredText section title (its underline as long as the title)."""
    return [title, underline * len(title), ""]


def _raw_html(lines: Iterable[str]) -> list[str]:
    """A reStructuredText ``raw`` block of HTML lines (each indented: text from data is on
    one line, escaped by :func:`~galu.workflow.verdict_table.text_html`)."""
    return [".. raw:: html", "", *(f"   {line}" for line in lines), ""]


def paper_lines_rst(table: pd.DataFrame) -> list[str]:
    """Per paper, one line: its name and :func:`~galu.workflow.verdict_lines.paper_sentence`."""
    lines = [f"- **{name}**: {rst_escape(sentence)}" for name, sentence in paper_lines(table)]
    return lines + [""]


def _provenance(record: Mapping[str, Any]) -> list[str]:
    """The run's commit (and every commit its tables were made on, when more than one or any
    from uncommitted changes), versions and data status as a field list."""
    git = record.get("git", {})
    commit = git.get("commit") or "unknown (not a git checkout)"
    dirty = " (with uncommitted changes)" if git.get("dirty") else ""
    versions = ", ".join(f"{k} {v}" for k, v in sorted(record.get("versions", {}).items()) if v)
    lines = [f":Claims checked on commit: ``{commit}``{dirty}"]
    commits, from_dirty = record.get("made_on") or ({}, [])
    if len(commits) > 1 or from_dirty:
        made = ", ".join(f"``{c[:12]}`` ({n})" for c, n in commits.items())
        lines.append(
            f":Tables made on: {len(commits)} commit(s), with the number of the claims' input"
            f" tables made on each: {made}"
        )
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
    Snakemake renders it as a template): per paper one line, then the verdict table
    (:mod:`galu.workflow.verdict_table`), what this scale reduces and the provenance.
    ``figures``: the contract paths of those in the report, linked to their page there."""
    scale = table["scale"].iloc[0] if len(table) else "?"
    in_report = set(figures)

    def href(figure: str) -> str | None:
        return report_link(scaled(figure, scale)) if figure in in_report else None

    substitutes = int(table["data_substitute"].sum()) if len(table) else 0
    reductions = reductions_lines(scale, provenance.get("reductions", ()))
    lines = ["", ""] + _heading(f"Do the papers hold? The {scale} scale", "=")
    lines += _raw_html([PAGE_CSS])
    lines += paper_lines_rst(table)
    note = (
        f"All {len(table)} checks (the papers' claims and ours, ``workflow/claims.yaml``) on this"
        f" run's CSVs: {summary_line(table)}. Failures, indicative claims and claims not run come"
        " first; click a claim for why; each links the figure that shows it. Numbers are"
        " rounded to a precision that reproduces across machines."
    )
    if reductions:
        note += " This scale reduces the paper's settings (listed below the table)."
    lines += [note, ""]
    if substitutes:
        lines += [
            f"**{substitutes} claim(s) are measured on substitute data**: a non-official copy"
            " of a dataset, accepted by an explicit opt-in (``data_substitute`` in their"
            " provenance).",
            "",
        ]
    lines += _raw_html(table_html(table, href))
    lines += reductions
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
    """The landing page as a standalone HTML document (``results/claims.html``, and a
    publication's ``claims.html``), readable on a phone (a viewport). Each figure link
    points at ``links[figure]`` (a figure's contract path -> its address relative to the
    page) instead of the report; a figure without one stays plain text."""
    page = publish_parts(relink(strip_raw(rst), links), writer="html")["whole"]
    return page.replace("<head>", f"<head>\n{STANDALONE_HEAD}", 1)


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
