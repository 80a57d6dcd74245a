"""The verdict table as HTML, read at a glance: per claim its verdict, statement, the paper's
number, ours, the bound it must meet (the tolerance folded in) and its figure; the "why"
(what explains a failure, why a claim was not run, the tolerance's justification, the
quantity measured, the robustness) one click away. At laptop width a claim takes two to four
lines; on a narrow screen (a phone) each row becomes a card.

The same HTML sits in the report's landing page (inside a ``raw`` block of its
reStructuredText, figure links opening the figure in the report) and in ``claims.html``
(figure links to the files, :func:`relink`). Every text from a claim or a table is escaped
for HTML, and its braces too, so none can become markup, a Jinja tag or a line of
reStructuredText.
"""

from __future__ import annotations

import html
import math
import re
from collections.abc import Callable, Mapping
from typing import Any
from urllib.parse import quote

import pandas as pd

from galu.workflow.claims_text import (
    bound_short,
    finding_text,
    measured_text,
    paper_says_text,
    quantity_text,
    robustness_of,
)

# In the closure of the jobs that import it (galu.workflow.closure): it writes their bytes.
RESULT_CODE = "the verdict table of the report's landing page and claims.html"

ORDER = {"fail": 0, "indicative": 1, "not_run": 2, "pass": 3}
HEADERS = ("verdict", "claim", "paper says", "ours", "bound", "figure")
# Class of the figure links, which relink() finds again; data-figure holds the figure's
# contract path (figures/<stage>/<name>.png).
FIGURE_LINK = re.compile(r'<a class="figure" data-figure="([^"]*)" href="[^"]*">([^<]*)</a>')
_LINE_BREAKS = re.compile(r"\s+")

CSS = (
    ".verdicts{border-collapse:collapse;width:100%;table-layout:fixed;font-size:14px;"
    "line-height:1.35}"
    ".verdicts th,.verdicts td{border-bottom:1px solid #d0d7de;padding:4px 6px;"
    "text-align:left;vertical-align:top;overflow-wrap:break-word}"
    ".verdicts th{background:#f6f8fa}"
    ".verdicts col.c-verdict{width:11%}.verdicts col.c-claim{width:47%}"
    ".verdicts col.c-paper{width:14%}.verdicts col.c-ours{width:10%}"
    ".verdicts col.c-bound{width:8%}.verdicts col.c-figure{width:10%}"
    ".verdicts .id{color:#57606a;font-size:12px}"
    ".verdicts details{font-size:13px;color:#24292f}"
    ".verdicts summary{cursor:pointer;color:#0969da}"
    ".verdicts code{font-size:12px;background:#f6f8fa;padding:0 2px}"
    ".v{font-weight:bold;overflow-wrap:normal}.v-pass{color:#1a7f37}.v-fail{color:#cf222e}"
    ".v-not_run{color:#9a6700}.v-indicative{color:#0969da}"
    ".verdicts .note{display:block;font-weight:normal;font-size:12px;color:#57606a}"
    # A phone: each claim a card, its cells one under the other, each with its label.
    "@media (max-width:700px){.verdicts,.verdicts tbody,.verdicts tr,.verdicts td"
    "{display:block;width:auto}.verdicts colgroup,.verdicts thead{display:none}"
    ".verdicts tr{border:1px solid #d0d7de;border-radius:6px;margin:0 0 10px;padding:4px}"
    ".verdicts td{border:0;padding:2px 4px}"
    ".verdicts td[data-label]:before{content:attr(data-label) ': ';font-weight:bold;"
    "color:#57606a}}"
)


def text_html(text: object) -> str:
    """Text from a claim or a table as HTML: escaped (``<``, ``&``, quotes and braces: no
    markup, no Jinja tag), on one line, and ```code``` in backquotes shown as code."""
    escaped = html.escape(_LINE_BREAKS.sub(" ", str(text)).strip(), quote=True)
    escaped = escaped.replace("{", "&#123;").replace("}", "&#125;")
    return re.sub(r"`([^`]+)`", r"<code>\1</code>", escaped)


