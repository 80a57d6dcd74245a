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

Models: ``relu`` and ``galu`` train through :func:`galu.ensemble.train_ensemble` on the
squared loss (no bias); ``galu_exact`` is the least-squares optimum of
:func:`galu.exact.solve_galu` with the same gates as ``galu`` of the same seed.

Seeds: member data, initialization, gates and minibatch order all derive from one seed,
and the same seed gives the same data for every width and model, so widths and models
are compared on identical problems. The normalized loss divides by the labels' mean
square, their variance about the known mean 0 (the models have no bias).
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
import torch

from galu.ensemble import (
    TrainSettings,
    padded_mse_loss,
    plan_ensembles,
    predict,
    train_ensemble,
)
from galu.exact import solve_galu
from galu.models import GaLUNet, make_model
from galu.search import MinWidthSearch, run_searches
from galu.seeding import derive_seed

MODELS = ("relu", "galu", "galu_exact")
CRITERIA = ("mse", "zero_error")
LABELS = {"mse": "gaussian", "zero_error": "sign"}


def random_task(m: int, d: int, out_dim: int, seed: int, labels: str) -> tuple[np.ndarray, ...]:
    """Inputs ``x ~ N(0, I_d)`` ``(m, d)`` and labels ``(m, out_dim)`` independent of ``x``.

    ``labels="gaussian"``: ``y ~ N(0, 1)``; ``labels="sign"``: uniform ``y`` in {-1, +1}.
    """
    if labels not in ("gaussian", "sign"):
        raise ValueError(f"labels must be 'gaussian' or 'sign', got {labels!r}")
    rng = np.random.default_rng(derive_seed(seed, f"data-{m}-{d}-{out_dim}"))
    x = rng.standard_normal((m, d))
    if labels == "gaussian":
        return x, rng.standard_normal((m, out_dim))
    return x, rng.choice(np.array([-1.0, 1.0]), size=(m, out_dim))


