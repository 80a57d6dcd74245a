"""Per paper, one line: does it hold? Its own claims counted apart from our own checks, and
one sentence computed from the run saying what reproduces, what does not and by how much.

The same line opens the report's landing page, ``claims.html`` and the README's verdict
blocks (galu/workflow/pages/readme_pages.py), at every scale, so a reader meets the answer
to the question they came with before any table.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from typing import Any

import pandas as pd

from galu.workflow.claims_text import VERDICTS, bound_short, measured_text

# In the closure of the jobs that import it (galu.workflow.closure): it writes their bytes.
RESULT_CODE = "the per-paper verdict lines of the report, claims.html and the README"

# A claim is one of our own checks, not the paper's, when its statement says so first
# (workflow/claims.yaml: "Ours, not from the paper: ...", "Ablation (ours, ...)", ...).
OURS = ("Ours", "Ablation (ours", "Our finding")
# The papers as the pages name them, in their order; another paper id is shown as it is.
PAPER_NAMES = {
    "galu": "GaLU",
    "scm": "ReLU soft committee machines",
    "normalization": "static activation normalization",
}
# How many of a paper's failed claims its line names: the first in workflow/claims.yaml's
# order, which follows the paper's (its central claims first); the rest are counted, and
# every one is in the table below the line. A failure whose measurement is no number
# (NaN) is named after those that measured one.
NAMED_FAILURES = 2


def is_ours(statement: object) -> bool:
    """Whether a claim's statement makes it one of our own checks."""
    return isinstance(statement, str) and statement.lstrip().startswith(OURS)


def _papers(claims: pd.DataFrame) -> pd.Series:
    if "paper" in claims:
        return claims["paper"].astype(str)
    return pd.Series("?", claims.index)


def paper_order(claims: pd.DataFrame) -> list[str]:
    """The papers of a claims table: those of :data:`PAPER_NAMES` in its order, then any
    other in the table's."""
    papers = _papers(claims)
    order = [p for p in PAPER_NAMES if p in set(papers)]
    return order + [p for p in dict.fromkeys(papers) if p not in PAPER_NAMES]


def split_claims(claims: pd.DataFrame, paper: str) -> tuple[pd.DataFrame, pd.DataFrame]:
    """A paper's own claims and our own checks of it (a table without a ``statement`` column
    has no claim of ours; one without a ``paper`` column files every claim under ``?``)."""
    statements = claims["statement"] if "statement" in claims else pd.Series("", claims.index)
    ours = statements.map(is_ours)
    mine = _papers(claims) == paper
    return claims[mine & ~ours], claims[mine & ours]


def count_verdicts(rows: pd.DataFrame) -> dict[str, int]:
    """Each verdict of pass, fail, indicative and not_run counted (zeros included)."""
    found = rows["verdict"].tolist()
    return {v: found.count(v) for v in VERDICTS}


def paper_counts(claims: pd.DataFrame) -> dict[str, tuple[dict[str, int], dict[str, int]]]:
    """Paper id -> (its own claims' verdict counts, our own checks' counts), papers in
    :func:`paper_order`."""
    counts = {}
    for paper in paper_order(claims):
        own, ours = split_claims(claims, paper)
        counts[paper] = (count_verdicts(own), count_verdicts(ours))
    return counts


def counts_text(counts: Mapping[str, int]) -> str:
    """``12 pass, 1 fail``: the verdicts that occur, in the order pass, fail, indicative,
    not_run; ``none`` when none does."""
    return ", ".join(f"{counts[v]} {v}" for v in VERDICTS if counts.get(v)) or "none"


def quantity_short(row: Any) -> str:
    """A claim's measured quantity without its parenthetical asides (``deepest tested depth
    at which ReLU trains``), or its id where the claim names no quantity."""
    text = getattr(row, "quantity", "")
    if not isinstance(text, str) or not text.strip():
        return str(row.claim_id)
    return re.sub(r"\s*\([^()]*\)", "", text).strip() or text.strip()


def failure_text(row: Any) -> str:
    """``deepest tested depth at which ReLU trains: 60, bound 30 ± 10`` (a NaN measurement:
    ``no number``)."""
    measured = "no number (NaN)" if math.isnan(row.measured) else measured_text(row)
    if not all(hasattr(row, key) for key in ("compare", "expected", "tolerance")):
        return f"{quantity_short(row)}: {measured}"  # a table of an older galu: no bound
    bound = bound_short(row.compare, row.expected, row.tolerance)
    return f"{quantity_short(row)}: {measured}, bound {bound}"


def _verb(count: int, one: str, many: str) -> str:
    return f"{count} {one if count == 1 else many}"


def _join(parts: list[str]) -> str:
    return parts[0] if len(parts) == 1 else ", ".join(parts[:-1]) + " and " + parts[-1]


def paper_sentence(claims: pd.DataFrame, paper: str) -> str:
    """One sentence on a paper's own claims at this run's scale: how many reproduce, how many
    do not (and which, the first :data:`NAMED_FAILURES`, measured against their bounds),
    are indicative or were not run; then our own checks' counts, apart."""
    own, ours = split_claims(claims, paper)
    counts = count_verdicts(own)
    if not len(own):
        parts = ["none of its own claims is checked"]
    else:
        parts = [f"{counts['pass']} of its {len(own)} claims reproduce"]
    if counts["indicative"]:
        parts.append(
            _verb(counts["indicative"], "is indicative", "are indicative")
            + " (measured at this scale's reduced settings, not judged)"
        )
    if counts["not_run"]:
        parts.append(_verb(counts["not_run"], "is not run", "are not run"))
    if counts["fail"]:  # last, so the failures named after it read as its list
        parts.append(_verb(counts["fail"], "does not", "do not"))
    sentence = _join(parts)
    failed = own[own["verdict"] == "fail"]
    if len(failed):
        ranked = sorted(failed.itertuples(), key=lambda r: math.isnan(r.measured))
        named = [failure_text(r) for r in ranked[:NAMED_FAILURES]]
        more = len(ranked) - len(named)
        sentence += ": " + "; ".join(named) + (f"; and {more} more" if more else "")
    sentence += "."
    mine = count_verdicts(ours)
    if any(mine.values()):
        sentence += f" Our own checks: {counts_text(mine)}."
    return sentence


def paper_lines(claims: pd.DataFrame) -> list[tuple[str, str]]:
    """(the paper's name, :func:`paper_sentence`) for each paper of the table, in order."""
    return [(PAPER_NAMES.get(p, p), paper_sentence(claims, p)) for p in paper_order(claims)]
