"""A claim as ``workflow/claims.yaml`` states it (:mod:`galu.workflow.claims` says what each
field means): each entry read into a :class:`Claim`, every field checked, so that a mistake
is named with the claim and the fix before anything is measured."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from galu.workflow.stages import papers

# In the closure of the jobs that import it (galu.workflow.closure): it writes their bytes.
RESULT_CODE = "how a claim of workflow/claims.yaml is read: what is measured, against what"

COMPARISONS = ("within", "at_most", "at_least")
REDUCTIONS = ("mean", "median", "max", "min", "count", "fraction", "first_x", "last_x")
# A claim's paper: one the stages declare (galu/<paper>/stage.py).
PAPERS = papers()
NAME = r"[A-Za-z][A-Za-z0-9_]*"
PATH = r"[A-Za-z0-9_][A-Za-z0-9_./-]*"
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
class Robustness:
    """A claim measured again on ``source`` (same ``where``, ``expression``, ``reduce``) once
    per value of its column ``over``: over which values does the verdict stay the same?"""

    source: str
    over: str


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
    robustness: Robustness | None = None
    quantity: str = ""
    paper_says: str = ""

    def __post_init__(self) -> None:
        # An id and a path are set in literal text (``...``) of the report, where nothing can
        # be escaped: they are names, never prose.
        for key, value, pattern in (
            ("id", self.claim_id, NAME),
            ("figure", self.figure, PATH),
            ("source", self.source, PATH),
        ):
            if not re.fullmatch(pattern, value):
                raise ValueError(
                    f"claim {self.claim_id!r}: {key} {value!r} must match {pattern}"
                    " (letters, digits and _ for an id; and . / - for a path)"
                )
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


def _robustness(value: Any, claim_id: str) -> Robustness | None:
    if value is None:
        return None
    if not isinstance(value, Mapping) or set(value) != {"source", "over"}:
        raise ValueError(
            f"claim {claim_id!r}: robustness needs exactly source and over, got {value!r}"
        )
    return Robustness(str(value["source"]), str(value["over"]))


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
        robustness=_robustness(entry.get("robustness"), entry["id"]),
        quantity=" ".join(str(entry.get("quantity", "")).split()),
        paper_says=" ".join(str(entry.get("paper_says", "")).split()),
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
