"""Two runs' claims side by side (``galu compare A B``): per claim, each run's measured value
and verdict, and a flag where the verdicts differ, or where they agree only because both
runs missed the expectation on opposite sides (e.g. a depth claim of "about 30" that one
scale measures at 0 and the other at 60: both fail, for opposite reasons).

A run is named by the folder of its ``claims.csv``: a quick run's ``results``, another
scale's ``results/<scale>``, a publication's ``published/<scale>/results`` (or the
publication folder itself), a ``claims.csv`` file, or ``REV:FOLDER`` for that folder as
commit ``REV`` holds it (``git show``; e.g. ``HEAD~3:published/paper-cpu/results``), so
that two commits' publications compare without a checkout of either.
"""

from __future__ import annotations

import math
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from galu.workflow.claims_text import measured_text
from galu.workflow.pages.claims_table import ClaimsTableError, parse_claims_table, read_claims_table

CLAIMS = "claims.csv"
# Where a run's claims table lies under the folder named: the folder itself (a results
# folder), or its results/ (a publication folder, published/<scale>).
PLACES = (CLAIMS, f"results/{CLAIMS}")
HOW = (
    "name a run's results folder (results, results/<scale>, published/<scale>/results), its"
    " claims.csv, or REV:FOLDER for a commit's (e.g. HEAD~1:published/paper-cpu/results)"
)


class CompareError(Exception):
    """A run that cannot be read: the message names it and how to name a run."""


@dataclass(frozen=True)
class Run:
    """One side of the comparison: what the user named, its scale and its claims table."""

    name: str
    scale: str
    table: pd.DataFrame


@dataclass(frozen=True)
class Row:
    """One claim of the comparison; ``None`` for the side that lacks the claim. ``opposite``:
    the verdicts agree, yet each run lies beyond the tolerance on another side of the
    expected value."""

    claim_id: str
    a: tuple[str, str] | None  # (measured, verdict)
    b: tuple[str, str] | None
    opposite: bool = False

    @property
    def flag(self) -> str:
        if self.a is None:
            return "only in B"
        if self.b is None:
            return "only in A"
        if self.a[1] != self.b[1]:
            return "DIFFERS"
        return "OPPOSITE SIDES" if self.opposite else ""


def _offset(row: pd.Series) -> float:
    """How far a claim's measured value lies beyond its tolerance from the expected value:
    positive above, negative below, 0 within it or where the table cannot tell (a table
    without ``expected`` and ``tolerance``, a value not measured)."""
    try:
        measured, expected = float(row["measured"]), float(row["expected"])
        tolerance = float(row["tolerance"])
    except (KeyError, TypeError, ValueError):
        return 0.0
    gap = measured - expected
    if not all(map(math.isfinite, (measured, expected))) or abs(gap) <= abs(tolerance):
        return 0.0
    return gap


def _git_text(spec: str) -> str:
    """``claims.csv`` under ``REV:FOLDER`` as commit REV holds it (the folder, or its
    ``results/``; a path to the file itself works too)."""
    rev, _, folder = spec.partition(":")
    if rev.startswith("-"):  # git would take it for an option (--output=FILE writes a file)
        raise CompareError(f"{spec}: {rev!r} is no commit; {HOW}")
    folder = folder.rstrip("/")
    places = [folder] if folder.endswith(".csv") else [f"{folder}/{p}" for p in PLACES]
    error = ""
    for place in places:
        shown = subprocess.run(
            ["git", "show", "--end-of-options", f"{rev}:{place.removeprefix('/')}"],
            capture_output=True,
            text=True,
        )
        if shown.returncode == 0:
            return shown.stdout
        error = shown.stderr.strip().splitlines()[-1] if shown.stderr.strip() else ""
    raise CompareError(
        f"{spec}: commit {rev} holds no {' nor '.join(places)} (git: {error}); {HOW}"
    )


