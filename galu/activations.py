"""Scalar activation functions and their derivatives, as vectorized numpy callables.

These are the functions whose Gaussian moments the static-normalization paper
(Richemond & Guo, arXiv 1905.01369, Sec. 2) uses. Every activation here is
smooth on each half-line and may have a kink only at 0, which is what lets
:mod:`galu.normalization.quadrature` integrate them to machine precision.
ReLU'(0) and |x|'(0) are taken as 0; the choice has measure zero under a
Gaussian.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from scipy import special

Array = np.ndarray
ArrayFn = Callable[[Array], Array]

# SELU's constants (Klambauer et al. 2017), fixed by its self-normalizing fixed point.
SELU_ALPHA = 1.6732632423543772
SELU_SCALE = 1.0507009873554805


@dataclass(frozen=True)
class Activation:
    """An activation ``f`` and its derivative ``df``."""

    name: str
    f: ArrayFn
    df: ArrayFn


def _gelu(x: Array) -> Array:
    return x * special.ndtr(x)


def _gelu_prime(x: Array) -> Array:
    return special.ndtr(x) + x * np.exp(-0.5 * x * x) / np.sqrt(2.0 * np.pi)


def _silu_prime(x: Array) -> Array:
    s = special.expit(x)
    return s * (1.0 + x * (1.0 - s))


def _elu(x: Array, scale: float = 1.0, alpha: float = 1.0) -> Array:
    return scale * np.where(x > 0, x, alpha * np.expm1(np.minimum(x, 0.0)))


def _elu_prime(x: Array, scale: float = 1.0, alpha: float = 1.0) -> Array:
    return scale * np.where(x > 0, 1.0, alpha * np.exp(np.minimum(x, 0.0)))


ACTIVATIONS: dict[str, Activation] = {
    a.name: a
    for a in (
        Activation("relu", lambda x: np.maximum(x, 0.0), lambda x: (x > 0).astype(float)),
        Activation("abs", np.abs, np.sign),
        Activation("tanh", np.tanh, lambda x: 1.0 - np.tanh(x) ** 2),
        Activation("sigmoid", special.expit, lambda x: special.expit(x) * (1.0 - special.expit(x))),
        Activation("softplus", lambda x: np.logaddexp(0.0, x), special.expit),
        Activation("elu", _elu, _elu_prime),
        Activation(
            "selu",
            lambda x: _elu(x, SELU_SCALE, SELU_ALPHA),
            lambda x: _elu_prime(x, SELU_SCALE, SELU_ALPHA),
        ),
        Activation("gelu", _gelu, _gelu_prime),
        Activation("silu", lambda x: x * special.expit(x), _silu_prime),
    )
}


def get_activation(name: str) -> Activation:
    """Look up an activation by name, with an error listing the known names."""
    try:
        return ACTIVATIONS[name]
    except KeyError:
        known = ", ".join(sorted(ACTIVATIONS))
        raise ValueError(f"unknown activation {name!r}; choose one of: {known}") from None
