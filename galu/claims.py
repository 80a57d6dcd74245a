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
  (``measured >= expected - tolerance``);
- ``precision``: optionally, the step the measured value is shown to (default: see
  :mod:`galu.precision`), so that tables show only digits that reproduce across machines;
- ``finding``: what we believe explains a failure. Numbers it quotes come from the run:
  ``{name}`` is replaced by the quantity ``finding_values[name]`` (``source``, ``where``,
  ``expression``, ``reduce``, ``precision``; measured like a claim) of this run's CSVs.
- ``alternative`` (optional): ``{label: ..., <measurement fields>}``, the same claim
  measured another way, shown beside the verdict but never deciding it, e.g. the
  test-selected numbers beside the validation-selected ones (``label: test-selected``,
  ``pivot`` on ``test_error_test_selected``). Its fields override the claim's
  ``where``, ``pivot``, ``expression``, ``reduce`` and ``x``.

A claim whose CSV was not produced (its stage disabled, its data missing)
or whose rows are absent is ``not_run`` with the reason: never a silent pass. A claim
measured on a CSV whose provenance says ``data_substitute`` (e.g. made from the CIFAR-10
reconstruction) says so in every table and caption.
"""

from __future__ import annotations

import math
import re
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

import numpy as np
import pandas as pd

from galu.precision import differing_lines, display_step, format_measured
from galu.provenance import is_substitute
from galu.rst import rst_escape
from galu.scales import OutputRoot, judged_as, output_root

COMPARISONS = ("within", "at_most", "at_least")
REDUCTIONS = ("mean", "median", "max", "min", "count", "fraction", "first_x", "last_x")
PAPERS = ("galu", "scm", "normalization")
REQUIRED = ("id", "paper", "statement", "figure", "source", "expression", "reduce", "expected")
MEASUREMENT = ("where", "pivot", "expression", "reduce", "x")


@dataclass(frozen=True)
class Quantity:
    """A number a finding quotes, measured on this run's CSVs like a claim (``measure``)."""

    source: str
    expression: str
    reduce: str
    precision: float
    where: str | None = None
    x: str | None = None
    pivot: tuple[tuple[str, ...], str, str] | None = None


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
    precision: float | None = None
    finding_values: tuple[tuple[str, Quantity], ...] = ()
    alternative: Claim | None = None
    alternative_label: str = ""
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


def _quantities(value: Any, claim_id: str) -> tuple[tuple[str, Quantity], ...]:
    """``finding_values`` of a claim: name -> Quantity."""
    quantities = []
    for name, spec in (value or {}).items():
        try:
            quantities.append(
                (
                    str(name),
                    Quantity(
                        source=spec["source"],
                        expression=spec["expression"],
                        reduce=spec["reduce"],
                        precision=float(spec["precision"]),
                        where=spec.get("where"),
                        x=spec.get("x"),
                        pivot=_pivot(spec.get("pivot"), claim_id),
                    ),
                )
            )
        except (KeyError, TypeError):
            raise ValueError(
                f"claim {claim_id!r}: finding value {name!r} needs source, expression, reduce"
                " and precision"
            ) from None
    return tuple(quantities)


def _alternative(entry: Mapping[str, Any], scale: str) -> tuple[Claim | None, str]:
    """The claim measured the ``alternative`` way (its overrides applied), and its label."""
    value = entry.get("alternative")
    if value is None:
        return None, ""
    unknown = sorted(set(value) - {"label", *MEASUREMENT}) if isinstance(value, Mapping) else []
    if not isinstance(value, Mapping) or "label" not in value or unknown:
        raise ValueError(
            f"claim {entry['id']!r}: alternative needs a label and may override only "
            f"{', '.join(MEASUREMENT)}; got {value!r}"
        )
    overrides = {k: v for k, v in value.items() if k != "label"}
    base = {k: v for k, v in entry.items() if k != "alternative"}
    return _claim({**base, **overrides}, scale), str(value["label"])


