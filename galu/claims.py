"""Check the papers' claims against the workflow's tidy CSVs.

Claims are data (``workflow/claims.yaml``), not code: each names the paper,
its statement, the figure that shows it, the CSV it is measured on, how to
measure it and what value is expected within which tolerance. A measurement
is declarative:

- ``where``: a pandas query selecting rows (optional);
- ``pivot``: optionally ``{index: [...], columns: ..., values: ...}``, the mean of
  ``values`` per index row and column value, so an expression can compare models
  (e.g. ``galu - relu`` per width); the index becomes ordinary columns;
- ``expression``: a pandas ``eval`` expression giving one value per row;
- ``reduce``: how the rows become one number: ``mean``, ``median``, ``max``,
  ``min``, ``count``, ``fraction`` (mean of a boolean), or ``first_x`` (the
  smallest value of column ``x`` at which the expression is true);
- ``section``: where the statement comes from (the paper's section, figure or
  table; "ours" for our own statements), optional, carried to ``evaluate``'s table;
- ``compare``: ``within`` (``|measured - expected| <= tolerance``),
  ``at_most`` (``measured <= expected + tolerance``) or ``at_least``
  (``measured >= expected - tolerance``).

A claim whose CSV was not produced (its stage disabled, its data missing)
or whose rows are absent is ``not_run`` with the reason: never a silent pass.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

COMPARISONS = ("within", "at_most", "at_least")
REDUCTIONS = ("mean", "median", "max", "min", "count", "fraction", "first_x", "last_x")
PAPERS = ("galu", "scm", "normalization")
REQUIRED = ("id", "paper", "statement", "figure", "source", "expression", "reduce", "expected")


@dataclass(frozen=True)
class Claim:
    """One checkable statement of a paper."""

    claim_id: str
    paper: str
    statement: str
    figure: str
    source: str
    expression: str
    reduce: str
    expected: float
    tolerance: float
    compare: str = "within"
    where: str | None = None
    x: str | None = None
    pivot: tuple[tuple[str, ...], str, str] | None = None
    justification: str = ""
    finding: str = ""
    scales: tuple[str, ...] = field(default=("quick", "paper"))
    section: str = ""

    def __post_init__(self) -> None:
        bad = {
            "paper": (self.paper, PAPERS),
            "reduce": (self.reduce, REDUCTIONS),
            "compare": (self.compare, COMPARISONS),
        }
        for key, (value, allowed) in bad.items():
            if value not in allowed:
                raise ValueError(
                    f"claim {self.claim_id!r}: {key} {value!r} is not one of {', '.join(allowed)}"
                )
        if self.reduce in ("first_x", "last_x") and not self.x:
            raise ValueError(
                f"claim {self.claim_id!r}: reduce {self.reduce!r} needs the column 'x'"
            )
        if not self.tolerance >= 0:
            raise ValueError(f"claim {self.claim_id!r}: tolerance must be >= 0")


def _tolerance(value: Any, scale: str) -> tuple[float, tuple[str, ...] | None]:
    """A tolerance is a number or a mapping scale -> number (seed spread differs by scale).

    Returns the tolerance at ``scale`` and, for a mapping, the scales it covers: a claim is
    only checked at a scale its tolerance is stated for (elsewhere it is ``not_run``).
    """
    if isinstance(value, Mapping):
        return float(value.get(scale, 0.0)), tuple(value)
    return float(value), None


def _pivot(value: Any, claim_id: str) -> tuple[tuple[str, ...], str, str] | None:
    if value is None:
        return None
    try:
        index = value["index"]
        return (
            tuple([index] if isinstance(index, str) else index),
            value["columns"],
            value["values"],
        )
    except (KeyError, TypeError):
        raise ValueError(f"claim {claim_id!r}: pivot needs index, columns and values") from None


def parse_claims(entries: Iterable[Mapping[str, Any]], scale: str) -> list[Claim]:
    """Claims from the YAML list, with tolerances resolved for ``scale``; ids must be unique."""
    claims: list[Claim] = []
    for entry in entries:
        missing = [k for k in REQUIRED if k not in entry]
        if missing:
            raise ValueError(f"claim {entry.get('id', '?')!r} lacks {', '.join(missing)}")
        tolerance, stated = _tolerance(entry.get("tolerance", 0.0), scale)
        scales = tuple(entry.get("scales", stated or ("quick", "paper")))
        claims.append(
            Claim(
                claim_id=str(entry["id"]),
                paper=entry["paper"],
                statement=" ".join(str(entry["statement"]).split()),
                figure=entry["figure"],
                source=entry["source"],
                expression=entry["expression"],
                reduce=entry["reduce"],
                expected=float(entry["expected"]),
                tolerance=tolerance,
                compare=entry.get("compare", "within"),
                where=entry.get("where"),
                x=entry.get("x"),
                pivot=_pivot(entry.get("pivot"), entry["id"]),
                justification=" ".join(str(entry.get("justification", "")).split()),
                finding=" ".join(str(entry.get("finding", "")).split()),
                scales=scales,
                section=" ".join(str(entry.get("section", "")).split()),
            )
        )
    ids = [c.claim_id for c in claims]
    duplicates = sorted({i for i in ids if ids.count(i) > 1})
    if duplicates:
        raise ValueError(f"duplicate claim ids: {', '.join(duplicates)}")
    return claims


def measure(claim: Claim, table: pd.DataFrame) -> float | None:
    """The claim's measured value on ``table``; None when no rows match."""
    rows = table.query(claim.where) if claim.where else table
    if rows.empty:
        return None
    if claim.pivot:
        index, columns, values = claim.pivot
        rows = rows.pivot_table(index=list(index), columns=columns, values=values, aggfunc="mean")
        rows = rows.reset_index()
        rows.columns = [str(c) for c in rows.columns]
    values = pd.Series(rows.eval(claim.expression), index=rows.index)
    if claim.reduce == "count":
        return float(values.sum()) if values.dtype == bool else float(len(values))
    if claim.reduce == "fraction":
        return float(values.astype(bool).mean())
    if claim.reduce == "first_x":
        hits = rows.loc[values.astype(bool), claim.x]
        return float(hits.min()) if len(hits) else math.inf
    if claim.reduce == "last_x":
        return float(values.loc[rows[claim.x].idxmax()])
    return float(getattr(np, claim.reduce)(values.to_numpy(dtype=float)))


