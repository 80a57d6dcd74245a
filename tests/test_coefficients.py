"""Normalization coefficients: ReLU's closed form, and the three moment properties."""

import math

import numpy as np
import pytest

from galu.activations import ACTIVATIONS, get_activation
from galu.normalization.coefficients import (
    coefficients_table,
    normalization_coefficients,
    normalized,
)
from galu.normalization.quadrature import gaussian_expectation

ALL = sorted(ACTIVATIONS)


def test_relu_closed_form():
    c = normalization_coefficients("relu")
    assert c.alpha == pytest.approx(0.5, abs=1e-10)
    assert c.beta == pytest.approx(1 / math.sqrt(2 * math.pi), abs=1e-10)
    assert c.gamma == pytest.approx(math.sqrt(0.25 - 1 / (2 * math.pi)), abs=1e-10)


def test_abs_closed_form_and_tilted_relu():
    # |x| = 2 relu(x) - x: alpha = 0, beta = sqrt(2/pi), so normalized relu is the tilted
    # relu (|x| - sqrt(2/pi)) divided by 2 gamma_relu.
    c = normalization_coefficients("abs")
    assert c.alpha == pytest.approx(0.0, abs=1e-12)
    assert c.beta == pytest.approx(math.sqrt(2 / math.pi), abs=1e-12)
    x = np.linspace(-3, 3, 13)
    relu_n = normalized("relu")(x)
    gamma = normalization_coefficients("relu").gamma
    np.testing.assert_allclose(
        relu_n, (np.abs(x) - math.sqrt(2 / math.pi)) / (2 * gamma), atol=1e-12
    )


def test_odd_activations_have_no_offset():
    for name in ("tanh",):
        assert normalization_coefficients(name).beta == pytest.approx(0.0, abs=1e-14)


@pytest.mark.parametrize("name", ALL)
def test_normalized_moments_by_quadrature(name):
    g = normalized(name)
    assert gaussian_expectation(g) == pytest.approx(0.0, abs=1e-10)
    assert gaussian_expectation(lambda z: z * g(z)) == pytest.approx(0.0, abs=1e-10)
    assert gaussian_expectation(lambda z: g(z) ** 2) == pytest.approx(1.0, abs=1e-10)


@pytest.mark.parametrize("name", ALL)
def test_normalized_moments_by_monte_carlo(name):
    z = np.random.default_rng(7).standard_normal(1_000_000)
    y = normalized(name)(z)
    se = 1 / math.sqrt(z.size)  # unit variance: the standard error of each mean below
    assert abs(y.mean()) < 5 * se
    assert abs(np.mean(z * y)) < 5 * se * np.std(z * y)
    assert abs(np.mean(y**2) - 1) < 5 * se * np.std(y**2)


@pytest.mark.parametrize("name", ALL)
def test_derivative_matches_finite_difference(name):
    act = get_activation(name)
    x = np.array([-2.1, -0.7, 0.3, 1.9])  # away from the kink at 0
    h = 1e-6
    np.testing.assert_allclose(act.df(x), (act.f(x + h) - act.f(x - h)) / (2 * h), atol=1e-6)


def test_table_columns_and_convergence_guard():
    table = coefficients_table(["relu", "gelu"], 24, 1e-10)
    assert list(table.columns[:4]) == ["activation", "alpha", "beta", "gamma"]
    assert table["quadrature_error"].max() < 1e-10
    with pytest.raises(ValueError, match="has not converged at order 2"):
        coefficients_table(["gelu"], 2, 1e-10)


def test_unknown_activation_names_the_choices():
    with pytest.raises(ValueError, match="unknown activation 'swish'.*relu"):
        normalization_coefficients("swish")
