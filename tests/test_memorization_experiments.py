"""Memorization experiment tables (galu.memorization.experiments, .fitting, .search_parts):
contracts, optimality, search."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import torch

import galu.memorization.experiments as mem
import galu.memorization.fitting as fitting
from galu.ensembles.least_squares import solve_galu
from galu.ensembles.networks import GaLUNet
from galu.ensembles.training import EnsembleSettings
from galu.memorization.experiments import (
    CapacityTask,
    capacity_tasks,
    min_width_table,
    underparam_table,
)
from galu.memorization.fitting import (
    FitOptions,
    Member,
    fit_members,
    normalized_mse,
    random_task,
    sign_error,
)
from galu.memorization.search_parts import search_part, stack_parts

UNDERPARAM_COLUMNS = ["model", "m", "d", "k", "seed", "kd_over_m", "train_loss"]
MIN_WIDTH_COLUMNS = ["model", "m", "d", "out_dim", "seed", "criterion", "min_width", "kd_over_m"]
QUICK = FitOptions(EnsembleSettings(steps=150, lr=0.02, batch_size=16))


def test_random_task_is_seeded_and_has_the_stated_distribution() -> None:
    x, y = random_task(4000, 3, 2, seed=1, labels="gaussian")
    again = random_task(4000, 3, 2, seed=1, labels="gaussian")
    assert np.array_equal(x, again[0]) and np.array_equal(y, again[1])
    assert not np.array_equal(x, random_task(4000, 3, 2, seed=2, labels="gaussian")[0])
    assert x.shape == (4000, 3) and y.shape == (4000, 2)
    for sample in (x, y):
        assert abs(sample.mean()) < 4 / np.sqrt(sample.size)
        assert abs(sample.var() - 1) < 4 * np.sqrt(2 / sample.size)
    _, signs = random_task(4000, 3, 1, seed=1, labels="sign")
    assert set(np.unique(signs)) == {-1.0, 1.0}
    assert abs(signs.mean()) < 4 / np.sqrt(signs.size)
    with pytest.raises(ValueError, match="labels must be 'gaussian' or 'sign', got 'binary'"):
        random_task(10, 2, 1, 0, "binary")


def test_metrics_on_tiny_arrays() -> None:
    y = np.array([[[1.0], [-1.0]], [[2.0], [0.0]]])
    pred = np.array([[[0.0], [-1.0]], [[1.0], [1.0]]])
    # member 0: errors (1, 0), mean square of y 1 -> 0.5; member 1: (1, 1) over 2 -> 0.5
    np.testing.assert_allclose(normalized_mse(pred, y), [0.5, 0.5])
    # An output or label of exactly 0 has no sign and counts as wrong: one of two each.
    np.testing.assert_allclose(sign_error(pred, y), [0.5, 0.5])
    np.testing.assert_allclose(sign_error(-y, y), [1.0, 1.0])


@pytest.fixture(scope="module")
def underparam() -> object:
    return underparam_table(
        [48], [4], [2, 4, 8, 16], [0, 1, 2], ["relu", "galu", "galu_exact"], QUICK
    )


def test_underparam_rows_follow_the_contract(underparam) -> None:
    table = underparam
    assert list(table.columns[: len(UNDERPARAM_COLUMNS)]) == UNDERPARAM_COLUMNS
    assert len(table) == 3 * 3 * 3  # k = 16 has kd > m and is left out
    assert sorted(table.k.unique()) == [2, 4, 8]
    np.testing.assert_allclose(table.kd_over_m, table.k * table.d / table.m)
    assert np.isfinite(table.train_loss).all() and (table.train_loss >= 0).all()
    exact = table[table.model == "galu_exact"]
    # Full rank kd but for the occasional coinciding gate patterns of so small a d.
    assert (exact["rank"] <= exact.k * exact.d).all()
    assert (exact["rank"] == exact.k * exact.d).mean() > 0.7
    assert (table[table.model != "galu_exact"]["rank"] == -1).all()


def test_sgd_galu_never_beats_the_exact_optimum_with_the_same_gates(underparam) -> None:
    keyed = underparam.set_index(["model", "k", "seed"]).train_loss
    for k in (2, 4, 8):
        for seed in (0, 1, 2):
            assert keyed["galu", k, seed] >= keyed["galu_exact", k, seed] - 1e-6


def test_exact_row_equals_a_direct_solve() -> None:
    table = underparam_table([40], [5], [3], [7], ["galu_exact"], QUICK)
    x, y = random_task(40, 5, 1, 7, "gaussian")
    solution = solve_galu(
        GaLUNet(5, [3], [7], dtype=torch.float64), torch.from_numpy(x), torch.from_numpy(y)
    )
    direct = normalized_mse(solution.fitted.numpy(), y[None])[0]
    assert table.train_loss.item() == pytest.approx(direct, rel=1e-12)


def _exact_metric(m: int, d: int, width: int, task: CapacityTask, seeds: int) -> float:
    labels = mem.CRITERION_LABELS[task.criterion]
    values = []
    for j in range(seeds):
        x, y = random_task(m, d, 1, task.probe_seed(j), labels)
        net = GaLUNet(d, [width], [task.probe_seed(j)], dtype=torch.float64)
        fitted = solve_galu(net, torch.from_numpy(x), torch.from_numpy(y)).fitted.numpy()
        metric = sign_error if task.criterion == "zero_error" else normalized_mse
        values.append(metric(fitted, y[None])[0])
    return float(np.mean(values))


@pytest.mark.parametrize("criterion", ["mse", "zero_error"])
def test_exact_min_width_agrees_with_a_brute_force_sweep(criterion: str) -> None:
    m, d, seeds = 48, 4, 2
    tasks = capacity_tasks(["galu_exact"], [m], [d], [1], criterion, [3])
    row = min_width_table(tasks, seeds, QUICK, lo=1, hi=24, mse_threshold=0.3).iloc[0]
    assert row.found
    width = int(row.min_width)
    metric = [_exact_metric(m, d, k, tasks[0], seeds) for k in range(1, 25)]
    success = [v == 0.0 if criterion == "zero_error" else v < 0.3 for v in metric]
    # The search's answer succeeds and the width below it fails ...
    assert success[width - 1] and (width == 1 or not success[width - 2])
    assert row.metric_at_min == pytest.approx(metric[width - 1])
    assert row.kd_over_m == width * d / m
    # ... and for the nested-gate least-squares loss success is monotone, so it is the
    # brute-force minimum itself.
    if criterion == "mse":
        assert width == success.index(True) + 1


def test_trained_models_search_and_a_hopeless_range_is_reported() -> None:
    tasks = capacity_tasks(["galu", "relu"], [32], [4], [1, 2], "mse", [0])
    table = min_width_table(tasks, 2, QUICK, lo=1, hi=32)
    assert list(table.columns[: len(MIN_WIDTH_COLUMNS)]) == MIN_WIDTH_COLUMNS
    assert len(table) == 4 and table.found.all()
    assert (table.min_width <= 32).all()
    np.testing.assert_allclose(table.kd_over_m, table.min_width * 4 / 32)
    hopeless = min_width_table(tasks[:1], 1, QUICK, lo=1, hi=2, mse_threshold=1e-6)
    assert not hopeless.found.item()
    assert np.isnan(hopeless.min_width.item()) and np.isnan(hopeless.kd_over_m.item())


def test_each_round_fits_one_ensemble_per_kind(monkeypatch) -> None:
    calls: list[tuple[str, int]] = []

    def counting(name, original):
        def wrapper(net, *args, **kwargs):
            calls.append((name, net.n_members))
            return original(net, *args, **kwargs)

        return wrapper

    monkeypatch.setattr(fitting, "exact_fits", counting("exact", fitting.exact_fits))
    monkeypatch.setattr(fitting, "train_ensemble", counting("sgd", fitting.train_ensemble))
    exact = capacity_tasks(["galu_exact"], [40], [4], [1], "mse", [0, 1, 2])
    table = min_width_table(exact, 2, QUICK, lo=1, hi=16, probes_per_round=3)
    assert [name for name, _ in calls] == ["exact"] * table.rounds.max()
    assert calls[0][1] == 3 * 2 * 2  # 3 searches x 2 ladder probes x 2 probe seeds
    # Trained searches of different m, d and out_dim share one padded ensemble per round
    # when the per-step overhead dominates.
    calls.clear()
    tasks = [CapacityTask("galu", m, d, o, "mse", 0) for m, d, o in [(24, 3, 1), (32, 4, 2)]]
    packed = FitOptions(QUICK.settings, overhead=1e9)
    table = min_width_table(tasks, 2, packed, lo=1, hi=16, probes_per_round=2)
    assert [name for name, _ in calls] == ["sgd"] * table.rounds.max()


def test_a_member_fitted_in_a_padded_ensemble_equals_it_fitted_alone() -> None:
    group = [Member("relu", 24, 3, 1, 5, 1), Member("relu", 32, 4, 2, 7, 2)]
    options = FitOptions(
        EnsembleSettings(steps=60, lr=0.02, batch_size=8), dtype=torch.float64, overhead=1e9
    )
    together = fit_members(group, options)
    for member, fit in zip(group, together, strict=True):
        alone = fit_members([member], options)[0]
        assert fit.pred.shape == (member.m, member.out_dim)
        np.testing.assert_allclose(fit.pred, alone.pred, rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"model": "tanh"}, "model must be one of"),
        ({"criterion": "mae"}, r"criterion must be one of \('mse', 'zero_error'\)"),
        ({"criterion": "zero_error", "out_dim": 2}, "'zero_error' needs out_dim 1, got 2"),
        ({"model": "galu_exact", "out_dim": 4}, "bilinear"),
    ],
)
def test_bad_tasks_raise(kwargs: dict, message: str) -> None:
    fields = {"model": "galu", "m": 8, "d": 2, "out_dim": 1, "criterion": "mse", "seed": 0}
    with pytest.raises(ValueError, match=message):
        CapacityTask(**{**fields, **kwargs})


def test_capacity_grid_leaves_out_undefined_exact_tasks() -> None:
    tasks = capacity_tasks(["galu", "galu_exact"], [64], [8], [1, 4], "mse", [0, 1])
    assert len(tasks) == 2 * 2 + 1 * 2
    assert all(t.out_dim == 1 for t in tasks if t.model == "galu_exact")


def test_search_parts_deal_the_grid_and_stack_back_in_its_order() -> None:
    tasks = capacity_tasks(["relu", "galu_exact"], [32, 64], [4], [1, 2], "mse", [0, 1])
    parts = [search_part(tasks, p, 3) for p in range(3)]
    assert sorted(tasks.index(t) for part in parts for t in part) == list(range(len(tasks)))
    assert [len(p) for p in parts] == [4, 4, 4]  # 12 tasks: relu 2x2x2, galu_exact 2x1x2
    assert parts[1] == [tasks[1], tasks[4], tasks[7], tasks[10]]
    tables = [pd.DataFrame({"task": [tasks.index(t) for t in p]}) for p in parts]
    assert stack_parts(tables)["task"].tolist() == list(range(len(tasks)))
    assert stack_parts(tables[:1]).equals(tables[0])  # one part: the table itself
    with pytest.raises(ValueError, match=r"part must be in \[0, 3\), got 3"):
        search_part(tasks, 3, 3)


def test_a_search_split_into_parts_gives_the_one_job_table() -> None:
    """Each search's probes train in the part's ensembles instead of the whole grid's; a
    member trains as alone in any ensemble, so the stacked table is the same."""
    section = {
        "m": 32, "d": 4, "out_dims": [1, 2], "models": ["relu", "galu", "galu_exact"],
        "seeds": 1, "probe_seeds": 1, "width_min": 1, "width_max": 16, "probes_per_round": 2,
        "ladder_start": 0.5, "steps": 30, "lr": 0.02, "batch_size": 0, "optimizer": "adam",
        "mse_threshold": 0.3,
    }  # fmt: skip
    common = {"dtype": "float64", "ensemble_overhead": 0, "seed": 0, "device": "cpu"}
    whole = mem.min_width_experiment("mse", section, common, "cpu")
    split = {**section, "parts": 2}
    parts = [mem.min_width_experiment("mse", split, common, "cpu", p) for p in range(2)]
    pd.testing.assert_frame_equal(stack_parts(parts), whole)