def verdict(claim: Claim, measured: float) -> str:
    """``pass`` or ``fail`` of a measured value (NaN always fails)."""
    if math.isnan(measured):
        return "fail"
    if claim.compare == "within":
        ok = abs(measured - claim.expected) <= claim.tolerance
    elif claim.compare == "at_most":
        ok = measured <= claim.expected + claim.tolerance
    else:
        ok = measured >= claim.expected - claim.tolerance
    return "pass" if ok else "fail"


def evaluate(claims: Iterable[Claim], root: str | Path, scale: str) -> pd.DataFrame:
    """One row per claim: the ``results/claims.csv`` contract of DESIGN.md, plus reasons."""
    root = Path(root)
    tables: dict[str, pd.DataFrame] = {}
    rows = []
    for claim in claims:
        row = {
            "claim_id": claim.claim_id,
            "paper": claim.paper,
            "statement": claim.statement,
            "expected": claim.expected,
            "measured": math.nan,
            "tolerance": claim.tolerance,
            "verdict": "not_run",
            "compare": claim.compare,
            "reason": "",
            "finding": "",
            "figure": claim.figure,
            "source": claim.source,
            "scale": scale,
            "section": claim.section,
        }
        path = root / claim.source
        if scale not in claim.scales:
            row["reason"] = f"checked only at the {', '.join(claim.scales)} scale"
        elif not path.is_file():
            row["reason"] = f"{claim.source} was not produced (stage disabled or its data missing)"
        else:
            if claim.source not in tables:
                tables[claim.source] = pd.read_csv(path)
            value = measure(claim, tables[claim.source])
            if value is None:
                row["reason"] = f"no rows of {claim.source} match {claim.where!r}"
            else:
                row["measured"] = value
                row["verdict"] = verdict(claim, value)
                row["reason"] = claim.justification
                if row["verdict"] == "fail":
                    row["finding"] = claim.finding
        rows.append(row)
    return pd.DataFrame(rows)


