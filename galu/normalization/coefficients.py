"""Gaussian-moment normalization coefficients (Richemond & Guo, arXiv 1905.01369, Eq. 3).

An activation ``f`` is replaced by ``(f(x) - alpha x - beta) / gamma`` with

    alpha = E f'(z),   beta = E f(z),   gamma^2 = E (f(z) - alpha z - beta)^2,

for z ~ N(0, 1). The normalized activation then has mean 0, zero correlation
with its input (by Stein's lemma E z f(z) = E f'(z) = alpha) and variance 1.
For ReLU: alpha = 1/2, beta = 1/sqrt(2 pi), gamma^2 = 1/4 - 1/(2 pi).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

import numpy as np
import pandas as pd

from galu.activations import Activation, get_activation
from galu.normalization.quadrature import MAX_ORDER, gaussian_expectation


@dataclass(frozen=True)
class Coefficients:
    """alpha, beta, gamma of one activation, and the quadrature's convergence check."""

    alpha: float
    beta: float
    gamma: float
    order: int
    # Largest change of (alpha, beta, gamma) when the order is doubled.
    quadrature_error: float


def _moments(act: Activation, order: int) -> tuple[float, float, float]:
    alpha = gaussian_expectation(act.df, order)
    beta = gaussian_expectation(act.f, order)
    variance = gaussian_expectation(lambda z: (act.f(z) - alpha * z - beta) ** 2, order)
    return alpha, beta, float(np.sqrt(variance))


def normalization_coefficients(activation: str | Activation, order: int = 48) -> Coefficients:
    """alpha, beta, gamma of an activation (by name or object), checked at twice the order."""
    act = get_activation(activation) if isinstance(activation, str) else activation
    coarse = _moments(act, order)
    fine = _moments(act, min(2 * order, MAX_ORDER))
    error = max(abs(a - b) for a, b in zip(coarse, fine, strict=True))
    return Coefficients(*fine, order=order, quadrature_error=error)


def normalized(activation: str | Activation, coeffs: Coefficients | None = None) -> Callable:
    """The normalized activation ``x -> (f(x) - alpha x - beta) / gamma`` (numpy)."""
    act = get_activation(activation) if isinstance(activation, str) else activation
    c = coeffs or normalization_coefficients(act)
    return lambda x: (act.f(x) - c.alpha * x - c.beta) / c.gamma


def coefficients_table(names: Iterable[str], order: int, tolerance: float) -> pd.DataFrame:
    """One row per activation: the ``coefficients.csv`` contract of docs/design.md.

    Raises if doubling the quadrature order changes a coefficient by more than
    ``tolerance``: the order is then too low for that activation.
    """
    rows = []
    for name in names:
        c = normalization_coefficients(name, order)
        if c.quadrature_error > tolerance:
            raise ValueError(
                f"quadrature for {name!r} has not converged at order {order}: doubling it "
                f"changes a coefficient by {c.quadrature_error:.3g} > {tolerance:.3g}; "
                "raise normalization.coefficients.quadrature_order in the config"
            )
        rows.append(
            {
                "activation": name,
                "alpha": c.alpha,
                "beta": c.beta,
                "gamma": c.gamma,
                "quadrature_order": c.order,
                "quadrature_error": c.quadrature_error,
            }
        )
    return pd.DataFrame(rows)
