"""Fitting many small memorization networks at once: random tasks, members, ensembles.

Fiat, Malach & Shalev-Shwartz, *Decoupling Gating from Linearity* (arXiv 1906.05032),
section 3 fit one-hidden-layer networks of many widths to random data. Here every such
network is a :class:`Member`: the model (``relu``, ``galu`` or ``galu_exact``), the task
``(m, d, out_dim)``, the width and one seed. :func:`fit_members` fits a list of them:
``relu`` and ``galu`` train through :func:`galu.ensembles.training.train_ensemble` on the
squared loss (no bias), grouped into as few padded ensembles as pays; ``galu_exact`` is
the least-squares optimum of :func:`galu.ensembles.least_squares.solve_galu` with the same
gates as ``galu`` of the same seed (its fit and rank, :func:`~galu.ensembles.least_squares.
exact_fits`, which skips the solve where full row rank is certified).

Seeds: member data, initialization, gates and minibatch order all derive from one seed,
and the same seed gives the same data for every width and model, so widths and models
are compared on identical problems. The normalized loss divides by the labels' mean
square, their variance about the known mean 0 (the models have no bias).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from galu.ensembles.least_squares import exact_fits
from galu.ensembles.networks import GaLUNet, make_model
from galu.ensembles.side_by_side import map_side_by_side
from galu.ensembles.training import (
    EnsembleSettings,
    padded_mse_loss,
    plan_ensembles,
    predict,
    train_ensemble,
)
from galu.seeding import derive_seed

# The models of the memorization experiments: trained ReLU and GaLU networks and the
# exact least-squares GaLU optimum.
MEMORIZATION_MODELS = ("relu", "galu", "galu_exact")


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
        if self.model not in MEMORIZATION_MODELS:
            raise ValueError(f"model must be one of {MEMORIZATION_MODELS}, got {self.model!r}")

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
    ``width * (d + out_dim)`` (see :func:`galu.ensembles.training.plan_ensembles`): large values
    pack more members into one padded ensemble, small ones pad less.
    """

    settings: EnsembleSettings
    device: str = "cpu"
    dtype: torch.dtype = torch.float32
    overhead: float = 20000.0


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
    solution = exact_fits(net, x, y)
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


def _bucket_cost(members: Sequence[Member]) -> float:
    """A padded ensemble's work per step, for ordering (members x width x (d + out_dim))."""
    return len(members) * max(m.width for m in members) * max(m.d + m.out_dim for m in members)


def fit_members(members: Sequence[Member], options: FitOptions) -> list[MemberFit]:
    """Fit every member; trained models go through as few padded ensembles as pays. With
    several torch threads on a CPU the ensembles are fitted side by side, one thread each
    (:func:`galu.ensembles.side_by_side.map_side_by_side`): the same numbers as on one."""
    tasks: dict[tuple, tuple[np.ndarray, ...]] = {}
    for m in members:
        key = (m.m, m.d, m.out_dim, m.seed, m.labels)
        if key not in tasks:
            tasks[key] = m.task()

    def fit(chosen: list[Member]) -> list[MemberFit]:
        data = [tasks[(m.m, m.d, m.out_dim, m.seed, m.labels)] for m in chosen]
        solve = _solve_bucket if chosen[0].model == "galu_exact" else _train_bucket
        return solve(chosen, data, options)

    buckets = _buckets(members, options)
    chosen = [[members[i] for i in bucket] for bucket in buckets]
    fitted = map_side_by_side(fit, chosen, _bucket_cost, options.device)
    fits: list[MemberFit | None] = [None] * len(members)
    for bucket, results in zip(buckets, fitted, strict=True):
        for i, result in zip(bucket, results, strict=True):
            fits[i] = result
    return fits


DTYPES = {"float32": torch.float32, "float64": torch.float64}


def fit_options(section: Mapping[str, Any], common: Mapping[str, Any], device: str) -> FitOptions:
    """Fit options from a config section (optimizer keys) and the stage-wide keys."""
    if common["dtype"] not in DTYPES:
        raise ValueError(f"dtype must be one of {tuple(DTYPES)}, got {common['dtype']!r}")
    settings = EnsembleSettings(
        steps=section["steps"],
        lr=section["lr"],
        batch_size=section["batch_size"] or None,
        optimizer=section["optimizer"],
    )
    return FitOptions(settings, device, DTYPES[common["dtype"]], common["ensemble_overhead"])
