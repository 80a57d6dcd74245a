"""Torch activations of the static-normalization stage (arXiv 1905.01369, Eq. 3)."""

import math

import numpy as np
import pytest
import torch

from galu.activations import ACTIVATIONS
from galu.normalization.coefficients import normalization_coefficients, normalized
from galu.normalization.modules import (
    TILT,
    TILTED_RELU_SCALE,
    known_names,
    make_activation,
    reference_activation,
)

GRID = np.linspace(-6.0, 6.0, 2001)


def _torch_apply(name: str, x: np.ndarray) -> np.ndarray:
    return make_activation(name)(torch.as_tensor(x, dtype=torch.float64)).numpy()


@pytest.mark.parametrize("name", sorted(ACTIVATIONS))
def test_torch_activation_matches_numpy_registry(name):
    np.testing.assert_allclose(_torch_apply(name, GRID), ACTIVATIONS[name].f(GRID), atol=1e-12)


@pytest.mark.parametrize("name", ["relu", "tanh", "abs", "elu", "gelu"])
def test_normalized_module_matches_numpy_normalization(name):
    expected = normalized(name)(GRID)
    np.testing.assert_allclose(_torch_apply(f"normalized_{name}", GRID), expected, atol=1e-12)


def test_tilted_relu_is_normalized_relu_times_sqrt_one_minus_two_over_pi():
    # relu(x) - x/2 = |x|/2, so normalized relu = (|x| - sqrt(2/pi)) / (2 gamma).
    gamma = normalization_coefficients("relu").gamma
    assert 2.0 * gamma == pytest.approx(math.sqrt(1.0 - 2.0 / math.pi), abs=1e-14)
    tilted = _torch_apply("tilted_relu", GRID)
    np.testing.assert_allclose(
        tilted, TILTED_RELU_SCALE * _torch_apply("normalized_relu", GRID), rtol=0, atol=1e-14
    )
    np.testing.assert_array_equal(tilted, np.abs(GRID) - math.sqrt(2.0 / math.pi))


def test_tilted_relu_has_lipschitz_constant_one_and_zero_gaussian_mean():
    x = torch.linspace(-3, 3, 601, dtype=torch.float64, requires_grad=True)
    make_activation("tilted_relu")(x).sum().backward()
    np.testing.assert_array_equal(x.grad.abs().numpy()[x.detach().numpy() != 0], 1.0)
    z = np.random.default_rng(0).standard_normal(400_000)
    assert np.mean(np.abs(z) - TILT) == pytest.approx(0.0, abs=5e-3)


@pytest.mark.parametrize("name", ["tilted_relu", "normalized_relu", "normalized_tanh", "abs"])
def test_reference_activation_is_the_modules_numpy_twin(name):
    twin = reference_activation(name)
    np.testing.assert_allclose(twin.f(GRID), _torch_apply(name, GRID), atol=1e-12)
    x = torch.tensor(GRID[GRID != 0], dtype=torch.float64, requires_grad=True)
    make_activation(name)(x).sum().backward()
    np.testing.assert_allclose(twin.df(GRID[GRID != 0]), x.grad.numpy(), atol=1e-12)


def test_known_names_cover_the_experiment_activations():
    for name in ["relu", "tilted_relu", "abs", "tanh", "normalized_relu", "normalized_selu"]:
        assert name in known_names()
        make_activation(name)


@pytest.mark.parametrize("bad", ["tilted", "normalized_", "normalized_tilted_relu", "ReLU"])
def test_unknown_activation_raises_with_the_allowed_names(bad):
    with pytest.raises(ValueError, match="choose one of: .*tilted_relu"):
        make_activation(bad)
    with pytest.raises(ValueError, match=f"unknown activation '{bad}'"):
        reference_activation(bad)