def normalized_mse(pred: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Per-member training MSE over the labels' mean square, ``(E,)``."""
    return np.square(pred - y).mean(axis=(1, 2)) / np.square(y).mean(axis=(1, 2))


def sign_error(pred: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Per-member fraction of labels whose sign the prediction gets wrong.

    0 counts as wrong, and so does NaN: a diverged network has not memorized anything
    (written as "not right" because ``NaN * y <= 0`` is False).
    """
    return (~(pred * y > 0)).mean(axis=(1, 2))


@dataclass(frozen=True)
class Member:
    """One network to fit: ``model`` of width ``width`` on the seeded task (m, d, out_dim).

    The seed fixes the task's data and the network's initialization, gates and batches.
    """

    model: str
    m: int
    d: int
    out_dim: int
    width: int
    seed: int
    labels: str = "gaussian"

    def __post_init__(self) -> None:
        if self.model not in MODELS:
            raise ValueError(f"model must be one of {MODELS}, got {self.model!r}")

    def task(self) -> tuple[np.ndarray, np.ndarray]:
        return random_task(self.m, self.d, self.out_dim, self.seed, self.labels)


@dataclass
class MemberFit:
    """Training predictions ``(m, out_dim)`` (NaN if diverged), divergence step (-1: none)
    and the rank of the exact solver's features (-1 for trained models)."""

    pred: np.ndarray
    diverged_step: int
    rank: int


@dataclass(frozen=True)
class FitOptions:
    """How members are fitted: training settings, device, dtype and ensemble planning.

    ``overhead`` is the fixed cost of one training step in units of one member's work
    ``width * (d + out_dim)`` (see :func:`galu.ensemble.plan_ensembles`): large values
    pack more members into one padded ensemble, small ones pad less.
    """

    settings: TrainSettings
    device: str = "cpu"
    dtype: torch.dtype = torch.float32
    overhead: float = 10000.0


def _padded(arrays: Sequence[np.ndarray], rows: int, cols: int) -> np.ndarray:
    out = np.zeros((len(arrays), rows, cols))
    for e, a in enumerate(arrays):
        out[e, : a.shape[0], : a.shape[1]] = a
    return out


def _train_bucket(
    members: Sequence[Member], data: Sequence[tuple[np.ndarray, ...]], options: FitOptions
) -> list[MemberFit]:
    """Train members of one kind as one ensemble padded in width, m, d and out_dim."""
    rows, d, out = (max(getattr(m, a) for m in members) for a in ("m", "d", "out_dim"))
    x = torch.from_numpy(_padded([p[0] for p in data], rows, d)).to(options.dtype)
    y = torch.from_numpy(_padded([p[1] for p in data], rows, out)).to(options.dtype)
    seeds, out_dims = [m.seed for m in members], [m.out_dim for m in members]
    net = make_model(
        members[0].model,
        d,
        [m.width for m in members],
        seeds,
        out,
        dtype=options.dtype,
        device=options.device,
        in_dims=[m.d for m in members],
        out_dims=out_dims,
    )
    result = train_ensemble(
        net,
        padded_mse_loss(out_dims),
        x,
        y,
        seeds,
        options.settings,
        options.device,
        n_samples=[m.m for m in members],
    )
    pred = predict(net, x.to(options.device)).double().cpu().numpy()
    pred[result.diverged] = np.nan
    return [
        MemberFit(pred[e, : m.m, : m.out_dim], int(result.diverged_step[e]), -1)
        for e, m in enumerate(members)
    ]


def _solve_bucket(
    members: Sequence[Member], data: Sequence[tuple[np.ndarray, ...]], options: FitOptions
) -> list[MemberFit]:
    """Exact least-squares GaLU fits of members sharing (m, d, out_dim), widths padded."""
    first = members[0]
    net = GaLUNet(
        first.d,
        [m.width for m in members],
        [m.seed for m in members],
        first.out_dim,
        dtype=torch.float64,
        device=options.device,
    )
    x = torch.from_numpy(np.stack([p[0] for p in data]))
    y = torch.from_numpy(np.stack([p[1] for p in data]))
    solution = solve_galu(net, x, y)
    fitted, rank = solution.fitted.cpu().numpy(), solution.rank.cpu().numpy()
    return [MemberFit(fitted[e], -1, int(rank[e])) for e in range(len(members))]


def _buckets(members: Sequence[Member], options: FitOptions) -> list[list[int]]:
    """Index groups that are fitted together: one solve per shape for the exact model,
    planned padded ensembles per trained model (per m as well when the batch is full)."""
    batch = options.settings.batch_size
    groups: dict[tuple, list[int]] = defaultdict(list)
    for i, m in enumerate(members):
        if m.model == "galu_exact":
            groups[(m.model, m.m, m.d, m.out_dim)].append(i)
        else:
            full_batch = batch is None or batch >= m.m
            groups[(m.model, m.m if full_batch else 0)].append(i)
    buckets = []
    for key, group in groups.items():
        if key[0] == "galu_exact":
            buckets.append(group)
            continue
        sizes = [(members[i].width, members[i].d + members[i].out_dim) for i in group]
        buckets += [[group[j] for j in plan] for plan in plan_ensembles(sizes, options.overhead)]
    return buckets


def fit_members(members: Sequence[Member], options: FitOptions) -> list[MemberFit]:
    """Fit every member; trained models go through as few padded ensembles as pays."""
    tasks: dict[tuple, tuple[np.ndarray, ...]] = {}
    for m in members:
        key = (m.m, m.d, m.out_dim, m.seed, m.labels)
        if key not in tasks:
            tasks[key] = m.task()
    fits: list[MemberFit | None] = [None] * len(members)
    for bucket in _buckets(members, options):
        chosen = [members[i] for i in bucket]
        data = [tasks[(m.m, m.d, m.out_dim, m.seed, m.labels)] for m in chosen]
        fit = _solve_bucket if chosen[0].model == "galu_exact" else _train_bucket
        for i, result in zip(bucket, fit(chosen, data, options), strict=True):
            fits[i] = result
    return fits


def underparam_points(ms: Sequence[int], ds: Sequence[int], ks: Sequence[int]) -> list[tuple]:
    """The ``(m, d, k)`` grid restricted to the under-parameterized side ``kd <= m``."""
    return [(m, d, k) for m in ms for d in ds for k in ks if k * d <= m]


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
        if self.model not in MODELS:
            raise ValueError(f"model must be one of {MODELS}, got {self.model!r}")
        if self.criterion not in CRITERIA:
            raise ValueError(f"criterion must be one of {CRITERIA}, got {self.criterion!r}")
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
        return Member(t.model, t.m, t.d, t.out_dim, width, t.probe_seed(j), LABELS[t.criterion])

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


DTYPES = {"float32": torch.float32, "float64": torch.float64}


def fit_options(section: Mapping[str, Any], common: Mapping[str, Any], device: str) -> FitOptions:
    """Fit options from a config section (optimizer keys) and the stage-wide keys."""
    if common["dtype"] not in DTYPES:
        raise ValueError(f"dtype must be one of {tuple(DTYPES)}, got {common['dtype']!r}")
    settings = TrainSettings(
        steps=section["steps"],
        lr=section["lr"],
        batch_size=section["batch_size"] or None,
        optimizer=section["optimizer"],
    )
    return FitOptions(settings, device, DTYPES[common["dtype"]], common["ensemble_overhead"])


def underparam_experiment(
    section: Mapping[str, Any], common: Mapping[str, Any], device: str
) -> pd.DataFrame:
    """``underparam.csv`` for the config section ``memorization.underparam``."""
    seeds = [common["seed"] + i for i in range(section["seeds"])]
    options = fit_options(section, common, device)
    return underparam_table(
        section["ms"], section["ds"], section["ks"], seeds, section["models"], options
    )


def search_part(tasks: Sequence[CapacityTask], part: int, parts: int) -> list[CapacityTask]:
    """The searches of job ``part`` of ``parts``: every ``parts``-th task of the grid from
    ``part`` on, so that each job gets small and large m alike."""
    if not 0 <= part < parts:
        raise ValueError(f"part must be in [0, {parts}), got {part}")
    return list(tasks[part::parts])


def stack_parts(tables: Sequence[pd.DataFrame]) -> pd.DataFrame:
    """The tables of :func:`search_part`'s parts ``0 .. parts-1`` (one row per task, in the
    part's order) as one table in the grid's order: the table one job would have written."""
    # row r of part p is task p + r * parts of the grid
    keyed = [t.assign(_row=range(len(t)), _part=p) for p, t in enumerate(tables)]
    stacked = pd.concat(keyed, ignore_index=True).sort_values(["_row", "_part"], kind="stable")
    return stacked.drop(columns=["_row", "_part"]).reset_index(drop=True)


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
    if criterion not in CRITERIA:
        raise ValueError(f"criterion must be one of {CRITERIA}, got {criterion!r}")
    seeds = [common["seed"] + i for i in range(section["seeds"])]
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