def _claim(entry: Mapping[str, Any], scale: str) -> Claim:
    missing = [k for k in REQUIRED if k not in entry]
    if missing:
        raise ValueError(f"claim {entry.get('id', '?')!r} lacks {', '.join(missing)}")
    tolerance, stated = _tolerance(entry.get("tolerance", 0.0), scale)
    scales = tuple(entry.get("scales", stated or ("quick", "paper")))
    alternative, label = _alternative(entry, scale)
    return Claim(
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
        alternative=alternative,
        alternative_label=label,
        precision=float(entry["precision"]) if "precision" in entry else None,
        finding_values=_quantities(entry.get("finding_values"), entry["id"]),
        section=" ".join(str(entry.get("section", "")).split()),
    )


def parse_claims(entries: Iterable[Mapping[str, Any]], scale: str) -> list[Claim]:
    """Claims from the YAML list, with tolerances resolved for ``scale``; ids must be unique."""
    claims = [_claim(entry, scale) for entry in entries]
    for c in claims:
        named = set(re.findall(r"\{(\w+)\}", c.finding))
        declared = {name for name, _ in c.finding_values}
        if named != declared:
            raise ValueError(
                f"claim {c.claim_id!r}: the finding's placeholders {sorted(named)} and its"
                f" finding_values {sorted(declared)} differ"
            )
    ids = [c.claim_id for c in claims]
    duplicates = sorted({i for i in ids if ids.count(i) > 1})
    if duplicates:
        raise ValueError(f"duplicate claim ids: {', '.join(duplicates)}")
    return claims


def measure(claim: Claim | Quantity, table: pd.DataFrame) -> float | None:
    """The claim's (or quantity's) measured value on ``table``; None when no rows match."""
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


def _finding_from_run(claim: Claim, root: OutputRoot, tables: dict[str, pd.DataFrame]) -> str:
    """The claim's finding with each ``{name}`` replaced by that quantity on this run's CSVs
    (``?`` with the reason when its CSV or rows are missing)."""
    values = {}
    for name, quantity in claim.finding_values:
        path = root / quantity.source
        if not path.is_file():
            values[name] = f"? ({quantity.source} was not produced)"
            continue
        if quantity.source not in tables:
            tables[quantity.source] = pd.read_csv(path)
        value = measure(quantity, tables[quantity.source])
        values[name] = (
            "? (no rows)" if value is None else format_measured(value, quantity.precision)
        )
    return re.sub(r"\{(\w+)\}", lambda m: values[m[1]], claim.finding)


def _mark_reduced(row: dict[str, Any], scale: str, reduction: str) -> None:
    """A claim measured on a run that reduced what it depends on: ``not_run``, with the
    reduction and the reduced run's value in the reason (not a verdict on the paper)."""
    value = format_measured(row["measured"], row["precision"])
    row.update(
        verdict="not_run",
        measured=math.nan,
        finding="",
        reason=(
            f"its stage could not run at the paper's settings at the {scale} scale"
            f" ({reduction.rstrip('.')}); the reduced run measured {value}"
        ),
    )


def source_stage(source: str) -> str:
    """The stage whose rules make contract table ``source`` (``results/<stage>/...``)."""
    return PurePosixPath(source).parts[1]


