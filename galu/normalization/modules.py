"""Torch activations for the static-normalization experiments (Richemond & Guo, arXiv 1905.01369).

Three kinds of activation, all built by :func:`make_activation` from a name:

- a plain activation of :mod:`galu.activations` (``relu``, ``tanh``, ``abs``, ...);
- its statically normalized version ``normalized_<name>``,
  ``(f(x) - alpha x - beta) / gamma`` (the paper's Eq. 3), with the coefficients
  of :func:`galu.normalization.coefficients.normalization_coefficients`;
- the **tilted ReLU** ``|x| - sqrt(2/pi)``. The normalized ReLU is
  ``(relu(x) - x/2 - 1/sqrt(2 pi)) / gamma = (|x| - sqrt(2/pi)) / (2 gamma)`` because
  ``relu(x) - x/2 = |x|/2``; the paper rescales it to Lipschitz constant 1, which is
  the tilted ReLU: ``tilted_relu = sqrt(1 - 2/pi) * normalized_relu``.

Every torch activation has a numpy twin (:func:`reference_activation`) so that its
Gaussian moments (initialization gains, isometry variances) come from the same
quadrature as the coefficients.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable

import numpy as np
import torch
import torch.nn.functional as F
from torch import Tensor, nn

from galu.activations import ACTIVATIONS, Activation, get_activation
from galu.normalization.coefficients import Coefficients, normalization_coefficients

# E|z| for z ~ N(0, 1): the shift that centres |x| under a unit Gaussian.
TILT = math.sqrt(2.0 / math.pi)
# sqrt(1 - 2/pi) = 2 gamma_relu: the factor between the tilted and the normalized ReLU.
TILTED_RELU_SCALE = math.sqrt(1.0 - 2.0 / math.pi)
NORMALIZED_PREFIX = "normalized_"

# Torch versions of the numpy registry in galu.activations, same names, same functions
# (F.gelu is the exact x * Phi(x) by default, matching the numpy one).
TORCH_FUNCTIONS: dict[str, Callable[[Tensor], Tensor]] = {
    "relu": torch.relu,
    "abs": torch.abs,
    "tanh": torch.tanh,
    "sigmoid": torch.sigmoid,
    "softplus": F.softplus,
    "elu": F.elu,
    "selu": F.selu,
    "gelu": F.gelu,
    "silu": F.silu,
}


class Elementwise(nn.Module):
    """A named elementwise function as a module (so ``repr`` shows which one)."""

    def __init__(self, name: str, fn: Callable[[Tensor], Tensor]) -> None:
        super().__init__()
        self.name = name
        self.fn = fn

    def forward(self, x: Tensor) -> Tensor:
        return self.fn(x)

    def extra_repr(self) -> str:
        return self.name


class NormalizedActivation(nn.Module):
    """``(f(x) - alpha x - beta) / gamma``: the paper's static normalization (Eq. 3).

    For z ~ N(0, 1) the output has mean 0, variance 1 and no linear component
    (E z g(z) = 0), whatever ``f`` was.
    """

    def __init__(self, name: str, fn: Callable[[Tensor], Tensor], coeffs: Coefficients) -> None:
        super().__init__()
        self.name = name
        self.fn = fn
        self.alpha = coeffs.alpha
        self.beta = coeffs.beta
        self.gamma = coeffs.gamma

    def forward(self, x: Tensor) -> Tensor:
        return (self.fn(x) - self.alpha * x - self.beta) / self.gamma

    def extra_repr(self) -> str:
        return f"{self.name}, alpha={self.alpha:.6g}, beta={self.beta:.6g}, gamma={self.gamma:.6g}"


class TiltedReLU(nn.Module):
    """``|x| - sqrt(2/pi)``: the normalized ReLU rescaled to Lipschitz constant 1.

    Its derivative is +-1 everywhere, so ``diag(f'(h)) W`` is orthogonal whenever W
    is: a plain MLP of tilted ReLUs with orthogonal weights (gain 1) has an exactly
    orthogonal input-output Jacobian at initialization.
    """

    def forward(self, x: Tensor) -> Tensor:
        return torch.abs(x) - TILT


def _check_base(base: str, name: str) -> None:
    if base not in TORCH_FUNCTIONS:
        raise ValueError(f"unknown activation {name!r}; choose one of: {', '.join(known_names())}")


def known_names() -> list[str]:
    """Every name :func:`make_activation` accepts."""
    base = sorted(TORCH_FUNCTIONS)
    return [*base, "tilted_relu", *(NORMALIZED_PREFIX + b for b in base)]


@functools.cache
def _coefficients(base: str) -> Coefficients:
    return normalization_coefficients(base)


def make_activation(name: str) -> nn.Module:
    """The torch activation called ``name`` (see :func:`known_names`)."""
    if name == "tilted_relu":
        return TiltedReLU()
    if name.startswith(NORMALIZED_PREFIX):
        base = name.removeprefix(NORMALIZED_PREFIX)
        _check_base(base, name)
        return NormalizedActivation(base, TORCH_FUNCTIONS[base], _coefficients(base))
    _check_base(name, name)
    return Elementwise(name, TORCH_FUNCTIONS[name])


def reference_activation(name: str) -> Activation:
    """The numpy twin (function and derivative) of :func:`make_activation`'s ``name``.

    Used for Gaussian moments of the exact function the network applies.
    """
    if name == "tilted_relu":
        return Activation(name, lambda x: np.abs(x) - TILT, np.sign)
    if name.startswith(NORMALIZED_PREFIX):
        base = name.removeprefix(NORMALIZED_PREFIX)
        _check_base(base, name)
        act, c = get_activation(base), _coefficients(base)
        return Activation(
            name,
            lambda x: (act.f(x) - c.alpha * x - c.beta) / c.gamma,
            lambda x: (act.df(x) - c.alpha) / c.gamma,
        )
    _check_base(name, name)
    return ACTIVATIONS[name]
