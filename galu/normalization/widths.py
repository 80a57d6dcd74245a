"""The same activations and depths trained at two widths, judged at one epoch (Richemond &
Guo, arXiv 1905.01369, Sec. 4: "either 1024 or 128 units wide", 30- against 60-layer
networks): does the width change whether a depth trains, or its test error?"""

from __future__ import annotations

import pandas as pd

from galu.normalization.trainability import run_outcomes


def width_comparison(curves: pd.DataFrame, fraction: float, epoch: int) -> pd.DataFrame:
    """One row per run (activation, width, depth, seed) of ``curves`` (trainability.csv's
    columns), judged on its epochs 0 to ``epoch`` only, so that runs trained for different
    numbers of epochs are compared at the same budget: ``trains`` by the trainability
    criterion (:func:`galu.normalization.trainability.trains` at ``fraction``),
    ``final_test_error`` at ``epoch``. A run that stopped before ``epoch`` (it diverged) is
    judged on what it ran (``epochs_run``).
    """
    if epoch < 1:
        raise ValueError(f"the comparison's epoch must be at least 1, got {epoch}")
    shown = curves[curves["epoch"] <= epoch]
    table = run_outcomes(shown, fraction)
    table.insert(4, "compared_at_epoch", epoch)
    return table.sort_values(["activation", "depth", "width", "seed"], ignore_index=True)
