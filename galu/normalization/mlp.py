"""The deep plain MLP of the CIFAR-10 experiments (Richemond & Guo, arXiv 1905.01369, Sec. 4).

The network: flattened images -> ``depth`` hidden layers of width ``w`` (the first
maps the input to ``w``, the others are square) -> a 10-way linear readout. Weights are
orthogonal times a gain (:data:`GAINS`), biases zero. Only the ``relu_bn`` control
has batch norm (before each activation).

Gains. Each layer's Jacobian is ``g W diag(f'(h))``; with orthogonal W its mean
squared singular value is ``chi = g^2 E f'(h)^2``. We pick g so that ``chi = 1`` at
the activations' own variance fixed point (criticality, Schoenholz et al. 2017):
ReLU sqrt(2) (He), |x| and the tilted ReLU 1 (``|f'| = 1``, so every layer's
Jacobian is exactly orthogonal), tanh 1.05 (chi = 1.003 at its fixed point
q* = 0.053; gain 1 would let the signal die out as q* -> 0). Every other activation
(the normalized ones) gets ``1 / sqrt(E f'(z)^2)``: chi = 1 for unit-variance inputs,
and at any variance when f is piecewise linear. The readout uses the same
gain; the first layer uses gain 1 because its input is standardized data, not an
activation's output.
"""

from __future__ import annotations

import itertools
import math

import torch
from torch import Tensor, nn

from galu.normalization.modules import (
    known_names,
    make_activation,
    reference_activation,
)
from galu.normalization.quadrature import gaussian_expectation
from galu.seeding import derive_seed

BATCH_NORM_SUFFIX = "_bn"
GAINS: dict[str, float] = {
    "relu": math.sqrt(2.0),
    "abs": 1.0,
    "tilted_relu": 1.0,
    "tanh": 1.05,
}


def split_activation(name: str) -> tuple[str, bool]:
    """``relu_bn`` -> (``relu``, True); any other known name -> (name, False)."""
    batch_norm = name.endswith(BATCH_NORM_SUFFIX)
    base = name.removesuffix(BATCH_NORM_SUFFIX) if batch_norm else name
    if base not in known_names():
        allowed = ", ".join([*known_names(), "<any of these>_bn"])
        raise ValueError(f"unknown activation {name!r}; choose one of: {allowed}")
    return base, batch_norm


def default_gain(activation: str) -> float:
    """The orthogonal-init gain of ``activation`` (see the module docstring)."""
    base, _ = split_activation(activation)
    if base in GAINS:
        return GAINS[base]
    df = reference_activation(base).df
    return 1.0 / math.sqrt(gaussian_expectation(lambda z: df(z) ** 2))


class DeepMLP(nn.Module):
    """``depth`` hidden layers of width ``width`` and a linear readout.

    Layer l (0-based) computes ``act(norm_l(linears[l](h)))``; ``linears[depth]`` is
    the readout.
    """

    def __init__(
        self, input_dim: int, width: int, depth: int, num_classes: int, activation: str
    ) -> None:
        super().__init__()
        dims = {"input_dim": input_dim, "width": width, "num_classes": num_classes}
        for key, value in dims.items():
            if value < 1:
                raise ValueError(f"{key} must be >= 1, got {value!r}")
        if depth < 1:
            raise ValueError(f"depth (number of hidden layers) must be >= 1, got {depth!r}")
        base, batch_norm = split_activation(activation)
        self.activation_name = activation
        self.depth = depth
        sizes = [input_dim] + [width] * depth + [num_classes]
        self.linears = nn.ModuleList(nn.Linear(a, b) for a, b in itertools.pairwise(sizes))
        self.norms = nn.ModuleList(
            nn.BatchNorm1d(width) if batch_norm else nn.Identity() for _ in range(depth)
        )
        self.act = make_activation(base)

    def hidden_stack(self, h1: Tensor) -> Tensor:
        """Last hidden pre-activation from the first: ``h1 = linears[0](x) -> linears[depth-1]``."""
        h = h1
        for layer in range(1, self.depth):
            h = self.linears[layer](self.act(self.norms[layer - 1](h)))
        return h

    def forward(self, x: Tensor) -> Tensor:
        h = self.hidden_stack(self.linears[0](x))
        return self.linears[self.depth](self.act(self.norms[self.depth - 1](h)))


def init_orthogonal(model: DeepMLP, gain: float, generator: torch.Generator) -> None:
    """Orthogonal weights (gain 1 on the input layer, ``gain`` after it), zero biases."""
    with torch.no_grad():
        for layer, linear in enumerate(model.linears):
            nn.init.orthogonal_(
                linear.weight, gain=1.0 if layer == 0 else gain, generator=generator
            )
            linear.bias.zero_()


def build_mlp(
    activation: str,
    depth: int,
    width: int,
    seed: int,
    *,
    input_dim: int = 3072,
    num_classes: int = 10,
    gain: float | None = None,
) -> DeepMLP:
    """A :class:`DeepMLP` on the CPU, initialized from ``seed`` (same seed, same weights)."""
    model = DeepMLP(input_dim, width, depth, num_classes, activation)
    generator = torch.Generator().manual_seed(derive_seed(seed, "init"))
    init_orthogonal(model, default_gain(activation) if gain is None else gain, generator)
    return model
