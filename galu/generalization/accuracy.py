"""The layout of ``accuracy.csv`` (docs/design.md's generalization contract) and the table that
stacks the per-dataset results into it. No torch: the job that gathers the tables and
the figures start without it (about 1.6 s of CPU each)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

IMAGE_DATASETS = ("mnist", "fashion_mnist")
SYNTHETIC_DATASETS = ("clusters", "linear", "parity")
GENERALIZATION_DATASETS = (*IMAGE_DATASETS, *SYNTHETIC_DATASETS)
CONTRACT_COLUMNS = [
    "dataset",
    "model",
    "width",
    "seed",
    "n_train",
    "train_error",
    "test_error",
]
EXTRA_COLUMNS = [
    "task",
    "sigma_y",
    "subset_size",
    "n_test",
    "train_loss",
    "test_loss",
    "val_error",
    "lr",
    "gate_scale",
    "selection",
    "test_error_test_selected",
    "lr_test_selected",
    "gate_scale_test_selected",
    "diverged",
]


def accuracy_table(frames: Sequence[pd.DataFrame]) -> pd.DataFrame:
    """Stack per-dataset tables into the ``accuracy.csv`` layout.

    docs/design.md's columns come first, then :data:`EXTRA_COLUMNS` (empty where a column
    does not apply to a dataset); rows sorted by dataset, then the other keys.
    """
    if not frames:
        raise ValueError("frames must hold at least one per-dataset table, got none")
    table = pd.concat(frames, ignore_index=True)
    unknown = sorted(set(table["dataset"]) - set(GENERALIZATION_DATASETS))
    if unknown:
        raise ValueError(f"dataset must be one of {GENERALIZATION_DATASETS}, got {unknown}")
    for column in EXTRA_COLUMNS:
        if column not in table:
            table[column] = np.nan
    table = table[CONTRACT_COLUMNS + EXTRA_COLUMNS]
    table["subset_size"] = table["subset_size"].astype("Int64")
    order = {name: i for i, name in enumerate(GENERALIZATION_DATASETS)}
    keys = ["dataset", "task", "sigma_y", "subset_size", "n_train", "model", "width", "seed"]
    table = table.sort_values(keys, key=lambda c: c.map(order) if c.name == "dataset" else c)
    return table.reset_index(drop=True)