def evaluate(
    claims: Iterable[Claim],
    root: str | Path | OutputRoot,
    scale: str,
    reduced: Mapping[str, str] | None = None,
    stages: Collection[str] | None = None,
) -> pd.DataFrame:
    """One row per claim: the ``results/claims.csv`` contract of DESIGN.md, plus reasons.

    ``root``: the run's outputs (a folder is a quick run's checkout; see galu.scales).
    ``claims`` are parsed for the scale the run is judged as (:func:`galu.scales.judged_as`).
    ``reduced``: claim id -> what the run reduced from the paper's settings that the claim
    depends on (the config's ``reductions``); such a claim is ``not_run`` with that reason
    and the value measured on the reduced run, never a verdict on the paper's claim.
    ``stages``: the stages the run made (the config's ``stages``; None: all). A claim of
    another stage is ``not_run`` even when its table lies in the checkout (e.g. put back by
    ``galu resume``): it is not an input of this run's claims job."""
    root = output_root(root)
    reduced = dict(reduced or {})
    checked = judged_as(scale)
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
            "data_substitute": False,
            "precision": claim.precision or math.nan,
            "alternative": claim.alternative_label,
            "measured_alternative": math.nan,
            "section": claim.section,
        }
        path = root / claim.source
        if checked not in claim.scales:
            row["reason"] = f"checked only at the {', '.join(claim.scales)} scale"
        elif stages is not None and source_stage(claim.source) not in stages:
            row["reason"] = (
                f"the {source_stage(claim.source)} stage is not among this run's stages"
                f" ({', '.join(stages)}; config key `stages`)"
            )
        elif not path.is_file():
            row["reason"] = f"{claim.source} was not produced (stage disabled or its data missing)"
        else:
            if claim.source not in tables:
                tables[claim.source] = pd.read_csv(path)
            row["data_substitute"] = is_substitute(path)
            try:
                value = measure(claim, tables[claim.source])
                missing = None
            except (KeyError, NameError) as error:  # a model or column this run did not make
                value, missing = None, error
            if missing is not None:
                row["reason"] = (
                    f"{claim.source} of this configuration lacks what the claim reads ({missing})"
                )
            elif value is None:
                row["reason"] = f"no rows of {claim.source} match {claim.where!r}"
            else:
                row["measured"] = value
                row["precision"] = display_step(
                    claim.expected, claim.tolerance, value, claim.precision
                )
                row["verdict"] = verdict(claim, value)
                if claim.alternative is not None:
                    other = measure(claim.alternative, tables[claim.source])
                    row["measured_alternative"] = math.nan if other is None else other
                row["reason"] = claim.justification
                if row["verdict"] == "fail":
                    row["finding"] = _finding_from_run(claim, root, tables)
                if claim.claim_id in reduced:
                    _mark_reduced(row, scale, reduced[claim.claim_id])
        rows.append(row)
    return pd.DataFrame(rows)


def _number(value: float) -> str:
    """A stated number (expected value, tolerance): three significant digits."""
    if isinstance(value, float) and math.isnan(value):
        return "–"
    return f"{value:.3g}"


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


def verdict_text(row: Any) -> str:
    """``**pass**``, with ``(substitute data)`` when the claim's inputs descend from a
    substitute dataset."""
    return f"**{row.verdict}**" + (" (substitute data)" if row.data_substitute else "")


def _cell(text: str) -> str:
    return str(text).replace("|", "\\|")


def expected_text(compare: str, expected: float) -> str:
    """The expected value with its comparison: ``0.52``, ``≤ 0.02`` or ``≥ 30``."""
    return {"within": "", "at_most": "≤ ", "at_least": "≥ "}[compare] + _number(expected)


VERDICTS = ("pass", "fail", "not_run")


def verdict_counts(table: pd.DataFrame) -> dict[str, int]:
    """How many claims of each verdict (every verdict present, zeros included)."""
    counts = table["verdict"].value_counts()
    return {v: int(counts.get(v, 0)) for v in VERDICTS}


