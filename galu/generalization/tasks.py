"""Synthetic tasks of the GaLU generalization study (Fiat et al., arXiv 1906.05032, sec. 5).

- Gaussian clusters: centres ``c ~ N(0, I_d)``, inputs ``x = c + spread * xi``; each
  centre has a label ``b ~ N(0, 1)``. Regression targets ``b + sigma_y * eps``;
  classification targets ``sign(b)``, flipped with probability ``sigma_y / 2``.
- Linearly separable data: ``x ~ N(0, I_d)``, ``y = sign(w* · x)`` for a random teacher.
- Parity: ``x`` uniform on ``{-1, +1}^d``, ``y`` the product of a random subset of ``s``
  coordinates.

Every draw comes from generators seeded by :func:`galu.seeding.derive_seed`, one stream
per purpose. For the clusters all draws are made before ``sigma_y`` is applied, so one
seed gives the same centres, inputs and noise directions for every ``sigma_y``: the
noise level is the only thing that changes along a ``sigma_y`` sweep.
Binary labels are ``+-1`` floats (the hinge loss's convention).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from galu.seeding import derive_seed

CLUSTER_TASKS = ("regression", "classification")


@dataclass(frozen=True)
class Task:
    """Training and test sets of one synthetic task (float32 inputs and labels)."""

    x_train: np.ndarray
    y_train: np.ndarray
    x_test: np.ndarray
    y_test: np.ndarray
    info: dict[str, object] = field(default_factory=dict)


def _rng(seed: int, stream: str) -> np.random.Generator:
    return np.random.default_rng(derive_seed(seed, stream))


def _positive_int(name: str, value: int, low: int = 1) -> None:
    if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < low:
        raise ValueError(f"{name} must be an integer >= {low}, got {value!r}")


def _sign(values: np.ndarray) -> np.ndarray:
    """``+1`` where ``values >= 0``, else ``-1`` (a tie, probability zero, counts as +1)."""
    return np.where(values >= 0, 1.0, -1.0)


def gaussian_clusters(
    task: str,
    sigma_y: float,
    seed: int,
    n_train: int = 1000,
    n_test: int = 9000,
    n_centres: int = 30,
    dim: int = 30,
    spread: float = 0.1,
) -> Task:
    """Gaussian-cluster regression or classification with label noise ``sigma_y``.

    Each point picks a centre uniformly. Regression: ``y = b_c + sigma_y eps``,
    ``eps ~ N(0, 1)``. Classification: ``y = sign(b_c)``, flipped with probability
    ``sigma_y / 2`` (so ``sigma_y`` in [0, 2]; at 1 every second label is a coin flip).
    Training and test points come from the same distribution, noise included.
    """
    if task not in CLUSTER_TASKS:
        raise ValueError(f"task must be one of {CLUSTER_TASKS}, got {task!r}")
    top = 2.0 if task == "classification" else float("inf")
    if not 0 <= sigma_y <= top:
        raise ValueError(f"sigma_y for {task} must be in [0, {top}], got {sigma_y!r}")
    for name, value in (("n_train", n_train), ("n_test", n_test), ("n_centres", n_centres)):
        _positive_int(name, value)
    _positive_int("dim", dim)
    if not spread >= 0:
        raise ValueError(f"spread must be >= 0, got {spread!r}")
    rng = _rng(seed, "clusters")
    centres = rng.standard_normal((n_centres, dim))
    labels = rng.standard_normal(n_centres)
    n = n_train + n_test
    which = rng.integers(0, n_centres, size=n)
    x = centres[which] + spread * rng.standard_normal((n, dim))
    # Both kinds of noise are drawn in full for every task, so each stream stays fixed.
    eps, flips = rng.standard_normal(n), rng.random(n)
    if task == "regression":
        y = labels[which] + sigma_y * eps
    else:
        y = _sign(labels[which]) * np.where(flips < sigma_y / 2, -1.0, 1.0)
    return _split(x, y, n_train, {"centre": which})


def _split(x: np.ndarray, y: np.ndarray, n_train: int, info: dict[str, object]) -> Task:
    x, y = x.astype(np.float32), y.astype(np.float32)
    return Task(x[:n_train], y[:n_train], x[n_train:], y[n_train:], info)


def linearly_separable(n_train: int, n_test: int, dim: int, seed: int) -> Task:
    """``x ~ N(0, I_dim)``, ``y = sign(w* · x)`` with a teacher ``w* ~ N(0, I_dim)``.

    Teacher, training and test inputs use separate streams: for one seed the test set
    is the same for every ``n_train`` and a smaller training set is a prefix of a
    larger one, so a sweep over ``n_train`` changes nothing else.
    """
    for name, value in (("n_train", n_train), ("n_test", n_test), ("dim", dim)):
        _positive_int(name, value)
    teacher = _rng(seed, "linear.teacher").standard_normal(dim)
    x_train = _rng(seed, "linear.train").standard_normal((n_train, dim))
    x_test = _rng(seed, "linear.test").standard_normal((n_test, dim))
    x = np.concatenate([x_train, x_test])
    return _split(x, _sign(x @ teacher), n_train, {"teacher": teacher})


def parity_labels(x: np.ndarray, subset: np.ndarray) -> np.ndarray:
    """Product of the ``subset`` columns of a ``{-1, +1}`` matrix ``x``."""
    return np.prod(np.asarray(x)[:, subset], axis=1)


def parity(n_train: int, n_test: int, dim: int, subset_size: int, seed: int) -> Task:
    """Uniform ``x`` in ``{-1, +1}^dim``; ``y`` = product of ``subset_size`` random bits.

    The subset (sorted) is in ``info["subset"]``. Inputs and subset use separate
    streams: for one seed the inputs are the same for every ``subset_size`` and the
    subsets are nested (the first ``s`` coordinates of one random order).
    """
    for name, value in (("n_train", n_train), ("n_test", n_test), ("dim", dim)):
        _positive_int(name, value)
    if not (isinstance(subset_size, int) and 1 <= subset_size <= dim):
        raise ValueError(f"subset_size must be an int in [1, dim={dim}], got {subset_size!r}")
    subset = np.sort(_rng(seed, "parity.subset").permutation(dim)[:subset_size])
    signs = np.array([-1.0, 1.0])
    x = _rng(seed, "parity.inputs").choice(signs, size=(n_train + n_test, dim))
    return _split(x, parity_labels(x, subset), n_train, {"subset": subset})
