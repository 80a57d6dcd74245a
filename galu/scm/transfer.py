"""Hidden-unit transfer functions of the soft committee machine, for numpy and torch.

Straat & Biehl (arXiv 1903.07378, Sec. 2) study ``g(x) = max(0, x)``; the
classical comparison (Saad & Solla 1995) is ``g(x) = erf(x / sqrt(2))``.
ReLU'(0) is taken as 0 (``theta(0) = 0``): the pre-activations are Gaussian,
so the choice has measure zero in the order-parameter ODEs; it only matters in
finite simulations, where an exact zero pre-activation has probability zero too.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, TypeVar

import numpy as np
from scipy import special

if TYPE_CHECKING:  # torch is imported only by callers that pass tensors (the simulation)
    import torch

TRANSFER_FUNCTIONS = ("relu", "erf")

ArrayT = TypeVar("ArrayT", np.ndarray, "torch.Tensor")

_SQRT2 = math.sqrt(2.0)
_ERF_SLOPE = math.sqrt(2.0 / math.pi)  # d/dx erf(x / sqrt 2) at x = 0


def check_activation(activation: str) -> str:
    """Return ``activation`` if it is one of :data:`TRANSFER_FUNCTIONS`, else raise ValueError."""
    if activation not in TRANSFER_FUNCTIONS:
        raise ValueError(f"activation must be one of {TRANSFER_FUNCTIONS}, got {activation!r}")
    return activation


def g(x: ArrayT, activation: str) -> ArrayT:
    """``g(x)``: ReLU ``max(0, x)`` or ``erf(x / sqrt 2)``, on numpy arrays or torch tensors."""
    check_activation(activation)
    if _is_tensor(x):
        return x.clamp(min=0) if activation == "relu" else (x / _SQRT2).erf()
    return np.maximum(x, 0.0) if activation == "relu" else special.erf(x / _SQRT2)


def g_prime(x: ArrayT, activation: str) -> ArrayT:
    """``g'(x)``; for ReLU the step ``theta(x)`` with ``theta(0) = 0``."""
    check_activation(activation)
    if _is_tensor(x):
        if activation == "relu":
            return (x > 0).to(x.dtype)
        return _ERF_SLOPE * (-0.5 * x * x).exp()
    if activation == "relu":
        return (x > 0).astype(float)
    return _ERF_SLOPE * np.exp(-0.5 * x * x)


def _is_tensor(x: object) -> bool:
    return type(x).__module__.startswith("torch")
