"""Ensembles fitted side by side in threads: same results, same order, torch's threads restored."""

from __future__ import annotations

import threading
from collections.abc import Iterator

import numpy as np
import pytest
import torch

from galu.device import torch_threads
from galu.ensembles.side_by_side import map_side_by_side
from galu.ensembles.training import EnsembleSettings
from galu.memorization.fitting import FitOptions, Member, _buckets, fit_members


@pytest.fixture
def two_threads() -> Iterator[None]:
    with torch_threads(2):
        yield


def test_results_keep_the_items_order_whatever_the_cost_order(two_threads):
    items = [3, 1, 4, 1, 5, 9, 2, 6]
    assert map_side_by_side(lambda x: x * x, items, cost=float) == [x * x for x in items]


def test_the_work_runs_in_two_threads_at_once_with_one_torch_thread_each(two_threads):
    both = threading.Barrier(2, timeout=30)  # broken (an error) unless two run at once
    seen = []

    def work(item: int) -> int:
        seen.append((threading.get_ident(), torch.get_num_threads()))
        if item < 2:
            both.wait()
        return item

    assert map_side_by_side(work, [0, 1, 2, 3], cost=lambda i: -i) == [0, 1, 2, 3]
    assert {count for _, count in seen} == {1}
    assert len({ident for ident, _ in seen}) == 2
    assert threading.get_ident() not in {ident for ident, _ in seen}
    assert torch.get_num_threads() == 2


def test_torch_threads_are_restored_after_an_error(two_threads):
    def work(item: int) -> int:
        if item == 2:
            raise ValueError("bad item")
        return item

    with pytest.raises(ValueError, match="bad item"):
        map_side_by_side(work, [1, 2, 3], cost=float)
    assert torch.get_num_threads() == 2


@pytest.mark.parametrize("device, threads", [("cuda", 2), ("cpu", 1)])
def test_a_gpu_or_one_thread_runs_in_the_callers_thread_in_order(device, threads):
    seen = []
    with torch_threads(threads):
        out = map_side_by_side(
            lambda i: seen.append(threading.get_ident()) or i, [2, 1], float, device
        )
    assert out == [2, 1]
    assert seen == [threading.get_ident()] * 2


def test_fit_members_at_two_threads_is_bitwise_the_one_thread_fit():
    # trained ReLU and GaLU ensembles of two sizes, and exact solves of two shapes
    members = [
        Member(model, m, d, 1, width, seed)
        for model in ("relu", "galu", "galu_exact")
        for m, d, width in ((24, 3, 5), (40, 6, 12))
        for seed in (0, 1)
    ]
    options = FitOptions(EnsembleSettings(steps=40, lr=0.02, batch_size=16), overhead=0.0)
    assert len(_buckets(members, options)) >= 4  # several pieces of work to spread
    fits = {}
    for threads in (1, 2):
        with torch_threads(threads):
            fits[threads] = fit_members(members, options)
    for one, two in zip(fits[1], fits[2], strict=True):
        assert np.array_equal(one.pred, two.pred, equal_nan=True)
        assert (one.diverged_step, one.rank) == (two.diverged_step, two.rank)
