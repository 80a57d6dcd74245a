"""Gaussian averages of the SCM ODEs against Monte Carlo, quadrature and special cases."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import special

from galu.scm.averages import (
    gate_pair_average,
    pair_average,
    quad_average,
    relu_pair_entries,
    triple_average,
)
from galu.scm.relu_quadruple import path_rule, relu_gate_pair, relu_quad
from galu.scm.transfer import g, g_prime

MC_SAMPLES = 1_000_000


def random_cov(rng: np.random.Generator, n: int, rank: int | None = None) -> np.ndarray:
    """A random covariance (n, n); singular when ``rank < n``."""
    W = rng.standard_normal((n, rank or n + 1))
    return W @ W.T / W.shape[1]


def monte_carlo(cov: np.ndarray, fn, rng: np.random.Generator) -> tuple[float, float]:
    """Mean and standard error of ``fn(z)`` for ``z ~ N(0, cov)``."""
    evals, evecs = np.linalg.eigh(cov)
    z = rng.standard_normal((MC_SAMPLES, len(cov))) @ (evecs * np.sqrt(np.clip(evals, 0, None))).T
    values = fn(z)
    return float(values.mean()), float(values.std() / np.sqrt(MC_SAMPLES))


def products(kind: str, activation: str):
    """The integrand of the pair, triple, quad or gate-pair average."""
    f = lambda x: g(x, activation)
    df = lambda x: g_prime(x, activation)
    return {
        "pair": lambda z: f(z[:, 0]) * f(z[:, 1]),
        "triple": lambda z: df(z[:, 0]) * z[:, 1] * f(z[:, 2]),
        "quad": lambda z: df(z[:, 0]) * df(z[:, 1]) * f(z[:, 2]) * f(z[:, 3]),
        "gate": lambda z: df(z[:, 0]) ** 2 * f(z[:, 1]) * f(z[:, 2]),
    }[kind]


AVERAGES = {
    "pair": (pair_average, 2),
    "triple": (triple_average, 3),
    "quad": (quad_average, 4),
    "gate": (gate_pair_average, 3),
}


@pytest.mark.parametrize("activation", ["relu", "erf"])
@pytest.mark.parametrize("kind", ["pair", "triple", "quad", "gate"])
def test_average_matches_monte_carlo(kind: str, activation: str) -> None:
    rng = np.random.default_rng(100 + 7 * len(kind) + len(activation))
    fn, n = AVERAGES[kind]
    for _ in range(3):
        cov = random_cov(rng, n)
        mean, se = monte_carlo(cov, products(kind, activation), rng)
        assert abs(float(fn(cov, activation)) - mean) < 4 * se


@pytest.mark.parametrize("rank", [1, 2, 3])
def test_relu_quad_matches_monte_carlo_at_singular_covariances(rank: int) -> None:
    # repeated and linearly dependent units are what the ODEs feed in near fixed points;
    # non-negative mixtures of ``rank`` Gaussians keep P(all four > 0) away from 0
    rng = np.random.default_rng(rank)
    mix = rng.uniform(0.1, 1.0, (4, rank))
    mix[1] = mix[0]  # and one exact repeat
    cov = mix @ mix.T
    mean, se = monte_carlo(cov, products("quad", "relu"), rng)
    assert mean > 0.05
    assert abs(float(relu_quad(cov)) - mean) < 4 * se


def quadrature_reference(cov: np.ndarray, nodes: int = 48) -> float:
    """<theta theta relu relu> by tensor Gauss-Legendre over z1, z2, z3 > 0.

    z4 is integrated in closed form given (z1, z2, z3): E[relu(z4)] = m Phi(m/s) + s phi(m/s).
    """
    A, b = cov[:3, :3], cov[:3, 3]
    coef = np.linalg.solve(A, b)
    sd = np.sqrt(cov[3, 3] - b @ coef)
    length = 8 * np.sqrt(np.max(np.diag(A)))
    x, w = np.polynomial.legendre.leggauss(nodes)
    x, w = (x + 1) * length / 2, w * length / 2
    z = np.stack(np.meshgrid(x, x, x, indexing="ij"), axis=-1)
    weight = w[:, None, None] * w[None, :, None] * w[None, None, :]
    quad_form = np.einsum("...i,ij,...j->...", z, np.linalg.inv(A), z)
    density = np.exp(-0.5 * quad_form) / np.sqrt((2 * np.pi) ** 3 * np.linalg.det(A))
    m = z @ coef
    relu_mean = m * special.ndtr(m / sd) + sd * np.exp(-0.5 * (m / sd) ** 2) / np.sqrt(2 * np.pi)
    return float(np.sum(weight * density * z[..., 2] * relu_mean))


def test_relu_quad_matches_high_order_quadrature() -> None:
    rng = np.random.default_rng(7)
    for _ in range(4):
        cov = random_cov(rng, 4) + 0.3 * np.eye(4)
        assert relu_quad(cov) == pytest.approx(quadrature_reference(cov), abs=1e-9)


def gated_pair_closed_form(cov: np.ndarray) -> float:
    """<theta(a) relu(c) relu(d)> by Stein's lemma in c (independent of the path integral).

    C_ca <delta(a) theta(c) relu(d)> + C_cc <theta(a) delta(c) relu(d)> + C_cd P3(a, c, d),
    with <theta(u) relu(w)> = (S_wu / sqrt S_uu + sqrt S_ww) / (2 sqrt(2 pi)) given one unit = 0.
    """

    def given(i: int) -> np.ndarray:
        keep = [k for k in range(3) if k != i]
        return cov[np.ix_(keep, keep)] - np.outer(cov[keep, i], cov[keep, i]) / cov[i, i]

    def theta_relu(S: np.ndarray) -> float:
        return (S[1, 0] / np.sqrt(S[0, 0]) + np.sqrt(S[1, 1])) / (2 * np.sqrt(2 * np.pi))

    rho = lambda i, j: cov[i, j] / np.sqrt(cov[i, i] * cov[j, j])
    p3 = 1 / 8 + (np.arcsin(rho(0, 1)) + np.arcsin(rho(0, 2)) + np.arcsin(rho(1, 2))) / (4 * np.pi)
    return (
        cov[1, 0] / np.sqrt(2 * np.pi * cov[0, 0]) * theta_relu(given(0))
        + np.sqrt(cov[1, 1] / (2 * np.pi)) * theta_relu(given(1))
        + cov[1, 2] * p3
    )


def test_repeated_gate_reduces_to_gated_pair() -> None:
    rng = np.random.default_rng(11)
    for _ in range(20):
        W = rng.standard_normal((3, 3))
        cov3 = W @ W.T
        expected = gated_pair_closed_form(cov3)
        assert relu_gate_pair(cov3) == pytest.approx(expected, abs=1e-11)
        # the four-unit path integral on the repeated gate agrees to its own accuracy
        cov4 = W[[0, 0, 1, 2]] @ W[[0, 0, 1, 2]].T
        assert relu_quad(cov4) == pytest.approx(expected, abs=5e-9)


def test_special_cases_of_the_relu_quadruple() -> None:
    # one unit four times: <relu(z)^2> = C/2
    assert relu_quad(np.full((4, 4), 1.7)) == pytest.approx(0.85, abs=1e-9)
    assert relu_gate_pair(np.full((3, 3), 1.7)) == pytest.approx(0.85, abs=1e-12)
    # gates independent of the ReLUs: 1/4 <relu relu>
    cov = np.diag([1.0, 2.0, 0.5, 3.0])
    cov[0, 1] = cov[1, 0] = 0.0
    cov[2, 3] = cov[3, 2] = 0.9
    expected = relu_pair_entries(0.5, 0.9, 3.0) / 4
    assert relu_quad(cov) == pytest.approx(expected, abs=1e-12)
    # a gate that is minus a ReLU argument: theta(a) relu(-a) = 0
    W = np.random.default_rng(3).standard_normal((3, 3))
    V = np.stack([W[0], W[1], -W[0], W[2]])
    assert relu_quad(V @ V.T) == pytest.approx(0.0, abs=1e-10)


def test_perceptron_averages_match_the_closed_forms() -> None:
    # Straat & Biehl's K = M = 1 terms: <theta(x) relu(y)^2> = A and <theta(x) x relu(y)> = B
    R, Q = 0.6, 0.8
    rho = R / np.sqrt(Q)
    A = 0.25 + np.arcsin(rho) / (2 * np.pi) + R * np.sqrt(Q - R**2) / (2 * np.pi * Q)
    B = np.sqrt(Q - R**2) / (2 * np.pi) + R * np.arcsin(rho) / (2 * np.pi) + R / 4
    xy = np.array([[Q, R], [R, 1.0]])
    assert relu_gate_pair(xy[np.ix_([0, 1, 1], [0, 1, 1])]) == pytest.approx(A, abs=1e-12)
    assert triple_average(xy[np.ix_([0, 0, 1], [0, 0, 1])], "relu") == pytest.approx(B, abs=1e-14)
    assert pair_average(xy, "relu") == pytest.approx(B, abs=1e-14)


def test_relu_quad_is_continuous_at_a_singular_covariance() -> None:
    # splitting a repeated gate by Var = C11 (1 + gap) changes the average by c sqrt(gap)
    W = np.random.default_rng(5).standard_normal((4, 4))
    cov = W @ W.T
    cov[1], cov[:, 1] = cov[0], cov[:, 0]

    def at(gap: float) -> float:
        split = cov.copy()
        split[1, 1] = cov[0, 0] * (1 + gap)
        return float(relu_quad(split))

    slopes = [(at(gap) - at(0.0)) / np.sqrt(gap) for gap in (1e-4, 1e-6, 1e-8, 1e-10)]
    assert abs(slopes[0]) > 0.01
    assert np.ptp(slopes) < 0.02 * abs(slopes[0])


def test_path_rule_integrates_inverse_square_root() -> None:
    s, w = path_rule()
    assert w.sum() == pytest.approx(1.0, abs=1e-14)
    assert (w / np.sqrt(s)).sum() == pytest.approx(2.0, abs=1e-12)
    assert (w * np.log(s)).sum() == pytest.approx(-1.0, abs=1e-9)


def test_bad_inputs_raise() -> None:
    with pytest.raises(ValueError, match="activation must be one of"):
        pair_average(np.eye(2), "tanh")
    with pytest.raises(ValueError, match=r"cov must have shape \(\.\.\., 3, 3\)"):
        triple_average(np.eye(2), "relu")
    with pytest.raises(ValueError, match="panels must be >= 1"):
        path_rule(0, 8)
