"""The column contracts of the result tables, and their check when a table is written.

Other stages, the claims, the tests and users' own analyses read these tables by column
name, so the names, types, ranges and the key (what one row stands for) are an interface.
Each contract is a YAML file under ``workflow/schemas/tables/`` naming the table by its path
relative to the results folder of any scale (``memorization/underparam.csv`` matches
``results/memorization/underparam.csv`` and ``results/paper/memorization/underparam.csv``).
Extra columns are allowed; a listed column must be present and satisfy its type and range.
"""

from __future__ import annotations

import functools
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from galu.yaml_files import load_yaml

CONTRACTS_DIR = Path("workflow/schemas/tables")
TYPES = ("string", "integer", "number", "boolean")


class TableContractError(ValueError):
    """A table about to be written breaks its contract; the message lists every problem."""


@dataclass(frozen=True)
class Contract:
    """One table's contract: its path under a results folder, key columns and columns."""

    source: Path
    path: str
    # Key columns not listed under ``columns`` are optional (e.g. ``task``, present only in
    # some stages' rows): the key is checked over those the table has.
    key: tuple[str, ...]
    columns: dict[str, dict[str, Any]]

    def matches(self, path: str | os.PathLike[str]) -> bool:
        return Path(path).as_posix().endswith(f"/{self.path}") or Path(path) == Path(self.path)


def load_contract(source: Path) -> Contract:
    """Read and sanity-check one contract file (a malformed contract is a bug of ours)."""
    raw = load_yaml(source)
    columns = raw.get("columns") or {}
    for name, spec in columns.items():
        if spec.get("type") not in TYPES:
            raise TableContractError(f"{source}: column {name} has no type among {TYPES}")
    return Contract(source, raw["path"], tuple(raw.get("key", [])), columns)


def contracts(folder: Path = CONTRACTS_DIR) -> tuple[Contract, ...]:
    """Every contract in ``folder`` (relative to the working directory: a job's is the
    repository root), read once per absolute folder."""
    return _contracts_in(Path(folder).resolve())


@functools.cache
def _contracts_in(folder: Path) -> tuple[Contract, ...]:
    return tuple(load_contract(p) for p in sorted(folder.glob("*.yaml")))


def contract_for(path: str | os.PathLike[str], folder: Path = CONTRACTS_DIR) -> Contract | None:
    """The contract of the table written to ``path``, or None (a table without one)."""
    found = [c for c in contracts(Path(folder)) if c.matches(path)]
    return found[0] if found else None


def _show(value: Any) -> str:
    """A value as Python writes it (numpy scalars as plain numbers)."""
    return repr(value.item() if hasattr(value, "item") else value)


def _type_problem(values: Any, kind: str) -> str | None:
    """Why the non-null ``values`` (a pandas Series) are not of ``kind``."""
    import pandas as pd

    if kind == "string":
        bad = values[~values.map(lambda v: isinstance(v, str))]
    elif kind == "boolean":
        bad = values[~values.map(lambda v: isinstance(v, bool) or str(v) in ("True", "False"))]
    else:
        numeric = pd.to_numeric(values, errors="coerce")
        bad = values[numeric.isna()]
        if kind == "integer" and bad.empty:
            bad = values[(numeric % 1) != 0]
    return None if bad.empty else f"not {kind}: {_show(bad.iloc[0])}"


def _column_problems(name: str, column: Any, spec: dict[str, Any]) -> list[str]:
    import pandas as pd

    problems = []
    present = column.dropna()
    if len(present) < len(column) and not spec.get("nullable", False):
        problems.append(f"column {name} has {len(column) - len(present)} empty value(s)")
    kind_problem = _type_problem(present, spec["type"])
    if kind_problem:
        return [*problems, f"column {name} {kind_problem}"]
    if "values" in spec:
        unknown = sorted({str(v) for v in present} - {str(v) for v in spec["values"]})
        if unknown:
            problems.append(f"column {name} has {unknown}, allowed {spec['values']}")
    numbers = pd.to_numeric(present, errors="coerce") if spec["type"] != "string" else None
    if numbers is not None and "min" in spec and (numbers < spec["min"]).any():
        problems.append(f"column {name} has {_show(numbers.min())} < {spec['min']}")
    if numbers is not None and "max" in spec and (numbers > spec["max"]).any():
        problems.append(f"column {name} has {_show(numbers.max())} > {spec['max']}")
    return problems


def table_problems(df: Any, contract: Contract) -> list[str]:
    """Every way ``df`` breaks ``contract``: missing columns, types, ranges, repeated keys."""
    missing = [name for name in contract.columns if name not in df.columns]
    problems = [f"missing column(s) {', '.join(missing)}"] if missing else []
    for name, spec in contract.columns.items():
        if name in df.columns:
            problems += _column_problems(name, df[name], spec)
    key = [k for k in contract.key if k in df.columns]
    repeated = int(df.duplicated(key).sum()) if key else 0
    if repeated:
        problems.append(f"{repeated} row(s) repeat a key ({', '.join(key)}) of an earlier row")
    return problems


def check_table(df: Any, path: str | os.PathLike[str], folder: Path = CONTRACTS_DIR) -> None:
    """Raise TableContractError when the table for ``path`` breaks its contract."""
    contract = contract_for(path, folder)
    if contract is None:
        return
    problems = table_problems(df, contract)
    if problems:
        raise TableContractError(
            f"{path} breaks its contract {contract.source}: {'; '.join(problems)}. Fix the code"
            " that makes it, or, if the interface changed on purpose, the contract"
        )
