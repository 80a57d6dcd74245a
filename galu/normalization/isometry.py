"""Static isometry: the spectrum of ``(1/n) F F^T`` against Marchenko–Pastur.

Richemond & Guo (arXiv 1905.01369, Sec. 3) motivate static normalization with
Pennington & Worah's nonlinear random-matrix result (NeurIPS 2017): for
``F = f(W X / sqrt(n))`` with W, X square Gaussian matrices (unit-variance entries),
the eigenvalue law of ``M = (1/n) F F^T`` depends on f only through
``eta = E f(z)^2`` and ``zeta = (E f'(z))^2`` (for E f(z) = 0). When ``zeta = 0``,
which is exactly what the normalization's ``alpha`` subtraction enforces, the law
is Marchenko–Pastur with variance ``eta`` (= 1 after normalization). A raw
activation keeps its mean (a rank-one spike of size ~ n beta^2) and its linear
part (a distorted bulk), so its spectrum leaves MP.

The distance used is Kolmogorov–Smirnov: ``sup_x |F_emp(x) - F_MP(x)|``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

import numpy as np
import pandas as pd

from galu.normalization.quadrature import gaussian_expectation

VARIANTS = ("raw", "normalized")


def _check_variance(variance: float) -> None:
    if not variance > 0:
        raise ValueError(f"MP variance must be > 0, got {variance!r}")


def mp_density(x: np.ndarray, variance: float = 1.0) -> np.ndarray:
    """Marchenko–Pastur density at ratio 1: ``sqrt(x (4 s - x)) / (2 pi s x)`` on (0, 4 s].

    ``s`` is the entries' variance; the law's mean is ``s`` and its support [0, 4 s].
    """
    _check_variance(variance)
    x = np.asarray(x, dtype=float)
    inside = (x > 0) & (x < 4.0 * variance)
    safe = np.where(inside, x, variance)  # keeps sqrt and the division finite outside
    dens = np.sqrt(safe * (4.0 * variance - safe)) / (2.0 * np.pi * variance * safe)
    return np.where(inside, dens, 0.0)


def mp_cdf(x: np.ndarray, variance: float = 1.0) -> np.ndarray:
    """Marchenko–Pastur CDF at ratio 1, in closed form.

    With ``x = 4 s sin^2(theta)`` the density becomes ``(4/pi) cos^2(theta) d theta``,
    so ``F(x) = (2/pi) (theta + sin(theta) cos(theta))``.
    """
    _check_variance(variance)
    u = np.clip(np.asarray(x, dtype=float) / (4.0 * variance), 0.0, 1.0)
    theta = np.arcsin(np.sqrt(u))
    return (2.0 / np.pi) * (theta + np.sin(theta) * np.cos(theta))


def ks_distance_to_mp(eigenvalues: np.ndarray, variance: float = 1.0) -> float:
    """Kolmogorov–Smirnov distance between the eigenvalues' empirical CDF and MP's.

    The sup is attained at a jump of the empirical CDF, so checking both sides of
    every jump is exact.
    """
    lam = np.sort(np.asarray(eigenvalues, dtype=float).ravel())
    if lam.size == 0:
        raise ValueError("eigenvalues must be non-empty")
    cdf = mp_cdf(lam, variance)
    k = np.arange(1, lam.size + 1)
    return float(max(np.max(k / lam.size - cdf), np.max(cdf - (k - 1) / lam.size)))


def gaussian_preactivations(n: int, rng: np.random.Generator) -> np.ndarray:
    """``Z = W X / sqrt(n)`` for n x n W, X with iid N(0, 1) entries (each Z_ij ~ N(0, 1))."""
    if not isinstance(n, int | np.integer) or n < 2:
        raise ValueError(f"matrix size n must be an integer >= 2, got {n!r}")
    w = rng.standard_normal((n, n))
    x = rng.standard_normal((n, n))
    return (w @ x) / np.sqrt(n)


def gram_eigenvalues(features: np.ndarray) -> np.ndarray:
    """Eigenvalues of ``(1/m) F F^T`` for F of shape (n, m), ascending."""
    f = np.asarray(features, dtype=float)
    return np.linalg.eigvalsh(f @ f.T / f.shape[1])


def activation_name(base: str, variant: str) -> str:
    """The :mod:`galu.normalization.modules` name of ``base`` in ``variant``."""
    # Imported here, not at the top (as in isometry_tables): the figures use this module's
    # Marchenko-Pastur density and start without torch, which modules brings.
    from galu.normalization.modules import NORMALIZED_PREFIX

    if variant not in VARIANTS:
        raise ValueError(f"variant must be one of {VARIANTS}, got {variant!r}")
    return base if variant == "raw" else NORMALIZED_PREFIX + base


def second_moment(fn: Callable[[np.ndarray], np.ndarray]) -> float:
    """``E f(z)^2`` for z ~ N(0, 1): the MP variance that matches the spectrum's mean."""
    return gaussian_expectation(lambda z: fn(z) ** 2)


def isometry_tables(
    activations: Iterable[str], n: int, seeds: Iterable[int]
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Spectra of ``(1/n) f(Z) f(Z)^T`` for every activation, raw and normalized, per seed.

    All activations of one seed share the same Z (a paired comparison). Returns
    ``(summary, eigenvalues)``: one row per (activation, variant, seed) with the KS
    distance to MP(``E f^2``), and one row per eigenvalue.
    """
    from galu.normalization.modules import reference_activation

    names = list(activations)
    summary, spectra = [], []
    for seed in seeds:
        z = gaussian_preactivations(n, np.random.default_rng(seed))
        for base in names:
            for variant in VARIANTS:
                act = reference_activation(activation_name(base, variant))
                variance = second_moment(act.f)
                lam = gram_eigenvalues(act.f(z))
                labels = {"activation": base, "variant": variant, "n": n, "seed": int(seed)}
                summary.append(
                    {
                        **labels,
                        "mp_variance": variance,
                        "ks_distance": ks_distance_to_mp(lam, variance),
                        "eigenvalue_mean": float(lam.mean()),
                        "eigenvalue_max": float(lam[-1]),
                        "mp_upper_edge": 4.0 * variance,
                    }
                )
                spectra.append(
                    pd.DataFrame({**labels, "index": np.arange(lam.size), "eigenvalue": lam})
                )
    return pd.DataFrame(summary), pd.concat(spectra, ignore_index=True)