def _file_text(spec: str) -> pd.DataFrame:
    """The claims table of the run in folder (or file) ``spec``, checked."""
    path = Path(spec)
    if path.is_file():
        return read_claims_table(path, spec)
    if not path.is_dir():
        raise CompareError(f"no folder {spec}; {HOW}")
    for place in PLACES:
        if (path / place).is_file():
            return read_claims_table(path / place, f"{spec}/{place}")
    raise CompareError(
        f"{spec} has no {CLAIMS}: run the workflow first (make reproduce, or snakemake"
        f" --cores 2) to check the claims, or {HOW}"
    )


def read_run(spec: str) -> Run:
    """The run named by ``spec`` (module docstring): a folder or file, else ``REV:FOLDER``."""
    local = Path(spec).exists() or ":" not in spec
    try:
        table = _file_text(spec) if local else parse_claims_table(_git_text(spec), spec)
    except ClaimsTableError as error:
        raise CompareError(f"{error.problem}; {HOW}") from None
    scale = str(table["scale"].iloc[0]) if "scale" in table.columns and len(table) else "?"
    return Run(spec, scale, table)


def value_text(row: pd.Series) -> str:
    """A claim's measured value as the claims table shows it (``0.012``, ``< 1e-4``, ``–``
    not run); a table without the ``precision`` column (older runs): three digits."""
    measured, precision = float(row["measured"]), float(row.get("precision", math.nan))
    if not math.isnan(measured) and math.isnan(precision):
        return f"{measured:.3g}"
    return measured_text(row).split(" (")[0]


def _sides(run: Run) -> dict[str, tuple[str, str]]:
    return {str(r["claim_id"]): (value_text(r), str(r["verdict"])) for _, r in run.table.iterrows()}


def _offsets(run: Run) -> dict[str, float]:
    return {str(r["claim_id"]): _offset(r) for _, r in run.table.iterrows()}


def compare(a: Run, b: Run) -> list[Row]:
    """One row per claim of either run: A's claims in A's order, then those only B has."""
    sides_a, sides_b = _sides(a), _sides(b)
    off_a, off_b = _offsets(a), _offsets(b)
    ids = list(sides_a) + [c for c in sides_b if c not in sides_a]
    return [
        Row(c, sides_a.get(c), sides_b.get(c), off_a.get(c, 0.0) * off_b.get(c, 0.0) < 0)
        for c in ids
    ]


def summary(rows: Sequence[Row]) -> str:
    """``47 claims, 10 verdicts differ (0 pass against fail, 1 only in A)``: the differing
    verdicts that are disagreements (one run's ``pass``, the other's ``fail``; the rest are a
    claim one run did not judge, ``not_run`` or ``indicative``), the agreeing verdicts
    reached from opposite sides of the expected value, and the claims one run lacks."""
    differ = [r for r in rows if r.flag == "DIFFERS"]
    judged = sum({r.a[1], r.b[1]} == {"pass", "fail"} for r in differ if r.a and r.b)
    notes = [f"{judged} pass against fail"] if differ else []
    if opposite := sum(r.flag == "OPPOSITE SIDES" for r in rows):
        notes.append(f"{opposite} agreeing on opposite sides of the expected value")
    notes += [
        f"{n} only in {side}"
        for side in ("A", "B")
        if (n := sum(r.flag == f"only in {side}" for r in rows))
    ]
    text = f"{len(rows)} claims, {len(differ)} verdict{'' if len(differ) == 1 else 's'} differ"
    return text + (f" ({', '.join(notes)})" if notes else "")


def lines(a: Run, b: Run, rows: Sequence[Row]) -> list[str]:
    """The comparison as aligned text: which run is A and B, a header, one line per claim,
    the summary."""
    header = ("claim", "A measured", "A verdict", "B measured", "B verdict", "")
    cells = [(r.claim_id, *(r.a or ("", "")), *(r.b or ("", "")), r.flag) for r in rows]
    widths = [max(len(c[i]) for c in [header, *cells]) for i in range(len(header))]
    text = [
        "  ".join(cell.ljust(width) for cell, width in zip(c, widths, strict=True)).rstrip()
        for c in [header, *cells]
    ]
    return [
        f"A: {a.name} ({a.scale} scale)",
        f"B: {b.name} ({b.scale} scale)",
        "",
        *text,
        "",
        f"galu compare: {summary(rows)}.",
    ]
