"""Static isometry against Marchenko–Pastur (arXiv 1905.01369, Sec. 3; Pennington & Worah 2017)."""

import numpy as np
import pytest
from scipy import integrate

from galu.normalization.isometry import (
    gaussian_preactivations,
    gram_eigenvalues,
    isometry_tables,
    ks_distance_to_mp,
    mp_cdf,
    mp_density,
)
from galu.normalization.modules import reference_activation


@pytest.mark.parametrize("variance", [1.0, 0.37])
def test_mp_cdf_is_the_integral_of_the_density(variance):
    for x in [0.01, 0.5, 1.0, 2.5, 3.9]:
        x = x * variance
        area, _ = integrate.quad(mp_density, 0.0, x, args=(variance,), limit=200)
        assert mp_cdf(x, variance) == pytest.approx(area, abs=1e-7)
    assert mp_cdf(0.0, variance) == 0.0
    assert mp_cdf(4.0 * variance, variance) == pytest.approx(1.0, abs=1e-15)
    assert mp_cdf(10.0 * variance, variance) == 1.0


def test_mp_mean_equals_the_variance_and_density_vanishes_off_support():
    mean, _ = integrate.quad(lambda x: x * mp_density(x, 2.0), 0.0, 8.0, limit=200)
    assert mean == pytest.approx(2.0, abs=1e-7)
    np.testing.assert_array_equal(mp_density(np.array([-1.0, 0.0, 8.0, 9.0]), 2.0), 0.0)


def test_ks_distance_of_mp_midpoint_quantiles_is_half_a_step():
    # Eigenvalues at the MP quantiles (i - 1/2) / n miss the CDF by exactly 1/(2n).
    n = 50
    targets = (np.arange(1, n + 1) - 0.5) / n
    grid = np.linspace(0.0, 4.0, 400_001)
    quantiles = np.interp(targets, mp_cdf(grid), grid)
    assert ks_distance_to_mp(quantiles[::-1]) == pytest.approx(0.5 / n, abs=1e-6)
    assert ks_distance_to_mp(np.full(n, 10.0)) == pytest.approx(1.0)


def test_wishart_matrix_is_close_to_mp_and_scaling_matters():
    g = np.random.default_rng(3).standard_normal((500, 500))
    lam = gram_eigenvalues(g)
    assert ks_distance_to_mp(lam, 1.0) < 0.02
    assert ks_distance_to_mp(2.0 * lam, 2.0) < 0.02
    assert ks_distance_to_mp(lam, 2.0) > 0.2  # the wrong variance is detected


def test_normalized_activation_follows_mp_and_raw_ones_do_not():
    z = gaussian_preactivations(500, np.random.default_rng(0))
    for name, limit in [("normalized_tanh", 0.02), ("normalized_relu", 0.02)]:
        assert ks_distance_to_mp(gram_eigenvalues(reference_activation(name).f(z))) < limit
    relu = reference_activation("relu").f(z)
    assert ks_distance_to_mp(gram_eigenvalues(relu), 0.5) > 0.1
    # tanh is centred already; its linear part (alpha = E tanh' = 0.61) alone breaks MP.
    assert ks_distance_to_mp(gram_eigenvalues(np.tanh(z)), np.mean(np.tanh(z) ** 2)) > 0.1


def test_raw_relu_has_a_mean_spike_of_size_n_beta_squared():
    n = 400
    lam = gram_eigenvalues(np.maximum(gaussian_preactivations(n, np.random.default_rng(1)), 0))
    assert lam[-1] == pytest.approx(n / (2 * np.pi), rel=0.05)  # beta = 1/sqrt(2 pi)


def test_isometry_tables_rows_and_reproducibility():
    summary, eigs = isometry_tables(["relu", "tanh"], 60, [0, 1])
    assert len(summary) == 2 * 2 * 2 and len(eigs) == 8 * 60
    assert set(summary["variant"]) == {"raw", "normalized"}
    normalized = summary[summary["variant"] == "normalized"]
    np.testing.assert_allclose(normalized["mp_variance"], 1.0, atol=1e-12)
    relu = summary[(summary["variant"] == "raw") & (summary["activation"] == "relu")]
    np.testing.assert_allclose(relu["mp_variance"], 0.5, atol=1e-12)
    again, _ = isometry_tables(["relu", "tanh"], 60, [0, 1])
    np.testing.assert_array_equal(summary["ks_distance"], again["ks_distance"])


@pytest.mark.parametrize(
    "call, match",
    [
        (lambda: mp_cdf(1.0, 0.0), "MP variance"),
        (lambda: ks_distance_to_mp(np.array([])), "non-empty"),
        (lambda: gaussian_preactivations(1, np.random.default_rng(0)), "n must be"),
        (lambda: isometry_tables(["nope"], 10, [0]), "unknown activation .nope."),
    ],
)
def test_bad_input_raises(call, match):
    with pytest.raises(ValueError, match=match):
        call()
