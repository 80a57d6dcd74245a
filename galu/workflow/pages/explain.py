"""``galu explain CLAIM``: one claim, from its statement down to the raw data.

What a reader of ``results/claims.csv`` asks of a verdict: what was measured (statement,
quantity, the ``where`` / ``pivot`` / ``expression`` / ``reduce`` of ``workflow/claims.yaml``),
on which rows (the selected rows of the claim's table, with the expression's value on
each), against what (expected value, tolerance and why that tolerance), with which verdict,
shown on which figure, and how those files were made: the provenance chain of the table
and of the figure (:mod:`galu.workflow.trust.lineage`), with each file and its parameter values
printed once.

The claim's definition is read from the checkout's ``workflow/claims.yaml``; the verdict,
measured value, expected value and tolerance from the run's ``claims.csv`` (what the run
judged). The rows are selected again from the run's table, and a measured value that no
longer follows from them (the table or the claim changed since) is said.
"""

from __future__ import annotations

import difflib
import math
import re
import textwrap
from pathlib import Path, PurePosixPath
from typing import Any

import pandas as pd

from galu.workflow.claim_spec import Claim, parse_claims
from galu.workflow.claims import measure, selected_rows
from galu.workflow.claims_text import bound_text, measured_text, tolerance_text, verdict_notes
from galu.workflow.pages.claims_table import ClaimsTableError, read_claims_table
from galu.workflow.precision import format_measured
from galu.workflow.scales import judged_as
from galu.workflow.settings.config import load_yaml
from galu.workflow.tables import CONTRACTS_DIR, contract_for
from galu.workflow.trust.audit import Finding, code_scanner
from galu.workflow.trust.lineage import Node, Walk, chain_summary, explain, summary_lines

CLAIMS_YAML = "workflow/claims.yaml"
# Rows of a claim's selection printed before the rest are counted.
ROW_LIMIT = 20
WIDTH = 100


class ExplainError(ValueError):
    """A claim that cannot be explained as asked; the message says what to do instead."""


def claims_csv(root: Path, results: str) -> pd.DataFrame:
    """The run's verdicts, ``<results>/claims.csv`` under ``root``, or an ExplainError that says
    how to make them."""
    path = root / results / "claims.csv"
    if not path.is_file():
        raise ExplainError(
            f"no {Path(results, 'claims.csv').as_posix()} under {root.resolve()}: run the"
            " workflow first (`make reproduce`), or pass --results the results folder of a run"
            " (e.g. results/paper-cpu, published/paper-cpu/results)"
        )
    try:
        return read_claims_table(path, Path(results, "claims.csv").as_posix())
    except ClaimsTableError as error:
        raise ExplainError(str(error)) from None


def claim_named(claim_id: str, root: Path, scale: str, known: list[str]) -> Claim:
    """The claim ``claim_id`` of ``workflow/claims.yaml`` at ``scale``; an unknown id is an
    ExplainError naming the closest ids (``known`` adds the run's own)."""
    claims = {c.claim_id: c for c in parse_claims(load_yaml(root / CLAIMS_YAML), scale)}
    if claim_id in claims:
        return claims[claim_id]
    close = difflib.get_close_matches(claim_id, sorted({*claims, *known}), n=3, cutoff=0.5)
    hint = f"; did you mean {', '.join(close)}?" if close else ""
    raise ExplainError(
        f"no claim {claim_id!r} in {CLAIMS_YAML}{hint} (`galu explain` without an id lists them)"
    )


def located(results: str, contract: str) -> str:
    """Where contract path ``contract`` (``results/...`` or ``figures/...``) of the run whose
    results folder is ``results`` lies: ``figures/x.png`` of ``results/paper-cpu`` is
    ``figures/paper-cpu/x.png``."""
    parts = list(PurePosixPath(results).parts)
    if "results" not in parts:
        raise ExplainError(
            f"--results {results} is not a results folder (a path whose folder named results"
            " holds claims.csv, e.g. results, results/paper-cpu, published/paper-cpu/results)"
        )
    top, *rest = PurePosixPath(contract).parts
    at = len(parts) - 1 - parts[::-1].index("results")
    return PurePosixPath(*parts[:at], top, *parts[at + 1 :], *rest).as_posix()


