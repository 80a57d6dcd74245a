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
- ``quantity``: what the measured number is, in words (e.g. "deepest tested depth at which
  ReLU trains (0: none does)"), carried to every verdict table beside expected, measured and
  tolerance;
- ``paper_says`` (optional): the same quantity as the paper or its authors' published results
  give it, a short value with its source and settings (e.g. "0.0074 (authors' results,
  workflow/reference/galu_authors_images.csv; 100,000 steps)"), carried to the verdict
  tables' "paper says" column beside what we measure; empty where they give no number;
- ``compare``: ``within`` (``|measured - expected| <= tolerance``),
  ``at_most`` (``measured <= expected + tolerance``) or ``at_least``
  (``measured >= expected - tolerance``);
- ``precision``: optionally, the step the measured value is shown to (default: see
  :mod:`galu.workflow.precision`), so that tables show only digits that reproduce across machines;
- ``finding``: what we believe explains a failure. Numbers it quotes come from the run:
  ``{name}`` is replaced by the quantity ``finding_values[name]`` (``source``, ``where``,
  ``expression``, ``reduce``, ``precision``; measured like a claim) of this run's CSVs. A
  part in ``[[...]]`` is written only where every table it quotes was produced (a comparison
  only some scales run, e.g. the second width of ``normalization.wide``).
- ``robustness`` (optional): ``{source: ..., over: <column>}``, how far the verdict depends
  on one free setting of the measurement (e.g. the loss fraction of the trainability
  criterion): the claim is measured on ``source`` once per value of ``over``, and the row
  says over which contiguous range of values around the run's own (the ``over`` column of
  the claim's rows) the verdict stays the same.
- ``alternative`` (optional): ``{label: ..., <measurement fields>}``, the same claim
  measured another way, shown beside the verdict but never deciding it, e.g. the
  test-selected numbers beside the validation-selected ones (``label: test-selected``,
  ``pivot`` on ``test_error_test_selected``). Its fields override the claim's
  ``where``, ``pivot``, ``expression``, ``reduce`` and ``x``.

A claim whose CSV was not produced (its stage disabled, its data missing)
or whose rows are absent is ``not_run`` with the reason: never a silent pass. A claim that a
scale's ``reductions`` name is ``indicative``: measured, but at settings reduced from the
paper's, so not judged. A claim
measured on a CSV whose provenance says ``data_substitute`` (e.g. made from the CIFAR-10
reconstruction) says so in every table and caption.
"""

from __future__ import annotations

import math
import re
from collections.abc import Collection, Iterable, Mapping
from pathlib import Path, PurePosixPath
from typing import Any

import numpy as np
import pandas as pd

from galu.workflow.claim_spec import Claim, Quantity
from galu.workflow.precision import display_step, format_measured
from galu.workflow.provenance import is_substitute
from galu.workflow.scales import OutputRoot, judged_as, output_root

# In the closure of the jobs that import it (galu.workflow.closure): it writes their bytes.
RESULT_CODE = "the verdict table: which rows a claim reads, its measured value, its verdict"


def selected_rows(
    claim: Claim | Quantity, table: pd.DataFrame
) -> tuple[pd.DataFrame, pd.Series] | None:
    """The rows the claim (or quantity) is measured on (``where``, then ``pivot``) and its
    expression's value on each; None when no rows match."""
    rows = table.query(claim.where) if claim.where else table
    if rows.empty:
        return None
    if claim.pivot:
        index, columns, values = claim.pivot
        rows = rows.pivot_table(index=list(index), columns=columns, values=values, aggfunc="mean")
        rows = rows.reset_index()
        rows.columns = [str(c) for c in rows.columns]
    return rows, pd.Series(rows.eval(claim.expression), index=rows.index)


def measure(claim: Claim | Quantity, table: pd.DataFrame) -> float | None:
    """The claim's (or quantity's) measured value on ``table``; None when no rows match."""
    selected = selected_rows(claim, table)
    if selected is None:
        return None
    rows, values = selected
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


def lacking(error: KeyError | NameError) -> str:
    """What a table lacks, in words, from the error pandas raised reading it: ``it has no
    column or value 'tanh_n'`` rather than Python's ``name 'tanh_n' is not defined``."""
    found = re.search(r"name '([^']+)' is not defined", str(error))
    if found:
        return f"it has no column or value {found.group(1)!r}"
    if isinstance(error, KeyError) and error.args:
        return f"it has no column {error.args[0]!r}"
    return str(error)


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


def robust_range(
    claim: Claim, table: pd.DataFrame, own: float
) -> tuple[str, list[float], list[float]]:
    """The verdict of ``claim`` at the value ``own`` of its robustness column, the contiguous
    values of that column around ``own`` that give it too, and all the values in ``table``."""
    over = claim.robustness.over
    values = sorted(float(v) for v in table[over].unique())
    at = [i for i, v in enumerate(values) if math.isclose(v, own)]
    if not at:
        raise ValueError(f"{claim.robustness.source} has no rows at {over} = {own:g}")

    def judged(value: float) -> str | None:
        measured = measure(claim, table[np.isclose(table[over], value)])
        return None if measured is None else verdict(claim, measured)

    verdicts = [judged(v) for v in values]
    lo = hi = at[0]
    while lo > 0 and verdicts[lo - 1] == verdicts[at[0]]:
        lo -= 1
    while hi < len(values) - 1 and verdicts[hi + 1] == verdicts[at[0]]:
        hi += 1
    return str(verdicts[at[0]]), values[lo : hi + 1], values


def _robustness_text(
    claim: Claim, root: OutputRoot, tables: dict[str, pd.DataFrame], rows: pd.DataFrame, judged: str
) -> str:
    """``for every loss_fraction from 0.05 to 0.95 tried`` or ``for loss_fraction 0.3 to 0.6
    (tried 0.05 to 0.95)``: the values of the setting that give the same verdict."""
    spec = claim.robustness
    path = root / spec.source
    if not path.is_file():
        return f"? ({spec.source} was not produced)"
    if spec.source not in tables:
        tables[spec.source] = pd.read_csv(path)
    table = tables[spec.source]
    own = rows[spec.over].unique() if spec.over in rows else []
    if len(own) != 1:
        return f"? (the claim's rows hold {len(own)} values of {spec.over}, not one)"
    try:
        at_own, kept, tried = robust_range(claim, table, float(own[0]))
    except ValueError as error:  # the run's own setting is not among those tried
        return f"? ({error})"
    if at_own != judged:
        return (
            f"? ({spec.source} gives {at_own} at {spec.over} = {own[0]:g}, {claim.source} {judged})"
        )
    if kept == tried:
        return f"for every {spec.over} from {tried[0]:g} to {tried[-1]:g} tried"
    return f"for {spec.over} {kept[0]:g} to {kept[-1]:g} (tried {tried[0]:g} to {tried[-1]:g})"


# A part of a finding written only where the tables it quotes were produced.
_WHERE_PRODUCED = re.compile(r"\[\[(.*?)\]\]", re.S)


def _finding_from_run(claim: Claim, root: OutputRoot, tables: dict[str, pd.DataFrame]) -> str:
    """The claim's finding with each ``{name}`` replaced by that quantity on this run's CSVs
    (``?`` with the reason when its CSV or rows are missing), its ``[[...]]`` parts left out
    where a table they quote was not produced."""
    values = {}
    absent = set()
    for name, quantity in claim.finding_values:
        path = root / quantity.source
        if not path.is_file():
            values[name] = f"? ({quantity.source} was not produced)"
            absent.add(name)
            continue
        if quantity.source not in tables:
            tables[quantity.source] = pd.read_csv(path)
        try:
            value = measure(quantity, tables[quantity.source])
        except (KeyError, NameError) as error:  # a column this run's table does not have
            values[name] = f"? ({quantity.source} lacks {error})"
            continue
        values[name] = (
            "? (no rows)" if value is None else format_measured(value, quantity.precision)
        )

    def produced(part: re.Match) -> str:
        return "" if absent & set(re.findall(r"\{(\w+)\}", part[1])) else part[1]

    text = " ".join(_WHERE_PRODUCED.sub(produced, claim.finding).split())
    return re.sub(r"\{(\w+)\}", lambda m: values[m[1]], text)


def _mark_reduced(row: dict[str, Any], reduction: str) -> None:
    """A claim measured on a run that reduced what it depends on: ``indicative``. The value
    stays in the measured column; ``reason`` holds the reduction (the config's
    ``reductions`` text), which the tables name once for all its claims. Not a verdict on
    the paper's claim."""
    row.update(verdict="indicative", finding="", reason=reduction.strip())


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
    """One row per claim: the ``results/claims.csv`` contract of docs/design.md, plus reasons.

    ``root``: the run's outputs (a folder is a quick run's checkout; see galu.workflow.scales).
    ``claims`` are parsed for the scale the run is judged as
    (:func:`galu.workflow.scales.judged_as`). ``reduced``: claim id -> what the run reduced from the
    paper's settings that the claim depends on (the config's ``reductions``); such a claim is
    ``indicative``: the value measured on the reduced run, with that reduction as its reason,
    never a verdict on the paper's claim. ``stages``: the stages the run made (the config's
    ``stages``; None: all). A claim of another stage is ``not_run`` even when its table lies in
    the checkout (e.g. put back by ``galu resume``): it is not an input of this run's claims
    job."""
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
            "robustness": "",
            "quantity": claim.quantity,
            "paper_says": claim.paper_says,
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
                value, missing = None, lacking(error)
            if missing is not None and claim.claim_id in reduced:
                # Not made because the run reduced it: the reduction is the reason to give.
                row["reason"] = (
                    f"this run does not make what the claim reads ({missing}):"
                    f" {reduced[claim.claim_id].strip()}"
                )
            elif missing is not None:
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
                if claim.robustness is not None:
                    table = tables[claim.source]
                    selected = table.query(claim.where) if claim.where else table
                    row["robustness"] = _robustness_text(
                        claim, root, tables, selected, row["verdict"]
                    )
                if row["verdict"] == "fail":
                    row["finding"] = _finding_from_run(claim, root, tables)
                if claim.claim_id in reduced:
                    _mark_reduced(row, reduced[claim.claim_id])
        rows.append(row)
    return pd.DataFrame(rows)


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
