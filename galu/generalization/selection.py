"""Hyper-parameter selection on a validation split, and the test-selected comparison.

Fiat et al. (arXiv 1906.05032), section 5, report the best test error over learning
rates (and, for the sigmoid gates, gate scales), i.e. hyper-parameters selected on the
test set. We select them on a validation split held out of the training set, and keep
the test-selected numbers beside them so the two can be compared.

A choice is made per (dataset, model, width) from the mean over seeds of the
criterion, then applied to every seed: choosing per seed would fit the seeds' noise.
A setting in which any seed diverged (NaN criterion) ranks last. Ties go to the first
setting in sorted order (smallest learning rate, then gate scale).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

HYPER = ("lr", "gate_scale")
GROUP = ("dataset", "model", "width")
CRITERIA = ("val_error", "test_error")


def choose(
    grid: pd.DataFrame,
    criterion: str,
    group: Sequence[str] = GROUP,
    hyper: Sequence[str] = HYPER,
) -> pd.DataFrame:
    """One row per ``group`` with the ``hyper`` values that minimize the seed-mean ``criterion``.

    ``grid`` has one row per trained member. Hyper-parameters that do not apply to a
    model are NaN (e.g. ``gate_scale`` of ``relu``); they are kept as a setting of their
    own. Returns ``group`` + ``hyper`` columns and ``mean_<criterion>``.
    """
    if criterion not in CRITERIA:
        raise ValueError(f"criterion must be one of {CRITERIA}, got {criterion!r}")
    missing = [c for c in (*group, *hyper, criterion) if c not in grid.columns]
    if missing:
        raise ValueError(f"grid lacks columns {missing}")
    keys = [*group, *hyper]
    # A diverged seed (NaN) must poison its setting's mean; inf then ranks it last.
    means = grid.groupby(keys, dropna=False, sort=True)[criterion].agg(
        lambda v: v.mean(skipna=False)
    )
    ranked = means.fillna(np.inf).reset_index(name=f"mean_{criterion}")
    best = ranked.loc[ranked.groupby(list(group), sort=True)[f"mean_{criterion}"].idxmin()]
    return best.reset_index(drop=True)


def _at(grid: pd.DataFrame, chosen: pd.DataFrame, hyper: Sequence[str]) -> pd.DataFrame:
    """Rows of ``grid`` at the chosen settings (NaN hyper-parameters match NaN)."""
    keys = [*GROUP, *hyper]
    left = grid.copy()
    right = chosen[keys].copy()
    # Hyper-parameters are positive, so -1 can stand for 'does not apply' while merging.
    for column in hyper:
        left[column] = left[column].fillna(-1.0)
        right[column] = right[column].fillna(-1.0)
    picked = left.merge(right, on=keys, how="inner")
    for column in hyper:
        picked[column] = picked[column].replace(-1.0, np.nan)
    return picked


def selected_table(grid: pd.DataFrame, hyper: Sequence[str] = HYPER) -> pd.DataFrame:
    """Per (dataset, model, width, seed): the validation-selected member's row, plus
    ``test_error_test_selected`` and the test-selected ``<hyper>_test_selected``.

    ``selection`` is ``"validation"`` on every row.
    """
    by_val = _at(grid, choose(grid, "val_error", hyper=hyper), hyper)
    by_test = _at(grid, choose(grid, "test_error", hyper=hyper), hyper)
    rename = {c: f"{c}_test_selected" for c in (*hyper, "test_error")}
    by_test = by_test[[*GROUP, "seed", *rename]].rename(columns=rename)
    table = by_val.merge(by_test, on=[*GROUP, "seed"], how="left", validate="one_to_one")
    table["selection"] = "validation"
    return table.sort_values([*GROUP, "seed"]).reset_index(drop=True)
