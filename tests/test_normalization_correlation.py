"""Correlation propagation: closed-form maps against Monte Carlo, special cases, the probe."""

import math

import numpy as np
import pytest
import torch

from galu.normalization.correlation import (
    layer_correlations,
    mean_abs_cosine,
    pre_activations,
    random_baseline,
)
from galu.normalization.correlation_map import correlation_map
from galu.normalization.mlp import build_mlp

FUNCTIONS = {
    "relu": lambda z: np.maximum(z, 0.0),
    "abs": np.abs,
    "tilted_relu": lambda z: np.abs(z) - math.sqrt(2 / math.pi),
}


@pytest.mark.parametrize("activation", sorted(FUNCTIONS))
@pytest.mark.parametrize("rho", [-0.6, 0.0, 0.24, 0.8, 0.97])
def test_closed_form_map_matches_monte_carlo(activation, rho):
    rng = np.random.default_rng(7)
    u, w = rng.standard_normal((2, 2_000_000))
    v = rho * u + math.sqrt(1 - rho * rho) * w
    f = FUNCTIONS[activation]
    fu, fv = f(u), f(v)
    empirical = np.mean((fu - fu.mean()) * (fv - fv.mean())) / np.sqrt(fu.var() * fv.var())
    # Monte Carlo standard error of a correlation estimate at n = 2e6 is below 1e-3.
    assert correlation_map(activation, rho) == pytest.approx(empirical, abs=3e-3)


def test_special_cases_and_slopes():
    for activation in FUNCTIONS:
        assert correlation_map(activation, 0.0) == pytest.approx(0.0, abs=1e-15)
        assert correlation_map(activation, 1.0) == pytest.approx(1.0, abs=1e-15)
    h = 1e-6
    # Slope at 0: the linear part's share of the variance, alpha^2 / Var f.
    relu_share = 0.25 / (0.5 - 1 / (2 * math.pi))
    assert correlation_map("relu", h) / h == pytest.approx(relu_share, rel=1e-5)
    assert correlation_map("abs", h) / h == pytest.approx(0.0, abs=1e-5)
    # Slope at 1: E f'^2 / Var f = 1 / (1 - 2/pi) for |x| (the chaotic factor 2.75).
    # (The curvature blows up at 1 like 1/sqrt(1 - rho): a one-sided difference needs a tiny step.)
    step = 1e-10
    slope = (1.0 - correlation_map("abs", 1 - step)) / step
    assert slope == pytest.approx(1 / (1 - 2 / math.pi), rel=1e-4)
    # The shift of the tilted ReLU does not change a centred correlation.
    rho = np.linspace(-1, 1, 11)
    np.testing.assert_array_equal(correlation_map("tilted_relu", rho), correlation_map("abs", rho))
    with pytest.raises(ValueError, match="no closed-form correlation map for 'tanh'"):
        correlation_map("tanh", 0.5)


def test_mean_abs_cosine_of_tiny_batches():
    axes = torch.tensor([[1.0, 0.0], [0.0, 1.0], [-1.0, 0.0], [0.0, -1.0]])
    # Pairs: two antiparallel (|cos| 1), four orthogonal (0).
    assert mean_abs_cosine(axes) == pytest.approx(1 / 3)
    # A constant offset shared by every input is not correlation.
    assert mean_abs_cosine(axes + torch.tensor([5.0, -3.0])) == pytest.approx(1 / 3)
    assert mean_abs_cosine(torch.tensor([[2.0, 1.0], [0.0, 1.0]])) == pytest.approx(1.0)
    with pytest.raises(ValueError, match="at least 2 inputs"):
        mean_abs_cosine(torch.ones(1, 3))


def test_random_baseline_is_the_mean_abs_cosine_of_independent_vectors():
    assert random_baseline(2) == pytest.approx(2 / math.pi, rel=1e-12)
    rng = np.random.default_rng(3)
    a, b = rng.standard_normal((2, 50_000, 128))
    cos = np.abs((a * b).sum(1)) / np.linalg.norm(a, axis=1) / np.linalg.norm(b, axis=1)
    assert random_baseline(128) == pytest.approx(cos.mean(), abs=1e-3)
    assert random_baseline(128) == pytest.approx(math.sqrt(2 / (math.pi * 128)), rel=0.01)


def test_layer_correlations_probe_each_hidden_layer():
    model = build_mlp("tilted_relu", depth=4, width=16, seed=0, input_dim=8)
    x = torch.randn(12, 8, generator=torch.Generator().manual_seed(1))
    table = layer_correlations(model, x)
    assert list(table["layer"]) == [1, 2, 3, 4]
    hidden = list(pre_activations(model, x))
    assert len(hidden) == 4 and all(h.shape == (12, 16) for h in hidden)
    # Layer 1 is the first linear map; layer 2 applies the activation then the next one.
    with torch.no_grad():
        first = model.linears[0](x)
        second = model.linears[1](model.act(first))
    assert table["mean_abs_cos"].iloc[0] == pytest.approx(mean_abs_cosine(first))
    assert table["mean_abs_cos"].iloc[1] == pytest.approx(mean_abs_cosine(second))
    assert table["mean_abs_cos"].between(0, 1).all()
