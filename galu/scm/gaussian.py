"""Closed forms shared by the Gaussian averages of :mod:`galu.scm.averages` and the ReLU
quadruple of :mod:`galu.scm.relu_quadruple`: covariance checks, rounding-safe square root and
arcsine, and the ReLU pair average (the arc-cosine kernel of degree 1; Cho & Saul 2009),
which the quadruple's integrand evaluates along its path."""

from __future__ import annotations

import math

import numpy as np

Array = np.ndarray

TWO_PI = 2.0 * math.pi
# Floors that keep divisions finite at degenerate covariances (a unit with zero
# variance, or a Gauss node so close to the path's end that a minor rounds to 0).
TINY = 1e-300


def check_cov(cov: Array, n: int) -> Array:
    """``cov`` as a float array of shape ``(..., n, n)``, or a ValueError naming the shape."""
    cov = np.asarray(cov, dtype=float)
    if cov.ndim < 2 or cov.shape[-2:] != (n, n):
        raise ValueError(f"cov must have shape (..., {n}, {n}), got {cov.shape}")
    return cov


def sqrt0(x: Array) -> Array:
    """sqrt of a quantity that is >= 0 in exact arithmetic but may round below 0."""
    return np.sqrt(np.maximum(x, 0.0))


def clipped_arcsin(x: Array) -> Array:
    """arcsin of a correlation that is in [-1, 1] in exact arithmetic but may round out."""
    return np.arcsin(np.clip(x, -1.0, 1.0))


def relu_pair_entries(c11: Array, c12: Array, c22: Array) -> Array:
    """``<relu(z1) relu(z2)>`` from covariance entries (the arc-cosine kernel of degree 1)."""
    norm = np.sqrt(np.maximum(c11 * c22, TINY))
    return c12 / 4 + sqrt0(c11 * c22 - c12**2) / TWO_PI + c12 * clipped_arcsin(c12 / norm) / TWO_PI
