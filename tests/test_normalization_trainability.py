"""The 'trains' criterion and max trainable depth (arXiv 1905.01369, Sec. 4)."""

import math

import numpy as np
import pandas as pd
import pytest

from galu.normalization.cifar import prepare_data
from galu.normalization.trainability import (
    max_depth_by_fraction,
    max_trainable_depth,
    run_outcomes,
    train_depth,
    trains,
)

LN10 = math.log(10)


def test_curve_that_halves_trains_and_flat_curve_does_not():
    assert trains([2.3, 1.8, 1.2, 1.0], fraction=0.5)
    assert not trains([2.3, 1.8, 1.2, 1.16], fraction=0.5)
    assert not trains([2.3, 2.3, 2.29], fraction=0.9)
    assert trains([2.3, 2.3, 2.06], fraction=0.9)  # 2.06 < 0.9 * 2.3 = 2.07


def test_reference_is_capped_at_chance_loss():
    # Large initial logits: falling from 8 to the uniform prediction (ln 10) is not training.
    curve = [8.0, 3.0, LN10, 2.2]
    assert trains(curve, fraction=0.5)  # against the raw initial loss
    assert not trains(curve, fraction=0.5, chance_loss=LN10)
    assert trains([8.0, 3.0, 1.1], fraction=0.5, chance_loss=LN10)


def test_diverged_or_non_finite_runs_do_not_train():
    assert not trains([2.3, 0.1], 0.5, diverged=True)
    assert not trains([2.3, 0.5, float("nan")], 0.5)
    assert not trains([2.3, 0.5, float("inf")], 0.5)
    assert not trains([2.3], 0.5)  # no epoch trained


@pytest.mark.parametrize("fraction", [0.0, 1.0, -0.2, 1.5])
def test_fraction_outside_unit_interval_raises(fraction):
    with pytest.raises(ValueError, match="loss fraction must be in \\(0, 1\\)"):
        trains([2.3, 1.0], fraction)


def _curves(activation, depth, seed, losses, diverged=False):
    return pd.DataFrame(
        {
            "activation": activation,
            "width": 128,
            "depth": depth,
            "seed": seed,
            "epoch": np.arange(len(losses)),
            "train_loss": losses,
            "train_error": 0.5,
            "test_error": 0.6,
            "diverged": diverged,
        }
    )


def test_outcomes_and_max_trainable_depth():
    table = pd.concat(
        [
            _curves("relu", 10, 0, [2.5, 1.5, 1.0]),
            _curves("relu", 30, 0, [2.2, 2.0, 1.05]),
            _curves("relu", 60, 0, [9.0, 2.3, 2.2]),  # only shrinks its logits
            _curves("tilted_relu", 10, 0, [2.3, 1.0]),
            _curves("tilted_relu", 60, 0, [2.3, 1.0]),
            _curves("tilted_relu", 60, 1, [2.3, 2.2], diverged=True),
            _curves("tanh", 10, 0, [2.3, 2.2]),
        ]
    ).sample(frac=1.0, random_state=0)  # order must not matter
    outcomes = run_outcomes(table, fraction=0.5)
    got = outcomes.set_index(["activation", "depth", "seed"])
    assert got.loc[("relu", 30, 0), "trains"]
    assert got.loc[("relu", 30, 0), "loss_ratio"] == pytest.approx(1.05 / 2.2)
    assert got.loc[("relu", 60, 0), "loss_ratio"] == pytest.approx(2.2 / LN10)
    assert not got.loc[("relu", 60, 0), "trains"]
    assert not got.loc[("tilted_relu", 60, 1), "trains"]
    depth = max_trainable_depth(outcomes, 0.5).set_index("activation")
    assert depth.loc["relu", "max_trainable_depth"] == 30
    assert depth.loc["tilted_relu", "max_trainable_depth"] == 60  # 1 of 2 seeds = half
    assert depth.loc["tanh", "max_trainable_depth"] == 0
    assert depth.loc["relu", "depths_trained"] == "10 30"


def test_train_depth_runs_every_width_and_seed_with_its_lr(one_torch_thread):
    rng = np.random.default_rng(0)
    arrays = {
        "x_train": rng.integers(0, 256, (64, 32, 32, 3), dtype=np.uint8),
        "y_train": rng.integers(0, 10, 64),
        "x_test": rng.integers(0, 256, (16, 32, 32, 3), dtype=np.uint8),
        "y_test": rng.integers(0, 10, 16),
    }
    data = prepare_data(arrays, None, None, seed=0)
    runs = train_depth(
        "tilted_relu",
        3,
        data,
        {8: 0.01, 16: 0.001},
        [0, 1],
        epochs=2,
        batch_size=16,
        spectra=True,
        jacobian_samples=2,
    )
    assert list(runs.curves.columns[:8]) == [
        "activation",
        "width",
        "depth",
        "seed",
        "epoch",
        "train_loss",
        "train_error",
        "test_loss",
    ]
    assert len(runs.curves) == 2 * 2 * 3
    assert runs.curves.groupby("width")["lr"].unique().to_dict() == {8: [0.01], 16: [0.001]}
    # 3 hidden + readout layers, init and trained, two seeds per width
    assert len(runs.spectra) == 2 * 2 * (3 * 8 + 10) + 2 * 2 * (3 * 16 + 10)
    np.testing.assert_allclose(runs.jacobian["squared_singular_value"], 1.0, atol=1e-4)
    quiet = train_depth("relu", 2, data, {8: 0.01}, [0], epochs=1, batch_size=16)
    assert quiet.spectra.empty and list(quiet.spectra.columns) == list(runs.spectra.columns)


def test_max_depth_by_fraction_judges_the_same_runs_at_every_threshold():
    # best loss / reference: depth 10 reaches 0.32, depth 30 reaches 0.72 (reference 2.0 < ln 10)
    curves = pd.DataFrame(
        {
            "activation": "relu",
            "width": 8,
            "depth": [10, 10, 30, 30],
            "seed": 0,
            "epoch": [0, 1, 0, 1],
            "train_loss": [2.0, 0.64, 2.0, 1.44],
            "test_error": 0.5,
        }
    )
    table = max_depth_by_fraction(curves).set_index("loss_fraction")["max_trainable_depth"]
    assert list(table.index) == pytest.approx([0.05 * i for i in range(1, 20)])
    assert set(table[table.index < 0.32]) == {0}  # neither run reaches its fraction
    assert set(table[(table.index > 0.32) & (table.index < 0.72)]) == {10}
    assert set(table[table.index > 0.72]) == {30}
    # each threshold's rows are max_trainable_depth's own at that threshold
    at_half = max_depth_by_fraction(curves, [0.5])
    expected = max_trainable_depth(run_outcomes(curves, 0.5), 0.5)
    pd.testing.assert_frame_equal(at_half, expected)
