"""The half-range Gauss-Hermite rule against the moments of the half-normal law."""

import math

import numpy as np
import pytest

from galu.normalization.quadrature import MAX_ORDER, gaussian_expectation, half_range_rule


def half_normal_moment(k: int) -> float:
    """E[z^k 1{z > 0}] for z ~ N(0, 1): 2^(k/2 - 1) Gamma((k + 1)/2) / sqrt(pi)."""
    return 2 ** (k / 2 - 1) * math.gamma((k + 1) / 2) / math.sqrt(math.pi)


@pytest.mark.parametrize("order", [1, 3, 8, 24])
def test_rule_is_exact_for_polynomials_below_degree_2n(order):
    nodes, weights = half_range_rule(order)
    for k in range(2 * order):
        assert weights @ nodes**k == pytest.approx(half_normal_moment(k), rel=1e-12)


def test_rule_is_not_exact_at_degree_2n():
    # A Gauss rule cannot integrate the square of its own node polynomial: a real check that
    # the exactness above comes from the rule, not from a degenerate measure.
    nodes, weights = half_range_rule(2)
    assert abs(weights @ nodes**4 - half_normal_moment(4)) > 1e-3


def test_nodes_are_positive_and_weights_sum_to_half():
    nodes, weights = half_range_rule(40)
    assert np.all(nodes > 0) and np.all(weights > 0)
    assert weights.sum() == pytest.approx(0.5, abs=1e-15)


def test_kinked_integrands_are_exact():
    # |z| and max(z, 0) have a kink at 0, where plain Gauss-Hermite loses accuracy.
    assert gaussian_expectation(np.abs, 4) == pytest.approx(math.sqrt(2 / math.pi), abs=1e-14)
    assert gaussian_expectation(lambda z: np.maximum(z, 0) ** 3, 4) == pytest.approx(
        math.sqrt(2 / math.pi), abs=1e-14
    )


def test_smooth_integrand_converges_to_closed_form():
    # E cos(z) = exp(-1/2).
    assert gaussian_expectation(np.cos, 30) == pytest.approx(math.exp(-0.5), abs=1e-14)


@pytest.mark.parametrize("order", [0, -1, MAX_ORDER + 1, 2.5])
def test_bad_order_is_rejected(order):
    with pytest.raises(ValueError, match="quadrature order"):
        half_range_rule(order)
