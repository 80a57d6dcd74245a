"""Validation- and test-selected hyper-parameters (Fiat et al. sec. 5, selection protocol)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from galu.generalization.selection import choose, selected_table


def _grid() -> pd.DataFrame:
    """relu: lr 0.1 best on validation, lr 0.01 best on test; sigmoid: a = 2 at lr 0.1."""
    rows = []
    val = {0.1: [0.10, 0.12], 0.01: [0.20, 0.30]}
    test = {0.1: [0.15, 0.17], 0.01: [0.11, 0.09]}
    for lr in (0.01, 0.1):
        for seed in (0, 1):
            rows.append(("relu", 8, seed, lr, np.nan, val[lr][seed], test[lr][seed]))
    for a, shift in ((1.0, 0.05), (2.0, 0.0)):
        for seed in (0, 1):
            rows.append(("galu0", 8, seed, 0.1, a, 0.2 + shift, 0.3 - shift))
    columns = ["model", "width", "seed", "lr", "gate_scale", "val_error", "test_error"]
    grid = pd.DataFrame(rows, columns=columns)
    grid.insert(0, "dataset", "mnist")
    grid["train_error"] = 0.0
    return grid


def test_choice_minimizes_the_seed_mean_of_the_criterion():
    by_val = choose(_grid(), "val_error").set_index("model")
    assert by_val.loc["relu", "lr"] == 0.1
    assert np.isnan(by_val.loc["relu", "gate_scale"])
    assert by_val.loc["relu", "mean_val_error"] == pytest.approx(0.11)
    assert by_val.loc["galu0", "gate_scale"] == 2.0
    by_test = choose(_grid(), "test_error").set_index("model")
    assert by_test.loc["relu", "lr"] == 0.01
    assert by_test.loc["galu0", "gate_scale"] == 1.0


def test_a_diverged_seed_disqualifies_its_setting():
    grid = _grid()
    grid.loc[(grid.model == "relu") & (grid.lr == 0.1) & (grid.seed == 1), "val_error"] = np.nan
    assert choose(grid, "val_error").set_index("model").loc["relu", "lr"] == 0.01


def test_ties_go_to_the_smaller_learning_rate():
    grid = _grid()
    grid["val_error"] = 0.5
    assert choose(grid, "val_error").set_index("model").loc["relu", "lr"] == 0.01


def test_selected_table_keeps_both_choices_per_seed():
    table = selected_table(_grid()).set_index(["model", "seed"])
    assert len(table) == 4 and set(table["selection"]) == {"validation"}
    relu = table.loc["relu"]
    np.testing.assert_allclose(relu["lr"], [0.1, 0.1])
    np.testing.assert_allclose(relu["test_error"], [0.15, 0.17])
    np.testing.assert_allclose(relu["lr_test_selected"], [0.01, 0.01])
    np.testing.assert_allclose(relu["test_error_test_selected"], [0.11, 0.09])
    sigmoid = table.loc["galu0"]
    np.testing.assert_allclose(sigmoid["gate_scale"], [2.0, 2.0])
    np.testing.assert_allclose(sigmoid["gate_scale_test_selected"], [1.0, 1.0])
    np.testing.assert_allclose(sigmoid["test_error_test_selected"], [0.25, 0.25])
    # The test-selected error can never be worse than the validation-selected one's mean.
    means = table.groupby("model")[["test_error", "test_error_test_selected"]].mean()
    assert np.all(means["test_error_test_selected"] <= means["test_error"])


def test_bad_criterion_and_missing_columns_are_named():
    with pytest.raises(ValueError, match="criterion must be one of"):
        choose(_grid(), "train_error")
    with pytest.raises(ValueError, match=r"grid lacks columns \['val_error'\]"):
        choose(_grid().drop(columns="val_error"), "val_error")
