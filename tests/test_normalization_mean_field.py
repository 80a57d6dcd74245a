"""Mean-field maps of deep plain MLPs: closed forms, special cases, and random networks."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import special

from galu.normalization.mean_field import (
    CLOSED_FORMS,
    MeanField,
    depth_scale,
    depth_scale_table,
    length_fixed_point,
    pair_mean,
    propagation,
)
from galu.normalization.mlp import default_gain
from galu.normalization.modules import reference_activation


def field(name: str, gain: float | None = None) -> MeanField:
    act = reference_activation(name)
    gain = default_gain(name) if gain is None else gain
    return MeanField(act.f, act.df, gain, CLOSED_FORMS.get(name))


@pytest.mark.parametrize("q", [0.3, 1.0, 2.5])
@pytest.mark.parametrize("c", [-0.7, 0.0, 0.4, 0.95])
def test_the_two_dimensional_rule_against_closed_forms(q, c):
    # linear: E u1 u2 = q c; erf (Williams 1997): (2/pi) asin(2 q c / (1 + 2 q))
    assert pair_mean(lambda u: u, lambda u: u, q, c) == pytest.approx(q * c, abs=1e-12)
    erf = pair_mean(special.erf, special.erf, q, c)
    assert erf == pytest.approx(2 / math.pi * math.asin(2 * q * c / (1 + 2 * q)), abs=1e-10)
    # the kinked activations' closed forms against a million Gaussian pairs (std error ~1e-3)
    rng = np.random.default_rng(7)
    z1, z2 = rng.standard_normal((2, 1_000_000))
    u1, u2 = math.sqrt(q) * z1, math.sqrt(q) * (c * z1 + math.sqrt(1 - c * c) * z2)
    for name, (kernel, derivative_kernel) in CLOSED_FORMS.items():
        act = reference_activation(name)
        assert np.mean(act.f(u1) * act.f(u2)) == pytest.approx(kernel(q, c), abs=5e-3 * q)
        assert np.mean(act.df(u1) * act.df(u2)) == pytest.approx(derivative_kernel(q, c), abs=5e-3)


def test_relu_and_abs_at_their_gains_are_critical():
    for name in ("relu", "abs"):
        found = propagation(field(name))
        assert found.q_star == pytest.approx(1.0, abs=1e-12)  # every q is a fixed point
        assert (found.c_star, found.chi_1, found.chi_c) == pytest.approx((1.0, 1.0, 1.0))
        assert found.xi_c == math.inf
    # ReLU's correlation map at c = 0 is 1/pi (He gain)
    assert field("relu").correlation(1.0, 0.0) == pytest.approx(1 / math.pi, abs=1e-12)


def test_the_tilted_relu_settles_at_a_quarter_with_abs_correlation_map():
    tilted = field("tilted_relu")
    found = propagation(tilted)
    assert found.q_star == pytest.approx(0.25, abs=1e-10)  # (4/pi) sqrt(q) = 2/pi
    assert found.chi_1 == pytest.approx(1.0, abs=1e-12)  # |phi'| = 1, gain 1
    for c in (0.0, 0.5, 0.9):  # at q* = 1/4 the offset's terms cancel: |x|'s map at q = 1
        assert tilted.correlation(0.25, c) == pytest.approx(field("abs").correlation(1.0, c))


def test_tanh_at_its_gain_is_barely_chaotic_and_forgets_correlations_slowly():
    found = propagation(field("tanh"))  # galu.normalization.mlp: q* = 0.053, chi = 1.003
    assert found.q_star == pytest.approx(0.053, abs=5e-4)
    assert found.chi_1 == pytest.approx(1.003, abs=5e-4)
    assert found.c_star == pytest.approx(0.0, abs=1e-9)  # odd phi, no bias: c = 0
    assert 0.99 < found.chi_c < 1.0 and found.xi_c == pytest.approx(depth_scale(found.chi_c))
    assert found.xi_c > 100


def test_a_map_that_shrinks_the_signal_reports_no_fixed_point():
    found = propagation(field("tanh", gain=0.9))  # gain < 1: q -> 0
    assert found.q_star == 0.0 and math.isnan(found.c_star) and math.isnan(found.xi_c)
    with pytest.raises(ValueError, match="grows without bound"):
        length_fixed_point(MeanField(lambda u: u, lambda u: 1 + 0 * u, 1.5))
    assert depth_scale(math.exp(-1 / 3)) == pytest.approx(3.0)


def _random_layer(rng, n, gain):
    """Gaussian weights of variance gain² / n: the second moments of an orthogonal matrix
    times gain, which are all the maps see (and no QR of a large matrix per layer)."""
    return rng.standard_normal((n, n), dtype=np.float32) * (gain / math.sqrt(n))


def _correlation(a, b):
    return float(a @ b / math.sqrt((a @ a) * (b @ b)))


@pytest.mark.parametrize("name", ["relu", "tilted_relu", "tanh"])
def test_random_wide_networks_follow_the_maps(name):
    """Two inputs (q = 1, c = 0.6) through 8 layers of width 2,000 (random weights of the
    gain's variance), in eight networks: the mean length and correlation per layer follow
    the maps to finite-width accuracy (a single network's length strays by ~10 %)."""
    rng = np.random.default_rng(0)
    mean_field, n, nets, layers = field(name), 2000, 8, 8
    phi = reference_activation(name).f
    lengths, correlations = np.zeros((nets, layers)), np.zeros((nets, layers))
    for net in range(nets):
        z1, z2 = rng.standard_normal(n), rng.standard_normal(n)
        h1, h2 = z1, 0.6 * z1 + 0.8 * z2
        for layer in range(layers):
            weights = _random_layer(rng, n, mean_field.gain)
            h1, h2 = weights @ phi(h1), weights @ phi(h2)
            lengths[net, layer] = h1 @ h1 / n
            correlations[net, layer] = _correlation(h1, h2)
    q, c = 1.0, 0.6
    for layer in range(layers):
        q, c = mean_field.length(q), mean_field.correlation(q, c)
        assert lengths[:, layer].mean() == pytest.approx(q, rel=0.08), (name, layer)
        assert correlations[:, layer].mean() == pytest.approx(c, abs=0.03), (name, layer)


@pytest.mark.parametrize("name", ["tanh", "normalized_selu"])
def test_the_slope_against_random_layers_at_the_fixed_point(name):
    """chi_c against the finite-difference slope of one random layer at q*, c* (common
    random numbers for the two sides, averaged over layers)."""
    found, mean_field = propagation(field(name)), field(name)
    phi, n, delta = reference_activation(name).f, 4000, 0.05
    rng = np.random.default_rng(1)
    slopes = []
    for _ in range(6):
        layer = _random_layer(rng, n, mean_field.gain)
        z1, z2 = rng.standard_normal(n), rng.standard_normal(n)
        out = []
        for c in (found.c_star - delta, found.c_star + delta):
            s = math.sqrt(1 - c * c)
            h1 = math.sqrt(found.q_star) * z1
            h2 = math.sqrt(found.q_star) * (c * z1 + s * z2)
            out.append(_correlation(layer @ phi(h1), layer @ phi(h2)))
        slopes.append((out[1] - out[0]) / (2 * delta))
    assert np.mean(slopes) == pytest.approx(found.chi_c, abs=0.05)


def test_the_depth_scale_table_of_the_trained_activations():
    table = depth_scale_table(["relu", "tilted_relu", "tanh", "relu_bn"]).set_index("activation")
    assert list(table.index) == ["relu", "tilted_relu", "tanh"]  # batch norm: not these maps
    assert table.loc["relu", "gain"] == pytest.approx(math.sqrt(2))
    assert table.loc["tilted_relu", "q_star"] == pytest.approx(0.25)
    assert table.loc[["relu", "tilted_relu"], "xi_c"].tolist() == [math.inf, math.inf]
    tanh = propagation(field("tanh"))
    assert table.loc["tanh", "xi_c"] == pytest.approx(tanh.xi_c)