def listing(root: Path, results: str) -> list[str]:
    """Every claim id of the run with its paper and verdict (``galu explain`` with no id)."""
    table = claims_csv(root, results)
    lines = [f"{r.claim_id}  ({r.paper}, {r.verdict})" for r in table.itertuples()]
    return [
        *lines,
        f"{len(table)} claim(s) in {results}/claims.csv; `galu explain ID` explains one.",
    ]


def _field(name: str, text: Any) -> list[str]:
    """``name: text``, wrapped, continuation lines indented under the text."""
    head = f"{name + ':':<15}"
    return textwrap.wrap(
        str(text), WIDTH, initial_indent=head, subsequent_indent=" " * len(head)
    ) or [head.rstrip()]


def _named_columns(claim: Claim, columns: list[str]) -> list[str]:
    """The columns of ``columns`` that the claim's where, expression or x name."""
    words = set(re.findall(r"[A-Za-z_]\w*", f"{claim.where or ''} {claim.expression} {claim.x}"))
    return [c for c in columns if c in words]


def _key_columns(claim: Claim, root: Path, rows: pd.DataFrame) -> list[str]:
    """What one selected row stands for: the pivot's index, else the table contract's key."""
    if claim.pivot:
        return list(claim.pivot[0])
    contract = contract_for(claim.source, root / CONTRACTS_DIR)
    return [k for k in (contract.key if contract else ()) if k in rows.columns]


def rows_lines(
    claim: Claim, root: Path, table: pd.DataFrame, rows: pd.DataFrame, values: pd.Series
) -> list[str]:
    """The ``rows`` a claim selected from ``table``: the key and named columns (one that is
    the same on every row is said once, above them) and the expression's ``value`` on each."""
    key = _key_columns(claim, root, rows)
    shown = [*key, *(c for c in _named_columns(claim, list(rows.columns)) if c not in key)]
    same = [c for c in shown if rows[c].nunique(dropna=False) == 1 and len(rows) > 1]
    frame = rows[[c for c in shown if c not in same]].assign(value=values.to_numpy())
    head = f"rows:          {len(rows)} of the table's {len(table)}"
    if same:
        head += f", all with {', '.join(f'{c}={rows[c].iloc[0]}' for c in same)}"
    body = frame.head(ROW_LIMIT).to_string(index=False).splitlines()
    more = [f"  ... and {len(frame) - ROW_LIMIT} more"] if len(frame) > ROW_LIMIT else []
    return [head + ":", *(f"  {line}" for line in body), *more]


def _measured_notes(claim: Claim, table: pd.DataFrame, values: pd.Series, row: Any) -> str:
    """After the recorded measured value: for a ``fraction``, how many selected rows are
    true; and a value the table gives now that differs from the recorded one (the table or
    the claim changed since the verdict was written)."""
    notes = ""
    if claim.reduce == "fraction":
        notes += f" ({int(values.astype(bool).sum())} of {len(values)} rows)"
    now = measure(claim, table)
    if now is not None and not math.isnan(row.measured) and not math.isclose(now, row.measured):
        notes += (
            f"; the rows give {format_measured(now, row.precision)} now: the table or"
            f" {CLAIMS_YAML} changed since the verdict was written"
        )
    return notes


def measurement_lines(claim: Claim, root: Path, results: str, row: Any) -> list[str]:
    """What is measured on which file, the rows it selects and the value they give."""
    source = located(results, claim.source)
    lines = _field("measured on", source)
    for name, value in (
        ("where", claim.where),
        ("pivot", claim.pivot and f"index {list(claim.pivot[0])}, columns {claim.pivot[1]},"
         f" values {claim.pivot[2]} (mean)"),
        ("expression", claim.expression),
        ("reduce", claim.reduce + (f" over {claim.x}" if claim.x else "")),
    ):  # fmt: skip
        if value:
            lines += _field(f"  {name}", " ".join(str(value).split()))
    if not (root / source).is_file():
        return [*lines, *_field("rows", f"none: {source} is not on disk")]
    table = pd.read_csv(root / source)
    try:
        selected = selected_rows(claim, table)
    except (KeyError, NameError) as error:  # a column this run's table does not have
        return [*lines, *_field("rows", f"none: {source} lacks {error}")]
    if selected is None:
        return [*lines, *_field("rows", f"none of the {len(table)} match the where")]
    lines += rows_lines(claim, root, table, *selected)
    if row is not None:
        notes = _measured_notes(claim, table, selected[1], row)
        lines += _field("measured", measured_text(row) + notes)
    return lines