def _number(value: float, noise: float = 0.0) -> str:
    """Three significant digits; a measurement below ``noise`` (rounding level) is shown as
    such, not as digits that would change from one machine to the next."""
    if isinstance(value, float) and math.isnan(value):
        return "–"
    if value != 0 and abs(value) < noise:
        return f"< {noise:g}"
    return f"{value:.3g}"


def _cell(text: str) -> str:
    return str(text).replace("|", "\\|")


def expected_text(compare: str, expected: float) -> str:
    """The expected value with its comparison: ``0.52``, ``≤ 0.02`` or ``≥ 30``."""
    return {"within": "", "at_most": "≤ ", "at_least": "≥ "}[compare] + _number(expected)


def markdown_table(table: pd.DataFrame) -> str:
    """The readable claims table (``results/claims.md`` and the README section)."""
    scale = table["scale"].iloc[0] if len(table) else "?"
    counts = table["verdict"].value_counts()
    summary = ", ".join(f"{counts.get(v, 0)} {v}" for v in ("pass", "fail", "not_run"))
    lines = [
        f"Claims checked at the **{scale}** scale: {summary}.",
        "",
        "| claim | paper | statement | expected | measured | tolerance | verdict |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in table.itertuples():
        cells = [
            f"`{r.claim_id}`",
            r.paper,
            _cell(r.statement),
            expected_text(r.compare, r.expected),
            _number(r.measured, noise=1e-8),
            _number(r.tolerance),
            f"**{r.verdict}**",
        ]
        lines.append("| " + " | ".join(cells) + " |")
    failed = table[table["verdict"] == "fail"]
    if len(failed):
        lines += ["", "What we believe explains each failure:", ""]
        lines += [f"- `{r.claim_id}`: {_finding(r.finding)}" for r in failed.itertuples()]
    skipped = table[table["verdict"] == "not_run"]
    if len(skipped):
        lines += ["", "Not run, and why:", ""]
        lines += [f"- `{r.claim_id}`: {r.reason}." for r in skipped.itertuples()]
    return "\n".join(lines) + "\n"


def _finding(text: str) -> str:
    """A failed claim's ``finding``, or that there is none yet."""
    return text or "not investigated yet."


CAPTIONS_DIR = "results/captions"


def caption_path(figure: str) -> str:
    """Where the claims rule writes the report caption of ``figure``:
    ``figures/scm/k3m2.png`` -> ``results/captions/scm/k3m2.rst``."""
    relative = Path(figure).relative_to("figures").with_suffix(".rst")
    return f"{CAPTIONS_DIR}/{relative.as_posix()}"


def rst_escape(text: str) -> str:
    """``text`` as literal reStructuredText: ``|x|``, ``*``, ``_`` and backquotes lose
    their markup meaning (``|x|`` would otherwise be an undefined substitution)."""
    return re.sub(r"([\\`*_|])", r"\\\1", str(text))


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
            else:
                why = str(r.reason).rstrip(".")
                evidence = (
                    f"Expected {expected_text(r.compare, r.expected)}, measured"
                    f" {_number(r.measured, noise=1e-8)} (tolerance {_number(r.tolerance)}"
                    f"{': ' + rst_escape(why) if why else ''})."
                )
            if r.verdict == "fail":
                evidence += f" *What we believe explains it:* {rst_escape(_finding(r.finding))}"
            items.append(
                f"- **{r.verdict}** ``{r.claim_id}``: {rst_escape(r.statement)} {evidence}"
            )
        body = (
            f"**Claims this figure tests, checked at the {scale} scale** "
            "(all claims: ``results/claims.csv``):\n\n" + "\n".join(items)
        )
    return f"\n{{% raw %}}\n\n{body}\n\n{{% endraw %}}\n"


README_START = "<!-- claims:start (generated by the workflow from results/claims.md) -->"
README_END = "<!-- claims:end -->"


def readme_with_section(readme: str, section: str) -> str:
    """``readme`` with the text between the claims markers replaced by ``section``."""
    if README_START not in readme or README_END not in readme:
        raise ValueError(f"README.md lacks the markers {README_START!r} and {README_END!r}")
    head, rest = readme.split(README_START, 1)
    _, tail = rest.split(README_END, 1)
    return f"{head}{README_START}\n{section}{README_END}{tail}"