def summary_line(table: pd.DataFrame) -> str:
    """``26 pass, 4 fail, 1 not_run`` (in that order, zeros included)."""
    return ", ".join(f"{n} {v}" for v, n in verdict_counts(table).items())


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
        "| claim | paper | statement | expected | measured | tolerance | verdict |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in table.itertuples():
        cells = [
            f"`{r.claim_id}`",
            r.paper,
            _cell(r.statement),
            expected_text(r.compare, r.expected),
            _cell(measured_text(r)),
            _number(r.tolerance),
            verdict_text(r),
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


def bound_text(compare: str, expected: float, tolerance: float) -> str:
    """The bound a measurement must meet, with the tolerance folded in, for a caption:
    ``≤ 0.05 (0 plus tolerance 0.05)`` rather than "expected ≤ 0, tolerance 0.05", which
    reads like a failure next to a passing measurement of 0.01; ``0.52 ± 0.05`` for within."""
    if compare == "within":
        return _number(expected) + (f" ± {_number(tolerance)}" if tolerance else "")
    limit = expected + tolerance if compare == "at_most" else expected - tolerance
    text = expected_text(compare, limit)
    if tolerance:
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
            else:
                why = str(r.reason).rstrip(".")
                evidence = (
                    f"Expected {bound_text(r.compare, r.expected, r.tolerance)}, measured"
                    f" {rst_escape(measured_text(r))}"
                    f"{' (' + rst_escape(why) + ')' if why else ''}."
                )
            if r.verdict == "fail":
                evidence += f" *What we believe explains it:* {rst_escape(_finding(r.finding))}"
            substitute = " (measured on substitute data)" if r.data_substitute else ""
            items.append(
                f"- **{r.verdict}** ``{r.claim_id}``{substitute}: {rst_escape(r.statement)}"
                f" {evidence}"
            )
        body = (
            f"**Claims this figure tests, checked at the {scale} scale** "
            "(all claims: ``results/claims.csv``):\n\n" + "\n".join(items)
        )
    return f"\n{{% raw %}}\n\n{body}\n\n{{% endraw %}}\n"


def reduced_claims(
    reductions: Iterable[Mapping[str, Any]], claim_ids: Iterable[str]
) -> dict[str, str]:
    """Claim id -> the text of the config ``reductions`` entry that names it. Raises
    ValueError naming an id that is no claim of workflow/claims.yaml."""
    known = set(claim_ids)
    reduced = {}
    for entry in reductions:
        for claim_id in entry.get("claims", []):
            if claim_id not in known:
                raise ValueError(
                    f"reductions: {claim_id!r} is not a claim id of workflow/claims.yaml;"
                    " name the claims the reduction affects by their id"
                )
            reduced[claim_id] = str(entry["text"])
    return reduced


def reductions_lines(scale: str, reductions: Iterable[Mapping[str, Any]]) -> list[str]:
    """reStructuredText lines saying what ``scale`` reduces from the paper's settings (its
    config's ``reductions``, e.g. config/paper-cpu.yaml); none when it reduces nothing."""
    texts = [str(r["text"]) for r in reductions]
    if not texts:
        return []
    return [
        f"**Reduced from the paper's settings at the {scale} scale** (the config's"
        " ``reductions``; claims that depend on a reduction are not_run):",
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
    return f"\n{{% raw %}}\n\n{body}\n{{% endraw %}}\n"


README_START = "<!-- claims:start (generated by the workflow from results/claims.md) -->"
README_END = "<!-- claims:end -->"


Markers = tuple[str, str]
QUICK_MARKERS: Markers = (README_START, README_END)


def readme_with_section(readme: str, section: str, markers: Markers = QUICK_MARKERS) -> str:
    """``readme`` with the text between ``markers`` (the quick claims section's unless
    given) replaced by ``section``."""
    start, end = markers
    if start not in readme or end not in readme:
        raise ValueError(f"README.md lacks the markers {start!r} and {end!r}")
    head, rest = readme.split(start, 1)
    _, tail = rest.split(end, 1)
    return f"{head}{start}\n{section}{end}{tail}"


def readme_section(readme: str, markers: Markers = QUICK_MARKERS) -> str:
    """The text between ``markers`` of ``readme``."""
    readme_with_section(readme, "", markers)  # raises when the markers are missing
    return readme.split(markers[0], 1)[1].split(markers[1], 1)[0].removeprefix("\n")


def readme_differences(
    readme: str, section: str, markers: Markers = QUICK_MARKERS
) -> list[tuple[str, str]]:
    """The lines of README's section between ``markers`` that disagree with ``section``
    (generated: ``results/claims.md``, or the published paper-level section) beyond the
    precision shown: words must match, numbers within one unit of their last digit
    (:func:`galu.precision.lines_agree`)."""
    return differing_lines(readme_section(readme, markers), section)


def describe_differences(pairs: list[tuple[str, str]], limit: int = 10) -> str:
    """The differing lines, README's then the run's, for a terminal."""
    lines = []
    for old, new in pairs[:limit]:
        lines += [f"  README: {old or '(no line)'}", f"  run:    {new or '(no line)'}"]
    if len(pairs) > limit:
        lines.append(f"  ... and {len(pairs) - limit} more")
    return "\n".join(lines)