def _text(value: Any) -> str:
    return value if isinstance(value, str) and value.strip() else ""


def verdict_lines(claim: Claim, row: Any, results: str, justify: bool = True) -> list[str]:
    """Expected value, tolerance and why (``justify``), the verdict, and for a failure our
    finding."""
    if row is None:
        return _field(
            "verdict",
            f"none: {results}/claims.csv has no row for this claim (made before it was added:"
            " run the workflow again)",
        )
    lines = _field("expected", bound_text(row.compare, row.expected, row.tolerance))
    if justify:
        lines += _field("tolerance", tolerance_text(row.tolerance))
        lines += _field("justification", claim.justification or "none given")
    lines += _field("verdict", f"{row.verdict}{verdict_notes(row)}")
    if row.verdict not in ("pass", "fail") and _text(row.reason):
        lines += _field("why", row.reason)
    if row.verdict == "fail":
        lines += _field("finding", _text(row.finding) or "none yet")
    return lines


def answer_lines(claim: Claim, row: Any, results: str) -> list[str]:
    """The short answer: the paper's number and ours, then the bound and the verdict (and,
    for a failure, our finding; for a claim not judged, why)."""
    if row is None:
        return verdict_lines(claim, row, results)
    lines = _field("paper says", _text(getattr(row, "paper_says", None)) or "no number for this")
    lines += _field("we measure", f"{measured_text(row)}: {claim.quantity or 'the quantity'}")
    return lines + verdict_lines(claim, row, results, justify=False)


def explain_claim(
    claim_id: str, root: Path, results: str = "results", chain: bool = False
) -> tuple[list[str], list[Finding]]:
    """The lines ``galu explain`` prints for ``claim_id`` of the run whose results folder is
    ``results`` (relative to ``root``), and the provenance problems of its chain: the short
    answer and a one-line lineage summary; with ``chain``, how the value follows from the
    rows, the tolerance's justification and every file of the chain."""
    table = claims_csv(root, results)
    scale = str(table["scale"].iloc[0]) if len(table) else "quick"
    claim = claim_named(claim_id, root, judged_as(scale), list(table["claim_id"]))
    matches = table[table["claim_id"] == claim_id]
    row = next(matches.itertuples()) if len(matches) else None
    section = f"; {claim.section}" if claim.section else ""
    lines = [f"{claim.claim_id} ({claim.paper} paper{section}; {scale} run)"]
    lines += _field("statement", claim.statement)
    if chain:
        lines += _field("quantity", claim.quantity or "not described")
        lines += measurement_lines(claim, root, results, row)
        lines += verdict_lines(claim, row, results)
    else:
        lines += answer_lines(claim, row, results)
    figure = located(results, claim.figure)
    drawn = (root / figure).is_file()
    lines += _field("figure", figure + ("" if drawn else " (not drawn in this run's folder)"))
    files = [located(results, claim.source), *([figure] if drawn else [])]
    nodes = chain_nodes(root, files)
    findings = [f for node in nodes for f in node.findings()]
    lines += ["", f"How these files were made: {chain_summary(nodes)}."]
    if chain:
        lines += ["Each file once (one met again: see above):"]
        lines += [line for node in nodes for line in node.lines()]
    else:
        lines += [f"  {f.path}: {f.problem}" for f in findings]
        lines += [f"Every file, its job, parameters and inputs: galu explain {claim_id} --chain"]
    return [*lines, *summary_lines("galu explain", claim_id, findings)], findings


def chain_nodes(root: Path, paths: list[str]) -> list[Node]:
    """The provenance chains of ``paths``, walked together (a file in several is described
    once)."""
    walk = Walk(root, code_scanner(root))
    return [explain(path, root, walk) for path in paths]
