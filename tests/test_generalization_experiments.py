"""The four generalization experiments as tables (Fiat et al., arXiv 1906.05032, sec. 5)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import torch

from galu.generalization.accuracy import CONTRACT_COLUMNS, EXTRA_COLUMNS, accuracy_table
from galu.generalization.experiments import (
    ClusterSettings,
    ImageSettings,
    LinearSettings,
    ParitySettings,
    SyntheticSettings,
    clusters_table,
    image_accuracy,
    image_experiment,
    linear_table,
    member_frame,
    parity_table,
    synthetic_experiment,
)
from galu.generalization.training import train_members
from galu.seeding import run_seeds

torch.set_num_threads(1)


def _arrays() -> dict[str, np.ndarray]:
    rng = np.random.default_rng(0)
    base = rng.integers(0, 200, size=(10, 6, 6))

    def draw(n: int) -> tuple[np.ndarray, np.ndarray]:
        labels = rng.integers(0, 10, size=n)
        return (base[labels] + rng.integers(0, 56, size=(n, 6, 6))).astype(np.uint8), labels

    (x_train, y_train), (x_test, y_test) = draw(400), draw(100)
    return {"x_train": x_train, "y_train": y_train, "x_test": x_test, "y_test": y_test}


IMAGE = ImageSettings(
    models=["relu", "galu0", "galu", "galu_sigmoid_prev", "linear"],
    widths=[4, 8],
    depth=2,
    seeds=2,
    lrs=[3e-2, 1e-2],
    gate_scales=[0.1, 2.0],
    steps=60,
    batch_size=32,
    n_components=8,
    pad_widths=False,
)


@pytest.fixture(scope="module")
def image_grid_table() -> pd.DataFrame:
    return image_experiment("mnist", _arrays(), IMAGE, seed=5, device="cpu")


def test_image_grid_has_one_row_per_member(image_grid_table):
    grid = image_grid_table
    # relu, galu: 2 widths x 2 seeds x 2 lrs; the two sigmoid-gated models x 2 gate scales;
    # linear 2 seeds x 2 lrs
    assert len(grid) == 8 + 8 + 2 * 16 + 4
    assert sorted(grid["seed"].unique()) == [5, 6]
    assert set(grid.loc[grid.model == "linear", "width"]) == {0}
    sigmoid = grid.model.isin(["galu0", "galu_sigmoid_prev"])
    assert grid.loc[~sigmoid, "gate_scale"].isna().all()
    assert set(grid.loc[sigmoid, "gate_scale"]) == {0.1, 2.0}
    assert (grid["n_train"] == 360).all() and (grid["n_test"] == 100).all()
    errors = grid[["train_error", "val_error", "test_error"]].to_numpy()
    assert np.all((errors >= 0) & (errors <= 1))
    # Linearly separable class patterns: the linear model solves them, and at the better
    # learning rate every width-8 network is far below chance (0.9) after 60 steps.
    assert grid.loc[grid.model == "linear", "test_error"].max() == 0.0
    best = grid[grid.width == 8].groupby(["model", "seed"])["test_error"].min()
    assert best.max() < 0.15


def test_image_grid_is_reproducible(image_grid_table):
    again = image_experiment("mnist", _arrays(), IMAGE, seed=5, device="cpu")
    pd.testing.assert_frame_equal(again, image_grid_table)


def test_image_accuracy_selects_per_model_and_width(image_grid_table):
    table = image_accuracy(image_grid_table)
    assert len(table) == 2 * (2 + 2 + 2 + 2) + 2  # (model, width, seed) rows, linear: 2 seeds
    for _, row in table.iterrows():
        same = image_grid_table[
            (image_grid_table.model == row.model)
            & (image_grid_table.width == row.width)
            & (image_grid_table.lr == row.lr)
        ]
        assert row.val_error in same["val_error"].to_numpy()
    assert (table["test_error_test_selected"].groupby(table.model).mean() <= 1).all()
    # The test-selected error is the best seed-mean test error of the grid.
    best = image_grid_table.groupby(["model", "width", "lr", "gate_scale"], dropna=False)
    best = best["test_error"].mean().groupby(["model", "width"]).min()
    chosen = table.groupby(["model", "width"])["test_error_test_selected"].mean()
    np.testing.assert_allclose(chosen, best.loc[chosen.index], rtol=0, atol=1e-12)


def test_the_gate_scale_of_a_csv_row_is_the_gate_the_network_used(tmp_path):
    # Each row's (model, width, seed, lr, a) goes to CSV and back; recomputing member i by
    # hand with that a, the paper's sigmoid(x·u / (a d)) on the input x, gives its output.
    settings = ImageSettings(["galu0"], [3, 5], 2, 2, [1e-2], [0.01, 0.5, 10.0], 20, 16)
    x = torch.randn(40, 6, generator=torch.Generator().manual_seed(2))
    y = torch.randint(0, 10, (40,), generator=torch.Generator().manual_seed(3))
    members = settings.members(seed=1)
    fit = train_members(members, x, y, "cross_entropy", 20, 16, 2, 10)
    member_frame(members, fit.order).to_csv(tmp_path / "grid.csv", index=False)
    rows = pd.read_csv(tmp_path / "grid.csv")
    assert sorted(set(rows.gate_scale)) == [0.01, 0.5, 10.0]
    (block,) = fit.stack.blocks
    with torch.no_grad():
        out = fit.stack(x).double()
        x64 = x.double()
        for e, row in rows.iterrows():
            k = row.width
            assert (block.widths[e], block.seeds[e]) == (k, row.seed)
            h = x64
            for layer in range(2):
                weight, bias = (t[e, :k].double() for t in block.layer(layer))
                weight = weight[:, : h.shape[1]]
                u = block.gates(layer)[0][e, :k].double()
                gate = torch.sigmoid(x64 @ u.T / (row.gate_scale * 6))
                h = gate * (h @ weight.T + bias)
            readout = block._scaled(block.readout)[e, :k].double()
            expected = h @ readout + block._scaled(block.out_bias)[e].double()
            torch.testing.assert_close(out[e], expected, rtol=1e-5, atol=1e-5)


SYNTH = SyntheticSettings(
    models=["relu", "galu", "galu_exact"], width=8, seeds=2, lr=1e-2, steps=200, batch_size=0
)


def test_clusters_table_covers_tasks_noise_and_exact_fit():
    clusters = ClusterSettings(
        tasks=["regression", "classification"],
        sigma_ys=[0.0, 1.0],
        n_train=40,
        n_test=200,
        n_centres=4,
        dim=8,
        spread=1.0,
    )
    table = clusters_table(clusters, SYNTH, seed=0)
    counts = table.groupby(["task", "model"]).size().to_dict()
    assert counts == {
        ("classification", "galu"): 4,
        ("classification", "relu"): 4,
        ("regression", "galu"): 4,
        ("regression", "galu_exact"): 4,
        ("regression", "relu"): 4,
    }
    exact = table[table.model == "galu_exact"]
    # 8 units x 9 inputs + bias = 73 features for 40 points in general position: the
    # least-squares fit interpolates, whatever the noise.
    np.testing.assert_allclose(exact["train_loss"], 0.0, atol=1e-20)
    assert (exact["test_loss"] > 0.01).all()
    # Label noise hurts every (task, model, seed) on held-out data; with sigma_y = 1 half
    # the classification labels are coin flips, so the test error is near 1/2.
    loss = table.set_index(["task", "model", "seed", "sigma_y"])["test_loss"].unstack()
    assert (loss[1.0] > loss[0.0]).all()
    noisy = table[(table.task == "classification") & (table.sigma_y == 1.0)]
    assert noisy["test_error"].mean() > 0.4
    assert (table["selection"] == "fixed").all()
    np.testing.assert_array_equal(table["test_error_test_selected"], table["test_error"])


def test_linear_and_parity_tables():
    settings = SyntheticSettings(
        models=["relu", "galu", "linear"], width=16, seeds=2, lr=1e-2, steps=200, batch_size=0
    )
    linear = linear_table(LinearSettings(n_trains=[10, 200], n_test=500, dim=5), settings, 1)
    assert len(linear) == 2 * 3 * 2
    by_n = linear.groupby("n_train")["test_error"].mean()
    assert by_n[200] < by_n[10]
    assert linear.loc[linear.model == "linear", "test_error"].max() < 0.2
    parity_settings = ParitySettings(subset_sizes=[1, 5], n_train=300, n_test=300, dim=5)
    parity = parity_table(parity_settings, settings, 1)
    assert sorted(parity["subset_size"].unique()) == [1, 5]
    # One bit is linearly learnable; the parity of all 5 bits is not for the linear model.
    linear_model = parity[parity.model == "linear"].set_index(["subset_size", "seed"])
    assert linear_model.loc[1, "test_error"].max() < 0.05
    assert linear_model.loc[5, "test_error"].min() > 0.35


CLUSTERS = {
    "tasks": ["classification"],
    "sigma_ys": [0.0],
    "n_train": 30,
    "n_test": 30,
    "n_centres": 3,
    "dim": 4,
    "spread": 0.1,
    "models": ["relu"],
    "width": 4,
    "seeds": 1,
    "lr": 0.01,
    "steps": 50,
    "batch_size": 0,
}


def test_synthetic_experiment_dispatches_a_config_section():
    table = synthetic_experiment("clusters", CLUSTERS, 3)
    direct = clusters_table(
        ClusterSettings(["classification"], [0.0], 30, 30, 3, 4, 0.1),
        SyntheticSettings(["relu"], 4, 1, 0.01, 50, 0),
        3,
    )
    pd.testing.assert_frame_equal(table, direct)
    assert table["seed"].tolist() == [3]


def test_accuracy_table_has_the_contract_columns_first(image_grid_table):
    parity = parity_table(
        ParitySettings(subset_sizes=[2], n_train=50, n_test=50, dim=4),
        SyntheticSettings(["relu"], 4, 1, 1e-2, 5, 0),
        0,
    )
    table = accuracy_table([parity, image_accuracy(image_grid_table)])
    assert list(table.columns) == CONTRACT_COLUMNS + EXTRA_COLUMNS
    assert list(table["dataset"].unique()) == ["mnist", "parity"]
    assert table.loc[table.dataset == "mnist", "subset_size"].isna().all()
    with pytest.raises(ValueError, match="dataset must be one of"):
        accuracy_table([parity.assign(dataset="cifar10")])


@pytest.mark.parametrize(
    "call,message",
    [
        (lambda: run_seeds(0, 0), "seeds must be an integer >= 1, got 0"),
        (lambda: SyntheticSettings(["tanh"], 4, 1, 0.1, 5, 0), "models must be a non-empty list"),
        (lambda: ClusterSettings(["regression"], [3.0]), r"sigma_ys must be a non-empty list"),
        (lambda: LinearSettings([0]), "n_trains must be a non-empty list of ints >= 1"),
        (lambda: ParitySettings([9], dim=5), r"subset_sizes must be ints in \[1, dim=5\]"),
        (lambda: ImageSettings(["relu"], [4], 2, 1, [-1.0], [], 5, 8), "lrs must be"),
        (
            lambda: synthetic_experiment("clusters", {**CLUSTERS, "models": ["linear"]}, 0),
            r"models of clusters must be a non-empty list from \('relu', 'galu', 'galu_exact'\)",
        ),
        (lambda: synthetic_experiment("xor", CLUSTERS, 0), "synthetic dataset must be one of"),
        (lambda: synthetic_experiment("clusters", {"tasks": []}, 0), "the clusters settings lack"),
    ],
)
def test_bad_settings_are_named(call, message):
    with pytest.raises(ValueError, match=message):
        call()


@pytest.mark.parametrize("loss", ["cross_entropy", "mse"])
def test_training_scores_are_the_scores_of_a_second_pass_bit_for_bit(loss):
    # The trainer's final pass over the training data (kept by train_members) gives the
    # same losses and error rates as scoring the data again; with per-member data, one
    # member's targets hold a NaN, so it diverges and both give NaN for it.
    from galu.generalization.models import MemberSpec
    from galu.generalization.training import scores, training_scores

    gen = torch.Generator().manual_seed(3)
    members = [
        MemberSpec("relu", 8, 0, 1e-2),
        MemberSpec("galu0", 4, 1, 1e-2, 2.0),
        MemberSpec("relu", 4, 2, 1e-2),
        MemberSpec("linear", 0, 3, 1e-2),
    ]
    n = 5000  # more than one evaluation chunk (4096 rows)
    if loss == "cross_entropy":  # shared data, integer labels
        x, out_dim = torch.randn(n, 6, generator=gen), 3
        y = torch.randint(0, 3, (n,), generator=gen)
    else:  # per-member data, (E, n, 1) targets
        x, out_dim = torch.randn(len(members), n, 6, generator=gen), 1
        y = torch.randn(len(members), n, 1, generator=gen)
        y[2, 7, 0] = float("nan")
    fit = train_members(members, x, y, loss, 30, 64, 2, out_dim, False, "cpu")
    xs, ys = (x, y) if x.dim() == 2 else (x[fit.order], y[fit.order])
    again = scores(fit, loss, xs, ys)
    kept = training_scores(fit, xs, ys)
    assert fit.result.final_outputs is None  # released after use
    diverged = int(loss == "mse")
    assert fit.result.diverged.sum() == diverged
    for a, b in zip(kept, again, strict=True):
        np.testing.assert_array_equal(a, b)
        assert np.isfinite(a).sum() == len(members) - diverged