def report_link(path: str) -> str:
    """The address that opens a result in the Snakemake report (the target its report
    defines for each result: ``javascript:app.showResultInfo('<path, URL-quoted>')``)."""
    return f"javascript:app.showResultInfo('{quote(path, safe='/')}')"


def _ours(row: Any) -> str:
    if row.verdict == "not_run":
        return '<span class="v v-not_run">not run</span>'
    if math.isnan(row.measured):
        return "no number (NaN)"
    return text_html(measured_text(row))


def _why(row: Any) -> str:
    """What the click on a claim shows: for a failure what explains it, for a claim not run
    or indicative why, else the tolerance's justification; then the quantity measured and
    the robustness of the verdict."""
    if row.verdict == "fail":
        label, body = "Why it fails", finding_text(row.finding)
        if math.isnan(row.measured):
            body = f"The measurement is no number (NaN): {row.reason}. {body}"
    elif row.verdict == "not_run":
        label, body = "Why not run", row.reason
    elif row.verdict == "indicative":
        label, body = (
            "Why not judged",
            f"measured at settings reduced from the paper's: {row.reason}",
        )
    else:
        label, body = "Why this bound", row.reason
    parts = [text_html(body), f"<br><i>Measured:</i> {text_html(quantity_text(row))}."]
    if robustness_of(row):
        parts.append(f"<br><i>The same verdict</i> {text_html(robustness_of(row))}.")
    return f"<details><summary>{label}</summary>{''.join(parts)}</details>"


def _claim(row: Any) -> str:
    section = getattr(row, "section", "")
    source = section if isinstance(section, str) and section else row.paper
    return (
        f"{text_html(row.statement)}"
        f'<div class="id"><code>{text_html(row.claim_id)}</code> · {text_html(source)}</div>'
        f"{_why(row)}"
    )


def _verdict(row: Any) -> str:
    note = '<span class="note">substitute data</span>' if row.data_substitute else ""
    return f'<span class="v v-{row.verdict}">{row.verdict}</span>{note}'


def figure_link(figure: str, href: str | None) -> str:
    """A figure's link as the table writes it (its contract path kept for :func:`relink`),
    or its file name as plain text where ``href`` is None."""
    name = text_html(figure.rsplit("/", 1)[-1])
    if href is None:
        return name
    return (
        f'<a class="figure" data-figure="{text_html(figure)}" href="{text_html(href)}">{name}</a>'
    )


def table_html(table: pd.DataFrame, href: Callable[[str], str | None]) -> list[str]:
    """The verdict table's lines (failures, indicative claims and claims not run first).
    ``href(figure)``: where a figure's link points, None for no link."""
    rows = table.assign(order=table["verdict"].map(ORDER)).sort_values("order", kind="stable")
    cols = "".join(f'<col class="c-{h.split()[0]}">' for h in HEADERS)
    lines = [
        '<table class="verdicts">',
        f"<colgroup>{cols}</colgroup>",
        "<thead><tr>" + "".join(f"<th>{h}</th>" for h in HEADERS) + "</tr></thead>",
        "<tbody>",
    ]
    for r in rows.itertuples():
        cells = (
            _verdict(r),
            _claim(r),
            text_html(paper_says_text(r)),
            _ours(r),
            text_html(bound_short(r.compare, r.expected, r.tolerance)),
            figure_link(r.figure, href(r.figure)),
        )
        tds = "".join(
            f'<td data-label="{h}">{c}</td>' if i else f"<td>{c}</td>"
            for i, (h, c) in enumerate(zip(HEADERS, cells, strict=True))
        )
        lines.append(f'<tr id="{text_html(r.claim_id)}">{tds}</tr>')
    return lines + ["</tbody>", "</table>"]


def relink(page: str, links: Mapping[str, str]) -> str:
    """``page`` with each figure link pointing at ``links[figure]`` (its contract path ->
    an address), or plain text where ``links`` has none."""

    def link(match: re.Match[str]) -> str:
        figure, name = html.unescape(match.group(1)), match.group(2)
        return figure_link(figure, links[figure]) if figure in links else name

    return FIGURE_LINK.sub(link, page)
