"""How a deep plain MLP at initialization propagates the correlation between two inputs.

The diagnostic behind our failure to reproduce the tilted ReLU's depth claim (Richemond &
Guo, arXiv 1905.01369, Sec. 4; see the ``finding`` of ``norm_tilted_relu_trains_to_60_layers``
in ``workflow/claims.yaml``). For two unit-variance, zero-mean Gaussian pre-activations
``(u, v)`` with correlation ``rho``, one layer maps it to the *centred* correlation

    c(rho) = (E f(u) f(v) - (E f)^2) / Var f

(the mean-field correlation map of Poole et al. 2016, with the mean removed because a
constant offset carries no information about the input). Its slope at 0 is the share of
``f``'s variance in its linear part, ``alpha^2 / Var f`` with ``alpha = E f'(z)``:

- ReLU keeps ``0.25 / (1/2 - 1/(2 pi)) = 0.73`` of a small correlation per layer;
- ``|x|`` (and the tilted ReLU, the same up to a constant) has ``alpha = 0``, so ``c`` is
  flat at 0 and small correlations are squared away: images become as uncorrelated as
  random vectors within a few layers, and the network can memorize but not learn.

Closed forms (arc-cosine kernels, Cho & Saul 2009): ``E|u||v| = (2/pi)(sqrt(1 - rho^2) +
rho arcsin rho)`` and ``E relu(u) relu(v) = (sqrt(1 - rho^2) + (pi - arccos rho) rho) /
(2 pi)``: :func:`~galu.normalization.correlation_map.correlation_map` (numpy only, so the
figures draw it without torch). :func:`layer_correlations` measures the same quantity in a
network, layer by layer.
"""

from __future__ import annotations

import math
from collections.abc import Iterator

import pandas as pd
import torch
from torch import Tensor

from galu.normalization.mlp import DeepMLP


def pre_activations(model: DeepMLP, x: Tensor) -> Iterator[Tensor]:
    """The pre-activations ``h_1, ..., h_depth`` of ``model`` on the batch ``x``, in order."""
    h = model.linears[0](x)
    yield h
    for layer in range(1, model.depth):
        h = model.linears[layer](model.act(model.norms[layer - 1](h)))
        yield h


def mean_abs_cosine(h: Tensor) -> float:
    """Mean ``|cos|`` between the centred rows of ``h`` over all pairs of distinct rows.

    Each unit's mean over the batch is removed first, so a constant offset shared by every
    input does not count as correlation.
    """
    if h.shape[0] < 2:
        raise ValueError(f"need at least 2 inputs to correlate, got {h.shape[0]}")
    centred = h - h.mean(dim=0, keepdim=True)
    unit = centred / centred.norm(dim=1, keepdim=True).clamp_min(1e-30)
    cos = (unit @ unit.T).abs()
    n = h.shape[0]
    return float((cos.sum() - cos.diagonal().sum()) / (n * (n - 1)))


def random_baseline(width: int) -> float:
    """Mean ``|cos|`` of two independent Gaussian vectors in ``width`` dimensions:
    ``Gamma(n/2) / (sqrt(pi) Gamma((n+1)/2))``, about ``sqrt(2 / (pi n))``."""
    return math.exp(math.lgamma(width / 2) - math.lgamma((width + 1) / 2)) / math.sqrt(math.pi)


@torch.no_grad()
def layer_correlations(model: DeepMLP, x: Tensor) -> pd.DataFrame:
    """Per layer of ``model`` at its current weights: ``layer`` (1-based), ``mean_abs_cos``."""
    model.eval()
    rows = [
        {"layer": layer, "mean_abs_cos": mean_abs_cosine(h)}
        for layer, h in enumerate(pre_activations(model, x), start=1)
    ]
    return pd.DataFrame(rows)
