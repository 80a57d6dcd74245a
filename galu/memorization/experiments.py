"""Memorization experiments of the GaLU paper, as tidy tables.

Fiat, Malach & Shalev-Shwartz, *Decoupling Gating from Linearity* (arXiv 1906.05032),
section 3 ("memorization"):

- under-parameterized loss (their figure 1): with ``x ~ N(0, I_d)`` and labels
  ``y ~ N(0, 1)`` independent of ``x``, a GaLU network of width ``k`` (``kd <= m``) reaches
  normalized training loss ``1 - kd/m``; a ReLU network lands between ``1 - 2kd/m`` and
  that. :func:`underparam_table` gives rows for ``underparam.csv``.
- capacity (their figures 2 and 3): the smallest width that fits m random examples,
  ``min_width ~ m/d``, for Gaussian label vectors (criterion ``mse``: normalized training
  MSE below a threshold, averaged over probe seeds) and for random signs (criterion
  ``zero_error``: every training sign right, for every probe seed).
  :func:`min_width_table` gives rows for ``min_width.csv``.

The networks are fitted by :func:`galu.memorization.fitting.fit_members` (trained ``relu``
and ``galu``, exact ``galu_exact``); the smallest width is found by the lock-step searches
of :mod:`galu.memorization.width_search`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from galu.memorization.fitting import (
    MEMORIZATION_MODELS,
    FitOptions,
    Member,
    fit_members,
    fit_options,
    normalized_mse,
    sign_error,
)
from galu.memorization.grid import underparam_points
from galu.memorization.search_parts import search_part
from galu.memorization.width_search import MinWidthSearch, run_searches
from galu.seeding import derive_seed, run_seeds

# How a width succeeds: normalized training MSE below a threshold (Gaussian label vectors)
# or every training sign right (random signs); and the labels each criterion draws.
WIDTH_CRITERIA = ("mse", "zero_error")
CRITERION_LABELS = {"mse": "gaussian", "zero_error": "sign"}


def underparam_table(
    ms: Sequence[int],
    ds: Sequence[int],
    ks: Sequence[int],
    seeds: Sequence[int],
    models: Sequence[str],
    options: FitOptions,
) -> pd.DataFrame:
    """Rows of ``underparam.csv``: normalized training loss per model, m, d, k and seed.

    Gaussian labels; all points and seeds of a model are fitted together
    (:func:`fit_members`).
    """
    members = [
        Member(model, m, d, 1, k, seed)
        for model in models
        for m, d, k in underparam_points(ms, ds, ks)
        for seed in seeds
    ]
    rows = []
    for member, fit in zip(members, fit_members(members, options), strict=True):
        _, y = member.task()
        rows.append(
            {
                "model": member.model,
                "m": member.m,
                "d": member.d,
                "k": member.width,
                "seed": member.seed,
                "kd_over_m": member.width * member.d / member.m,
                "train_loss": normalized_mse(fit.pred[None], y[None])[0],
                "steps": 0 if member.model == "galu_exact" else options.settings.steps,
                "diverged_step": fit.diverged_step,
                "rank": fit.rank,
            }
        )
    return pd.DataFrame(rows)


@dataclass(frozen=True)
class CapacityTask:
    """One minimal-width search: a model on m examples in d dimensions, one replicate seed."""

    model: str
    m: int
    d: int
    out_dim: int
    criterion: str
    seed: int

    def __post_init__(self) -> None:
        if self.model not in MEMORIZATION_MODELS:
            raise ValueError(f"model must be one of {MEMORIZATION_MODELS}, got {self.model!r}")
        if self.criterion not in WIDTH_CRITERIA:
            raise ValueError(f"criterion must be one of {WIDTH_CRITERIA}, got {self.criterion!r}")
        if self.criterion == "zero_error" and self.out_dim != 1:
            raise ValueError(f"criterion 'zero_error' needs out_dim 1, got {self.out_dim!r}")
        if self.model == "galu_exact" and self.out_dim != 1:
            raise ValueError(
                f"model 'galu_exact' needs out_dim 1, got {self.out_dim!r}: with a shared "
                "readout the vector-output problem is bilinear and has no exact solver"
            )

    def probe_seed(self, j: int) -> int:
        """Seed of the j-th probe network (its data, initialization and batches)."""
        return derive_seed(self.seed, f"probe-{j}")


def capacity_tasks(
    models: Sequence[str],
    ms: Sequence[int],
    ds: Sequence[int],
    out_dims: Sequence[int],
    criterion: str,
    seeds: Sequence[int],
) -> list[CapacityTask]:
    """All tasks of the grid; ``galu_exact`` only where it is defined (``out_dim`` 1)."""
    return [
        CapacityTask(model, m, d, o, criterion, s)
        for model in models
        for m in ms
        for d in ds
        for o in out_dims
        for s in seeds
        if model != "galu_exact" or o == 1
    ]


class CapacityOracle:
    """Decides probes ``(task index, width)`` in batches through :func:`fit_members`.

    Success: ``mse`` needs the mean normalized MSE over probe seeds below
    ``mse_threshold``; ``zero_error`` needs every sign right for every probe seed. A
    diverged probe network counts as a failure.
    """

    def __init__(
        self,
        tasks: Sequence[CapacityTask],
        probe_seeds: int,
        options: FitOptions,
        mse_threshold: float,
    ) -> None:
        self.tasks, self.probe_seeds, self.options = tasks, probe_seeds, options
        self.mse_threshold = mse_threshold
        self.metric: dict[tuple[int, int], float] = {}

    def _member(self, i: int, width: int, j: int) -> Member:
        t = self.tasks[i]
        return Member(
            t.model, t.m, t.d, t.out_dim, width, t.probe_seed(j), CRITERION_LABELS[t.criterion]
        )

    def __call__(self, requests: list[tuple[int, int]]) -> list[bool]:
        members = [self._member(i, w, j) for i, w in requests for j in range(self.probe_seeds)]
        fits = fit_members(members, self.options)
        verdicts = []
        for r, (i, width) in enumerate(requests):
            part = range(r * self.probe_seeds, (r + 1) * self.probe_seeds)
            zero_error = self.tasks[i].criterion == "zero_error"
            metric = sign_error if zero_error else normalized_mse
            values = [metric(fits[p].pred[None], members[p].task()[1][None])[0] for p in part]
            value = float(np.mean(values))
            self.metric[(i, width)] = value
            verdicts.append(value == 0.0 if zero_error else value < self.mse_threshold)
        return verdicts


def min_width_table(
    tasks: Sequence[CapacityTask],
    probe_seeds: int,
    options: FitOptions,
    lo: int = 1,
    hi: int = 512,
    mse_threshold: float = 0.3,
    probes_per_round: int = 4,
    ladder_start: float = 0.5,
) -> pd.DataFrame:
    """Rows of ``min_width.csv``: the smallest successful width per task.

    All tasks search in lock-step; each round fits every probe width of every task times
    ``probe_seeds`` networks at once (:func:`fit_members`). The doubling ladder starts at
    ``ladder_start * m / d`` (clipped to ``[lo, hi]``), which only saves probes.
    ``min_width`` is empty and ``found`` False when even ``hi`` fails.
    """
    if probe_seeds < 1:
        raise ValueError(f"probe_seeds must be >= 1, got {probe_seeds!r}")
    oracle = CapacityOracle(tasks, probe_seeds, options, mse_threshold)
    searches = [
        MinWidthSearch(lo, hi, min(hi, max(lo, math.floor(ladder_start * t.m / t.d))))
        for t in tasks
    ]
    results = run_searches(searches, oracle, probes_per_round)
    rows = []
    for i, (task, result) in enumerate(zip(tasks, results, strict=True)):
        width = result.min_width
        rows.append(
            {
                "model": task.model,
                "m": task.m,
                "d": task.d,
                "out_dim": task.out_dim,
                "seed": task.seed,
                "criterion": task.criterion,
                "min_width": width if result.found else np.nan,
                "kd_over_m": width * task.d / task.m if result.found else np.nan,
                "found": result.found,
                "search_lo": lo,
                "search_hi": hi,
                "probe_seeds": probe_seeds,
                "probes": len(result.probes),
                "rounds": result.rounds,
                "monotone": result.monotone,
                "metric_at_min": oracle.metric.get((i, width), np.nan),
                "mse_threshold": mse_threshold if task.criterion == "mse" else np.nan,
                "steps": 0 if task.model == "galu_exact" else options.settings.steps,
            }
        )
    return pd.DataFrame(rows)


def underparam_experiment(
    section: Mapping[str, Any], common: Mapping[str, Any], device: str
) -> pd.DataFrame:
    """``underparam.csv`` for the config section ``memorization.underparam``."""
    seeds = run_seeds(common["seed"], section["seeds"])
    options = fit_options(section, common, device)
    return underparam_table(
        section["ms"], section["ds"], section["ks"], seeds, section["models"], options
    )


def min_width_experiment(
    criterion: str,
    section: Mapping[str, Any],
    common: Mapping[str, Any],
    device: str,
    part: int = 0,
) -> pd.DataFrame:
    """Rows of ``min_width.csv`` for ``memorization.min_width.<criterion>``, for the
    searches of job ``part`` of the section's ``parts`` (:func:`search_part`).

    ``mse``: one m and d, several label dimensions; ``zero_error``: several m and d,
    scalar sign labels.
    """
    if criterion not in WIDTH_CRITERIA:
        raise ValueError(f"criterion must be one of {WIDTH_CRITERIA}, got {criterion!r}")
    seeds = run_seeds(common["seed"], section["seeds"])
    if criterion == "mse":
        grid = ([section["m"]], [section["d"]], section["out_dims"])
    else:
        grid = (section["ms"], section["ds"], [1])
    tasks = capacity_tasks(section["models"], *grid, criterion, seeds)
    tasks = search_part(tasks, part, section.get("parts", 1))
    return min_width_table(
        tasks,
        section["probe_seeds"],
        fit_options(section, common, device),
        lo=section["width_min"],
        hi=section["width_max"],
        mse_threshold=section.get("mse_threshold", 0.3),
        probes_per_round=section["probes_per_round"],
        ladder_start=section["ladder_start"],
    )
