"""Numerical faults: a training run that diverges is recorded as such and counts as failure.

Divergence is provoked the way it happens in practice, by a learning rate far too large
for one member's data (or for the whole run). The guarantees: the ensemble trainer records
the first step whose loss is not finite and the other members carry on exactly as if the
diverging member had been healthy; the minimal-width search and the trainability criterion
read a diverged run as a failure and never crash on it.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
import torch

from galu.ensembles.networks import make_model
from galu.ensembles.training import EnsembleSettings, mse_loss, train_ensemble
from galu.memorization.experiments import CapacityTask, min_width_table
from galu.memorization.fitting import FitOptions
from galu.normalization import cifar, lr_sweep, mlp, training
from galu.normalization.trainability import max_trainable_depth, run_outcomes, trains

MEMBERS, N, D = 4, 32, 5


def _ensemble_run(kind: str, scale: float):
    """Four members on their own data; member 0's inputs are multiplied by ``scale``."""
    gen = torch.Generator().manual_seed(7)
    x = torch.randn(MEMBERS, N, D, generator=gen)
    y = torch.randn(MEMBERS, N, 1, generator=gen)
    x[0] *= scale
    seeds = list(range(MEMBERS))
    net = make_model(kind, D, [8] * MEMBERS, seeds, out_dim=1)
    settings = EnsembleSettings(steps=40, lr=0.05, optimizer="sgd", record_every=1)
    return train_ensemble(net, mse_loss, x, y, seeds, settings)


@pytest.mark.parametrize("kind", ["relu", "galu"])
def test_a_diverging_member_is_recorded_with_its_step_and_the_others_carry_on(kind):
    healthy = _ensemble_run(kind, scale=1.0)
    blown = _ensemble_run(kind, scale=1e4)
    assert not healthy.diverged.any()
    step = int(blown.diverged_step[0])
    assert blown.diverged.tolist() == [True, False, False, False]
    # The recorded step is the first whose minibatch loss was not finite.
    losses = blown.history_loss[:, 0]
    assert 0 <= step < len(losses) and not np.isfinite(losses[step])
    assert np.all(np.isfinite(losses[:step]))
    assert math.isnan(blown.final_loss[0])
    # Members 1..3 trained exactly as beside a healthy member 0: nothing leaked from it.
    np.testing.assert_allclose(blown.history_loss[:, 1:], healthy.history_loss[:, 1:], rtol=1e-6)
    np.testing.assert_allclose(blown.final_loss[1:], healthy.final_loss[1:], rtol=1e-6)
    assert np.all(np.isfinite(blown.final_loss[1:]))


def _searches(criterion: str, lr: float) -> pd.DataFrame:
    task = CapacityTask("relu", m=24, d=4, out_dim=1, criterion=criterion, seed=0)
    options = FitOptions(EnsembleSettings(steps=30, lr=lr, optimizer="sgd"))
    return min_width_table([task], probe_seeds=2, options=options, lo=1, hi=16)


@pytest.mark.parametrize(
    "criterion",
    ["mse", "zero_error"],
)
def test_the_width_search_counts_diverged_probes_as_failures(criterion):
    table = _searches(criterion, lr=1e6)  # every probe network blows up at once
    row = table.iloc[0]
    assert not row["found"] and math.isnan(row["min_width"])
    assert row["probes"] >= 1 and math.isnan(row["metric_at_min"])


def _tiny_data(seed: int = 0) -> cifar.TensorData:
    gen = torch.Generator().manual_seed(seed)
    x = torch.randn(256, 20, generator=gen)
    y = torch.randint(0, 10, (256,), generator=gen)
    return cifar.TensorData(x[:192], y[:192], x[192:], y[192:])


def test_a_diverging_deep_network_is_recorded_and_never_counts_as_trained():
    data = _tiny_data()
    settings = training.TrainSettings(lr=1e8, epochs=6, batch_size=32, momentum=0.9)
    model = mlp.build_mlp("relu", 3, 16, seed=0, input_dim=20)
    curve = training.train(model, data, settings, seed=0)
    assert curve["diverged"].all()
    assert np.all(np.isfinite(curve["train_loss"]))  # the table keeps only finite epochs
    assert curve["epoch"].max() < settings.epochs  # it stopped at the first non-finite epoch
    assert not trains(curve["train_loss"], 0.8, math.log(10), diverged=True)
    # The flag alone decides: a loss that fell before the blow-up does not make it train.
    assert trains([2.3, 0.5], 0.8, math.log(10)) and not trains([2.3, 0.5], 0.8, diverged=True)
    healthy_settings = training.TrainSettings(lr=0.05, epochs=6, batch_size=32, momentum=0.9)
    healthy = training.train(
        mlp.build_mlp("relu", 2, 16, seed=0, input_dim=20), data, healthy_settings, seed=0
    )
    assert not healthy["diverged"].any()
    runs = pd.concat(
        [
            curve.assign(activation="relu", width=16, depth=3, seed=0),
            healthy.assign(activation="relu", width=16, depth=2, seed=0),
        ],
        ignore_index=True,
    )
    outcomes = run_outcomes(runs, fraction=0.99).set_index("depth")
    assert outcomes.loc[3, "diverged"] and not outcomes.loc[3, "trains"]
    assert outcomes.loc[2, "trains"]  # the criterion does pass a run that trains
    deepest = max_trainable_depth(outcomes.reset_index(), fraction=0.99)
    assert deepest["max_trainable_depth"].tolist() == [2]


def test_the_learning_rate_sweep_skips_a_diverging_rate():
    data = _tiny_data(1)
    sweep = lr_sweep.lr_sweep(
        "relu", data, [0.05, 1e8], depth=2, width=16, epochs=3, seed=0, batch_size=32
    )
    assert sweep.set_index("lr")["diverged"].to_dict() == {0.05: False, 1e8: True}
    assert lr_sweep.choose_lr(sweep) == 0.05
    only_bad = sweep[sweep["lr"] == 1e8]
    with pytest.raises(ValueError, match="every learning rate in .* diverged; add smaller"):
        lr_sweep.choose_lr(only_bad)
