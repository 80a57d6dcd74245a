"""The one reader of a run's ``claims.csv`` for the commands (``galu compare``, ``galu
explain``, the end-of-run summary): every row checked before any is used, so a damaged,
foreign or hostile table is one error naming the file, the row and the fix, never a
traceback, a silently collapsed claim or a terminal taken over by escape sequences."""

from __future__ import annotations

import io
import math
import re
from pathlib import Path

import pandas as pd

# A claims table is a few kilobytes (47 claims); a file far larger is not one, and reading
# it whole could exhaust memory.
MAX_BYTES = 5_000_000
MAX_ROWS = 10_000
REQUIRED = ("claim_id", "measured", "verdict")
VERDICTS = ("pass", "fail", "indicative", "not_run")
_ID = re.compile(r"[A-Za-z][A-Za-z0-9_]*")
FIX = "remake it with the workflow (snakemake --cores 2) or name another run's results folder"


class ClaimsTableError(ValueError):
    """A claims table that cannot be used: the message names the file, the row and the fix
    (``problem``: the same without the fix, for a command that gives its own)."""

    def __init__(self, problem: str) -> None:
        self.problem = problem
        super().__init__(f"{problem}; {FIX}")


def _number(text: str) -> float | None:
    """A measured value as written (empty: not measured); None when it is no number."""
    if text == "":
        return math.nan
    try:
        return float(text)
    except ValueError:
        return None


def check_rows(table: pd.DataFrame, name: str) -> None:
    """Raise ClaimsTableError for the first row that no claims table could hold."""
    missing = [c for c in REQUIRED if c not in table.columns]
    if missing:
        raise ClaimsTableError(
            f"{name} lacks the column(s) {', '.join(missing)}: not a claims table"
        )
    if not len(table):
        raise ClaimsTableError(f"{name} has no claim rows")
    if len(table) > MAX_ROWS:
        raise ClaimsTableError(f"{name} has {len(table)} rows, not a claims table")
    seen: dict[str, int] = {}
    for index, row in enumerate(table.to_dict("records"), start=2):  # line 1: the header
        where = f"{name}, line {index}"
        claim = str(row["claim_id"])
        if not _ID.fullmatch(claim):
            raise ClaimsTableError(f"{where}: claim id {claim!r} is not a claim id")
        if claim in seen:
            raise ClaimsTableError(f"{where}: claim {claim} appears twice (line {seen[claim]} too)")
        seen[claim] = index
        if row["verdict"] not in VERDICTS:
            raise ClaimsTableError(
                f"{where}: verdict {row['verdict']!r} is not one of {', '.join(VERDICTS)}"
            )
        if _number(str(row["measured"])) is None:
            raise ClaimsTableError(f"{where}: measured {row['measured']!r} is no number")
        precision = _number(str(row.get("precision", "")))
        if precision is None or not (math.isnan(precision) or 0 < precision < math.inf):
            raise ClaimsTableError(
                f"{where}: precision {row.get('precision')!r} is not a positive number"
            )


def parse_claims_table(data: bytes | str, name: str) -> pd.DataFrame:
    """A claims table from its bytes (a file's, or a commit's through ``git show``), checked
    (:func:`check_rows`); numbers as numbers, empty cells as NaN."""
    if len(data) > MAX_BYTES:
        raise ClaimsTableError(f"{name} is {len(data):,} bytes: not a claims table")
    try:
        text = data.decode("utf-8") if isinstance(data, bytes) else data
        table = pd.read_csv(io.StringIO(text), dtype=str, keep_default_na=False)
    except (UnicodeDecodeError, ValueError, pd.errors.ParserError) as error:
        raise ClaimsTableError(f"{name} is not a CSV table ({error})") from None
    check_rows(table, name)
    return pd.read_csv(io.StringIO(text), keep_default_na=False, na_values=[""])


def read_claims_table(path: str | Path, name: str | None = None) -> pd.DataFrame:
    """:func:`parse_claims_table` of a file, its size checked before it is read."""
    path = Path(path)
    name = name or str(path)
    if path.stat().st_size > MAX_BYTES:
        raise ClaimsTableError(f"{name} is {path.stat().st_size:,} bytes: not a claims table")
    return parse_claims_table(path.read_bytes(), name)
