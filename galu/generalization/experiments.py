"""The GaLU generalization experiments as tidy tables (Fiat et al., arXiv 1906.05032, sec. 5).

Four experiments, each a function returning one row per trained network:

- :func:`image_grid` (MNIST, Fashion-MNIST): every (model, width, seed, lr, gate
  scale), with training, validation and test error; :func:`image_accuracy` then keeps
  the validation-selected hyper-parameters per (model, width) and adds the
  test-selected ones (:mod:`galu.generalization.selection`).
- :func:`clusters_table`: Gaussian clusters, regression (squared loss, plus the exact
  GaLU least-squares fit of :mod:`galu.ensembles.least_squares`) and classification
  (hinge loss), against the label noise ``sigma_y``.
- :func:`linear_table`: linearly separable data against the training-set size.
- :func:`parity_table`: parity of ``s`` random bits.

:func:`~galu.generalization.accuracy.accuracy_table` stacks them into
``results/generalization/accuracy.csv``
(docs/design.md columns first). ``width`` is 0 for the linear baseline (no hidden layer).
Member seeds are ``seed, seed + 1, ...``; data seeds derive from ``seed`` alone.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
import torch

from galu.ensembles.least_squares import load_exact, solve_galu
from galu.ensembles.networks import GaLUNet
from galu.generalization.features import ImageFeatures, image_features
from galu.generalization.layout import pads_widths
from galu.generalization.models import MODELS, SIGMOID, MemberSpec
from galu.generalization.selection import selected_table
from galu.generalization.tasks import (
    CLUSTER_TASKS,
    Task,
    gaussian_clusters,
    linearly_separable,
    parity,
)
from galu.generalization.training import (
    Fit,
    error_rates,
    scores,
    train_members,
    training_scores,
)
from galu.seeding import run_seeds

CLASSES = 10
# Models of the synthetic tasks: one hidden layer, no gate scale to select, so no
# sigmoid-gated model; the exact least-squares GaLU fit exists for the squared loss only.
SYNTHETIC_MODELS = ("relu", "galu", "linear", "galu_exact")
CLUSTER_MODELS = ("relu", "galu", "galu_exact")
BINARY_MODELS = ("relu", "galu", "linear")


def _check_choice(name: str, values: Sequence[str], allowed: Sequence[str]) -> None:
    bad = [v for v in values if v not in allowed]
    if not values or bad:
        raise ValueError(
            f"{name} must be a non-empty list from {tuple(allowed)}, got {list(values)!r}"
        )


def _check_positive(name: str, values: Sequence[float]) -> None:
    if not values or not all(isinstance(v, int | float) and v > 0 for v in values):
        raise ValueError(f"{name} must be a non-empty list of numbers > 0, got {list(values)!r}")


def _check_count(name: str, value: int, low: int = 1) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < low:
        raise ValueError(f"{name} must be an integer >= {low}, got {value!r}")


def _batch(batch_size: int) -> int | None:
    """Config convention: 0 means full-batch training."""
    return None if batch_size == 0 else batch_size


@dataclass(frozen=True)
class ImageSettings:
    """MNIST/Fashion-MNIST grid (sec. 5): T hidden layers, cross-entropy, Adam.

    ``gate_scales`` are the paper's ``a`` (gate ``sigmoid(x·u / (a d))`` of ``galu0``;
    see :mod:`galu.generalization.models`), swept for the sigmoid-gated models only.
    ``train_subset`` 0 keeps the whole training set; ``pad_widths`` (true, false or
    ``auto``: padded on a GPU only) see :func:`galu.generalization.layout.pads_widths`.
    """

    models: Sequence[str]
    widths: Sequence[int]
    depth: int
    seeds: int
    lrs: Sequence[float]
    gate_scales: Sequence[float]
    steps: int
    batch_size: int
    n_components: int = 64
    validation_fraction: float = 0.1
    train_subset: int = 0
    pad_widths: bool | str = "auto"

    def __post_init__(self) -> None:
        _check_choice("models", self.models, MODELS)
        _check_count("depth", self.depth)
        _check_count("seeds", self.seeds)
        _check_count("steps", self.steps, 0)
        _check_count("batch_size", self.batch_size, 0)
        _check_count("n_components", self.n_components)
        _check_count("train_subset", self.train_subset, 0)
        if not self.widths or not all(isinstance(w, int) and w >= 1 for w in self.widths):
            raise ValueError(f"widths must be a non-empty list of ints >= 1, got {self.widths!r}")
        _check_positive("lrs", self.lrs)
        pads_widths(self.pad_widths, "cpu")  # a bad value fails here, before any training
        if any(m in SIGMOID for m in self.models):
            _check_positive("gate_scales", self.gate_scales)

    def members(self, seed: int) -> list[MemberSpec]:
        """Every (model, width, seed, lr, gate scale) of the grid."""
        out = []
        for model in self.models:
            widths = [0] if model == "linear" else self.widths
            scales = self.gate_scales if model in SIGMOID else [None]
            for width in widths:
                for s in run_seeds(seed, self.seeds):
                    for lr in self.lrs:
                        out.extend(MemberSpec(model, width, s, lr, a) for a in scales)
        return out


def member_frame(members: Sequence[MemberSpec], order: np.ndarray) -> pd.DataFrame:
    """model, width, seed, lr, gate_scale of each stack member (in the stack's order)."""
    specs = [members[i] for i in order]
    return pd.DataFrame(
        {
            "model": [m.model for m in specs],
            "width": [m.width for m in specs],
            "seed": [m.seed for m in specs],
            "lr": [m.lr for m in specs],
            "gate_scale": [np.nan if m.gate_scale is None else m.gate_scale for m in specs],
        }
    )


def _tensors(*arrays: np.ndarray) -> list[torch.Tensor]:
    return [torch.from_numpy(np.ascontiguousarray(a)) for a in arrays]


def image_grid(
    dataset: str,
    data: ImageFeatures,
    settings: ImageSettings,
    seed: int,
    device: str = "cpu",
) -> pd.DataFrame:
    """Train the whole grid on ``data`` as one ensemble; one row per member."""
    members = settings.members(seed)
    x_fit, y_fit, x_val, y_val, x_test, y_test = _tensors(
        data.x_fit, data.y_fit, data.x_val, data.y_val, data.x_test, data.y_test
    )
    fit = train_members(
        members,
        x_fit,
        y_fit,
        "cross_entropy",
        settings.steps,
        _batch(settings.batch_size),
        settings.depth,
        CLASSES,
        pads_widths(settings.pad_widths, device),
        device,
    )
    table = member_frame(members, fit.order)
    table.insert(0, "dataset", dataset)
    table["train_loss"], table["train_error"] = training_scores(fit, x_fit, y_fit)
    _, table["val_error"] = scores(fit, "cross_entropy", x_val, y_val)
    table["test_loss"], table["test_error"] = scores(fit, "cross_entropy", x_test, y_test)
    table["n_train"], table["n_test"] = len(y_fit), len(y_test)
    table["diverged"] = fit.result.diverged
    return table


def image_experiment(
    dataset: str,
    arrays: dict[str, np.ndarray],
    settings: ImageSettings,
    seed: int,
    device: str = "cpu",
) -> pd.DataFrame:
    """Features (:func:`image_features`, split seeded by ``seed``) then :func:`image_grid`."""
    data = image_features(
        arrays,
        settings.n_components,
        settings.validation_fraction,
        seed,
        settings.train_subset or None,
    )
    return image_grid(dataset, data, settings, seed, device)


def image_accuracy(grid: pd.DataFrame) -> pd.DataFrame:
    """Validation-selected rows (plus test-selected columns) of an :func:`image_grid`."""
    return selected_table(grid)


@dataclass(frozen=True)
class SyntheticSettings:
    """Training of the synthetic tasks: one hidden layer of ``width``, Adam, fixed lr."""

    models: Sequence[str]
    width: int
    seeds: int
    lr: float
    steps: int
    batch_size: int

    def __post_init__(self) -> None:
        _check_choice("models", self.models, SYNTHETIC_MODELS)
        _check_count("width", self.width)
        _check_count("seeds", self.seeds)
        _check_count("steps", self.steps, 0)
        _check_count("batch_size", self.batch_size, 0)
        _check_positive("lr", [self.lr])

    def trained(self, task: str, allowed: Sequence[str]) -> list[str]:
        """The gradient-trained models among ``models``; each must be one ``task`` allows."""
        _check_choice(f"models of {task}", self.models, allowed)
        return [m for m in self.models if m != "galu_exact"]


def _stack_tasks(tasks: Sequence[Task]) -> list[torch.Tensor]:
    """Per-member ``(E, n, d)`` inputs and ``(E, n)`` labels, train then test."""
    names = ("x_train", "y_train", "x_test", "y_test")
    return _tensors(*(np.stack([getattr(t, name) for t in tasks]) for name in names))


def _synthetic_rows(
    members: Sequence[MemberSpec],
    tasks: Sequence[Task],
    loss: str,
    settings: SyntheticSettings,
    device: str,
) -> tuple[pd.DataFrame, Fit]:
    """Train ``members[i]`` on ``tasks[i]`` (one ensemble); rows in the stack's order."""
    x_train, y_train, x_test, y_test = _stack_tasks(tasks)
    if loss == "mse":  # squared error compares (E, n, 1) outputs with (E, n, 1) targets
        y_train, y_test = y_train[..., None], y_test[..., None]
    batch = _batch(settings.batch_size)
    # One hidden layer, one output; unpadded blocks (all members share one width anyway).
    fit = train_members(members, x_train, y_train, loss, settings.steps, batch, 1, 1, False, device)
    order = torch.from_numpy(fit.order)
    table = member_frame(members, fit.order)
    table["train_loss"], table["train_error"] = training_scores(fit, x_train, y_train[order])
    table["test_loss"], table["test_error"] = scores(fit, loss, x_test[order], y_test[order])
    table["n_train"], table["n_test"] = y_train.shape[1], y_test.shape[1]
    table["diverged"] = fit.result.diverged
    return table, fit


def _fixed_selection(frames: Sequence[pd.DataFrame], dataset: str) -> pd.DataFrame:
    """One synthetic dataset's rows. These tasks train one setting, so the "selected"
    hyper-parameters and test error are the trained ones under both selections."""
    table = pd.concat(frames, ignore_index=True)
    table["selection"] = "fixed"
    for column in ("lr", "gate_scale", "test_error"):
        table[f"{column}_test_selected"] = table[column]
    table.insert(0, "dataset", dataset)
    return table


@dataclass(frozen=True)
class ClusterSettings:
    """Gaussian clusters (sec. 5): sizes, tasks and label-noise grid."""

    tasks: Sequence[str]
    sigma_ys: Sequence[float]
    n_train: int = 1000
    n_test: int = 9000
    n_centres: int = 30
    dim: int = 30
    spread: float = 0.1

    def __post_init__(self) -> None:
        _check_choice("tasks", self.tasks, CLUSTER_TASKS)
        if not self.sigma_ys or not all(0 <= s <= 2 for s in self.sigma_ys):
            raise ValueError(f"sigma_ys must be a non-empty list in [0, 2], got {self.sigma_ys!r}")

    def task(self, task: str, sigma_y: float, seed: int) -> Task:
        """The data of one (task, sigma_y, seed) at these sizes."""
        sizes = (self.n_train, self.n_test, self.n_centres, self.dim, self.spread)
        return gaussian_clusters(task, sigma_y, seed, *sizes)


def _exact_galu_rows(
    tasks: Sequence[Task], seeds: Sequence[int], width: int, device: str
) -> pd.DataFrame:
    """The least-squares GaLU optimum (:func:`galu.ensembles.least_squares.solve_galu`) for
    each task."""
    x_train, y_train, x_test, y_test = (t.double() for t in _stack_tasks(tasks))
    net = GaLUNet(x_train.shape[-1], [width] * len(tasks), list(seeds), bias=True)
    net = net.double().to(device)
    # SVD, not the default pivoted-QR driver: torch's gelsy misjudged the rank of these
    # wide design matrices (35 of 40 for a matrix of condition number 52) and left a
    # residual where the SVD interpolates.
    load_exact(net, solve_galu(net, x_train, y_train[..., None], driver="svd"))
    rows = {"model": "galu_exact", "width": width, "seed": list(seeds), "lr": np.nan}
    table = pd.DataFrame({**rows, "gate_scale": np.nan})
    with torch.no_grad():
        for part, x, y in (("train", x_train, y_train), ("test", x_test, y_test)):
            out = net(x.to(device)).cpu()
            table[f"{part}_loss"] = (out[..., 0] - y).square().mean(dim=1).numpy()
            table[f"{part}_error"] = error_rates(out, y)
    table["n_train"], table["n_test"] = x_train.shape[1], x_test.shape[1]
    table["diverged"] = False
    return table


def clusters_table(
    clusters: ClusterSettings, settings: SyntheticSettings, seed: int, device: str = "cpu"
) -> pd.DataFrame:
    """Test loss and error against ``sigma_y``; regression adds the exact GaLU fit."""
    seeds = run_seeds(seed, settings.seeds)
    frames = []
    for task in clusters.tasks:
        grid = [(s, sd) for s in clusters.sigma_ys for sd in seeds]
        data = [clusters.task(task, s, sd) for s, sd in grid]
        models = settings.trained("clusters", CLUSTER_MODELS)
        members = [MemberSpec(m, settings.width, sd, settings.lr) for _, sd in grid for m in models]
        tasks = [d for d in data for _ in models]
        sigmas = [s for s, _ in grid for _ in models]
        loss = "mse" if task == "regression" else "hinge"
        table, fit = _synthetic_rows(members, tasks, loss, settings, device)
        table["sigma_y"] = np.asarray(sigmas)[fit.order]
        if task == "regression" and "galu_exact" in settings.models:
            exact = _exact_galu_rows(data, [sd for _, sd in grid], settings.width, device)
            exact["sigma_y"] = [s for s, _ in grid]
            table = pd.concat([table, exact], ignore_index=True)
        table["task"] = task
        frames.append(table)
    return _fixed_selection(frames, "clusters")


@dataclass(frozen=True)
class LinearSettings:
    """Linearly separable data (sec. 5): training-set sizes, test size, dimension."""

    n_trains: Sequence[int]
    n_test: int = 10000
    dim: int = 30

    def __post_init__(self) -> None:
        if not self.n_trains or not all(isinstance(n, int) and n >= 1 for n in self.n_trains):
            raise ValueError(
                f"n_trains must be a non-empty list of ints >= 1, got {self.n_trains!r}"
            )
        _check_count("n_test", self.n_test)
        _check_count("dim", self.dim)


def linear_table(
    linear: LinearSettings, settings: SyntheticSettings, seed: int, device: str = "cpu"
) -> pd.DataFrame:
    """Test error against ``n_train`` (one ensemble per size: sizes differ in shape)."""
    seeds = run_seeds(seed, settings.seeds)
    models = settings.trained("linear", BINARY_MODELS)
    frames = []
    for n_train in linear.n_trains:
        data = {sd: linearly_separable(n_train, linear.n_test, linear.dim, sd) for sd in seeds}
        members = [
            MemberSpec(m, 0 if m == "linear" else settings.width, sd, settings.lr)
            for sd in seeds
            for m in models
        ]
        tasks = [data[m.seed] for m in members]
        frames.append(_synthetic_rows(members, tasks, "hinge", settings, device)[0])
    return _fixed_selection(frames, "linear")


@dataclass(frozen=True)
class ParitySettings:
    """Parity (sec. 5): subset sizes ``s``, dimension, sample sizes."""

    subset_sizes: Sequence[int]
    n_train: int = 10000
    n_test: int = 10000
    dim: int = 30

    def __post_init__(self) -> None:
        _check_count("dim", self.dim)
        _check_count("n_train", self.n_train)
        _check_count("n_test", self.n_test)
        sizes = self.subset_sizes
        if not sizes or not all(isinstance(s, int) and 1 <= s <= self.dim for s in sizes):
            raise ValueError(f"subset_sizes must be ints in [1, dim={self.dim}], got {sizes!r}")


def parity_table(
    parity_settings: ParitySettings, settings: SyntheticSettings, seed: int, device: str = "cpu"
) -> pd.DataFrame:
    """Test error against the subset size ``s`` (all sizes in one ensemble)."""
    seeds = run_seeds(seed, settings.seeds)
    models = settings.trained("parity", BINARY_MODELS)
    p = parity_settings
    grid = [(s, sd) for s in p.subset_sizes for sd in seeds]
    data = {g: parity(p.n_train, p.n_test, p.dim, g[0], g[1]) for g in grid}
    members, tasks, sizes = [], [], []
    for s, sd in grid:
        for m in models:
            members.append(MemberSpec(m, 0 if m == "linear" else settings.width, sd, settings.lr))
            tasks.append(data[(s, sd)])
            sizes.append(s)
    table, fit = _synthetic_rows(members, tasks, "hinge", settings, device)
    table["subset_size"] = np.asarray(sizes)[fit.order]
    return _fixed_selection([table], "parity")


TRAINING_KEYS = ("models", "width", "seeds", "lr", "steps", "batch_size")


def synthetic_experiment(
    name: str, section: Mapping[str, Any], seed: int, device: str = "cpu"
) -> pd.DataFrame:
    """Run ``clusters``, ``linear`` or ``parity`` from its config section.

    ``section`` holds the :class:`SyntheticSettings` keys (``TRAINING_KEYS``) and the
    task's own (:class:`ClusterSettings`, :class:`LinearSettings`, :class:`ParitySettings`).
    """
    tables = {
        "clusters": (ClusterSettings, clusters_table),
        "linear": (LinearSettings, linear_table),
        "parity": (ParitySettings, parity_table),
    }
    if name not in tables:
        raise ValueError(f"synthetic dataset must be one of {tuple(tables)}, got {name!r}")
    missing = [k for k in TRAINING_KEYS if k not in section]
    if missing:
        raise ValueError(f"the {name} settings lack {missing}")
    training = SyntheticSettings(**{k: section[k] for k in TRAINING_KEYS})
    task_settings, table = tables[name]
    task = task_settings(**{k: v for k, v in section.items() if k not in TRAINING_KEYS})
    return table(task, training, seed, device)
