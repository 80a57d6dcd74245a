"""Gaussian averages of pairs, triples and quadruples of hidden-unit activations.

The order-parameter ODEs of on-line learning in a soft committee machine
(Straat & Biehl, arXiv 1903.07378, Eqs. 5-7; Saad & Solla 1995) need, for
zero-mean jointly Gaussian pre-activations ``z`` with covariance ``C``,

* ``pair   = <g(z1) g(z2)>``                 (generalization error),
* ``triple = <g'(z1) z2 g(z3)>``             (the O(eta) terms),
* ``quad   = <g'(z1) g'(z2) g(z3) g(z4)>``   (the O(eta^2) term).

Every function takes covariances of shape ``(..., n, n)`` and returns the
average for each leading index, so one call covers all index tuples of an ODE.
The pair and triple averages of both activations and the erf quadruple are
closed forms. The ReLU quadruple has none (the paper drops it for K, M > 1);
:func:`galu.scm.relu_quadruple.relu_quad` reduces it to a one-dimensional
integral, see there.
ReLU'(0) = theta(0) = 0 throughout; it has measure zero in every average.
"""

from __future__ import annotations

import math

import numpy as np

from galu.scm.gaussian import TINY, TWO_PI, check_cov, clipped_arcsin, relu_pair_entries, sqrt0
from galu.scm.relu_quadruple import relu_gate_pair, relu_quad
from galu.scm.transfer import check_activation

Array = np.ndarray


# ----------------------------------------------------------------------------- ReLU


def relu_triple_entries(c11: Array, c12: Array, c13: Array, c23: Array, c33: Array) -> Array:
    """``<theta(z1) z2 relu(z3)>``.

    Gaussian integration by parts in ``z2`` gives
    ``C12 <delta(z1) relu(z3)> + C23 <theta(z1) theta(z3)>``; the first factor is
    ``sqrt(C11 C33 - C13^2) / (2 pi C11)``, the second the quadrant probability.
    """
    c11 = np.maximum(c11, TINY)
    rho13 = c13 / np.sqrt(np.maximum(c11 * c33, TINY))
    return c12 * sqrt0(c11 * c33 - c13**2) / (TWO_PI * c11) + c23 * (
        0.25 + clipped_arcsin(rho13) / TWO_PI
    )


# ----------------------------------------------------------------------------- erf


def erf_pair_entries(c11: Array, c12: Array, c22: Array) -> Array:
    """``<erf(z1/sqrt2) erf(z2/sqrt2)> = (2/pi) arcsin(C12 / sqrt((1+C11)(1+C22)))``."""
    return (2 / math.pi) * clipped_arcsin(c12 / np.sqrt((1 + c11) * (1 + c22)))


def erf_triple_entries(c11: Array, c12: Array, c13: Array, c23: Array, c33: Array) -> Array:
    """``<g'(z1) z2 g(z3)>`` for ``g = erf(x/sqrt2)`` (Saad & Solla 1995, I3)."""
    lam3 = (1 + c11) * (1 + c33) - c13**2
    return 2 * (c23 * (1 + c11) - c12 * c13) / (math.pi * (1 + c11) * np.sqrt(lam3))


def erf_quad(cov: Array) -> Array:
    """``<g'(z1) g'(z2) g(z3) g(z4)>`` for ``g = erf(x/sqrt2)`` (Saad & Solla 1995, I4)."""
    cov = check_cov(cov, 4)
    c = {(i, j): cov[..., i - 1, j - 1] for i in range(1, 5) for j in range(1, 5)}
    lam4 = (1 + c[1, 1]) * (1 + c[2, 2]) - c[1, 2] ** 2
    lam0 = (
        lam4 * c[3, 4]
        - c[2, 3] * c[2, 4] * (1 + c[1, 1])
        - c[1, 3] * c[1, 4] * (1 + c[2, 2])
        + c[1, 2] * c[1, 3] * c[2, 4]
        + c[1, 2] * c[1, 4] * c[2, 3]
    )

    def lam(k: int) -> Array:
        return (
            lam4 * (1 + c[k, k])
            - c[2, k] ** 2 * (1 + c[1, 1])
            - c[1, k] ** 2 * (1 + c[2, 2])
            + 2 * c[1, 2] * c[1, k] * c[2, k]
        )

    return 4 / (math.pi**2 * np.sqrt(lam4)) * clipped_arcsin(lam0 / np.sqrt(lam(3) * lam(4)))


# ----------------------------------------------------------------------------- dispatch


def pair_average(cov: Array, activation: str) -> Array:
    """``<g(z1) g(z2)>`` for covariances of shape ``(..., 2, 2)``."""
    cov = check_cov(cov, 2)
    fn = relu_pair_entries if check_activation(activation) == "relu" else erf_pair_entries
    return fn(cov[..., 0, 0], cov[..., 0, 1], cov[..., 1, 1])


def triple_average(cov: Array, activation: str) -> Array:
    """``<g'(z1) z2 g(z3)>`` for covariances of shape ``(..., 3, 3)``."""
    cov = check_cov(cov, 3)
    fn = relu_triple_entries if check_activation(activation) == "relu" else erf_triple_entries
    return fn(cov[..., 0, 0], cov[..., 0, 1], cov[..., 0, 2], cov[..., 1, 2], cov[..., 2, 2])


def quad_average(cov: Array, activation: str) -> Array:
    """``<g'(z1) g'(z2) g(z3) g(z4)>`` for covariances of shape ``(..., 4, 4)``."""
    if check_activation(activation) == "erf":
        return erf_quad(cov)
    return relu_quad(cov)


def gate_pair_average(cov: Array, activation: str) -> Array:
    """``<g'(z1)^2 g(z2) g(z3)>`` for ``(..., 3, 3)``: the quadruple with its gates on one unit.

    For ReLU ``theta^2 = theta`` and :func:`galu.scm.relu_quadruple.relu_gate_pair`
    is exact to rounding, where the quadruple with two equal arguments is not.
    """
    cov = check_cov(cov, 3)
    if check_activation(activation) == "erf":
        return erf_quad(cov[..., [0, 0, 1, 2], :][..., :, [0, 0, 1, 2]])
    return relu_gate_pair(cov)
