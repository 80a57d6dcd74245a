"""Two widths judged at one epoch (galu.normalization.widths, issue #60), the stage's checks
of normalization.wide, and the wide jobs' costs (the same scripts at another width)."""

import numpy as np
import pandas as pd
import pytest

from galu.normalization import checks
from galu.normalization.costs import _at_wide_width, lr_sweep, training
from galu.normalization.widths import width_comparison
from galu.workflow.planning.costs import CONSTANTS, CostModel
from galu.workflow.planning.dag import planned_jobs
from galu.workflow.settings.runconfig import run_config

from conftest import REPO


def _run(width, depth, losses, errors, diverged=False):
    n = len(losses)
    return pd.DataFrame(
        {
            "activation": "relu",
            "width": width,
            "depth": depth,
            "seed": 0,
            "epoch": np.arange(n),
            "train_loss": losses,
            "train_error": 0.5,
            "test_error": errors,
            "diverged": diverged,
        }
    )


def test_runs_are_judged_on_the_epochs_both_widths_reached():
    # The narrow run trains only after epoch 2 (its loss halves at epoch 3): at epoch 2 it
    # has not trained yet, and its test error is epoch 2's, not its last.
    narrow = _run(128, 30, [2.0, 1.9, 1.8, 0.5, 0.4], [0.9, 0.8, 0.7, 0.3, 0.2])
    wide = _run(1024, 30, [2.0, 1.5, 0.9], [0.9, 0.6, 0.45])
    table = width_comparison(pd.concat([narrow, wide]), fraction=0.5, epoch=2)
    assert list(table["width"]) == [128, 1024]
    assert list(table["trains"]) == [False, True]  # wide: 0.9 < 0.5 * 2.0
    assert list(table["final_test_error"]) == [0.7, 0.45]
    assert list(table["compared_at_epoch"]) == [2, 2]
    assert list(table["epochs_run"]) == [2, 2]
    assert table["loss_ratio"].tolist() == pytest.approx([1.8 / 2.0, 0.9 / 2.0])
    # Judged on every epoch instead, the narrow run trains: the epoch decides.
    later = width_comparison(pd.concat([narrow, wide]), fraction=0.5, epoch=4)
    assert list(later["trains"]) == [True, True]


def test_a_run_that_stopped_early_is_judged_on_what_it_ran():
    stopped = _run(1024, 60, [2.0, 2.1], [0.9, 0.9], diverged=True)
    (row,) = width_comparison(stopped, fraction=0.5, epoch=25).to_dict("records")
    assert row["epochs_run"] == 1 and row["diverged"] and not row["trains"]
    with pytest.raises(ValueError, match="at least 1"):
        width_comparison(stopped, fraction=0.5, epoch=0)


def _config(**wide):
    return {
        "normalization": {
            "trainability": {
                "activations": ["relu"],
                "depths": [10, 30],
                "widths": [128],
                "epochs": 50,
            },
            "wide": {"activations": ["relu"], "width": 1024, "depths": [30], "epochs": 25, **wide},
        }
    }


def test_the_wide_runs_must_stand_beside_trainability_runs():
    assert list(checks.problems(_config())) == []
    assert list(checks.problems(_config(activations=[], depths=[99]))) == []  # off
    (text,) = checks.problems(_config(activations=["relu", "tanh"]))
    assert "normalization.wide.activations: ['tanh'] not in normalization.trainability" in text
    (text,) = checks.problems(_config(depths=[30, 60]))
    assert "normalization.wide.depths: [60] not in" in text
    (text,) = checks.problems(_config(width=128))
    assert "128 is already one of normalization.trainability.widths" in text
    (text,) = checks.problems(_config(epochs=51))
    assert "51 is more than normalization.trainability.epochs (50)" in text
    assert list(checks.problems(_config(epochs=50))) == []


def test_a_wide_job_costs_its_twin_at_the_wide_settings():
    cfg = run_config(REPO, ["config/paper.yaml", "config/paper-cpu.yaml"])
    wide, train = cfg["normalization"]["wide"], cfg["normalization"]["trainability"]
    wc = {"norm_activation": "relu", "norm_depth": "60"}
    # relu keeps spectra at width 128; the wide run keeps none, at its width, seeds, epochs
    at_width = _at_wide_width(cfg)["normalization"]
    assert at_width["trainability"]["widths"] == [wide["width"]] != train["widths"]
    assert at_width["spectra"]["activations"] == []
    assert at_width["trainability"]["lr_sweep"]["lrs"] == wide["lrs"] != train["lr_sweep"]["lrs"]
    assert cfg["normalization"]["trainability"]["lr_sweep"]["lrs"] == train["lr_sweep"]["lrs"]
    one = training(_at_wide_width(cfg), wc)
    planned = planned_jobs(REPO, ["config/paper.yaml", "config/paper-cpu.yaml"])
    costs = {p.job.rule: p.cost for p in planned}
    assert costs["normalization_train_wide"].sizes(cfg, wc) == one
    assert costs["normalization_lr_sweep_wide"].sizes(cfg, wc) == lr_sweep(_at_wide_width(cfg), wc)
    # 64 times the multiply-adds per hidden layer, at a quarter of the runs (1 seed, 25
    # epochs against 2 and 50): still about 12 times the width-128 job's work
    assert 10 < one.work / training(cfg, wc).work < 16
    model = CostModel.load(REPO / CONSTANTS)
    twins = {rule: cost.twin for rule, cost in costs.items() if cost.twin}
    assert twins == {
        "normalization_lr_sweep_wide": "normalization_lr_sweep",
        "normalization_train_wide": "normalization_train",
        "normalization_correlations_wide": "normalization_correlations",
    }
    for rule, twin in twins.items():
        assert rule not in model.rules  # borrowed, until measured
        assert model.constants(rule, twin) == model.constants(twin) != model.default
