"""A width-search grid split into jobs, and the jobs' tables stacked back in order.

The capacity experiments of Fiat, Malach & Shalev-Shwartz (arXiv 1906.05032, sec. 3) run
one minimal-width search per (model, m, d, out_dim, seed); at the paper's scale the whole
grid takes hours, so the workflow splits it into jobs (``parts``) and stacks their tables
into the one table a single job would have written. Nothing here trains: the stacking job
depends on this module alone.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TypeVar

import pandas as pd

Item = TypeVar("Item")


def search_part(tasks: Sequence[Item], part: int, parts: int) -> list[Item]:
    """The searches of job ``part`` of ``parts``: every ``parts``-th task of the grid from
    ``part`` on, so that each job gets small and large m alike."""
    if not 0 <= part < parts:
        raise ValueError(f"part must be in [0, {parts}), got {part}")
    return list(tasks[part::parts])


def stack_parts(tables: Sequence[pd.DataFrame]) -> pd.DataFrame:
    """The tables of :func:`search_part`'s parts ``0 .. parts-1`` (one row per task, in the
    part's order) as one table in the grid's order: the table one job would have written."""
    # row r of part p is task p + r * parts of the grid
    keyed = [t.assign(_row=range(len(t)), _part=p) for p, t in enumerate(tables)]
    stacked = pd.concat(keyed, ignore_index=True).sort_values(["_row", "_part"], kind="stable")
    return stacked.drop(columns=["_row", "_part"]).reset_index(drop=True)
