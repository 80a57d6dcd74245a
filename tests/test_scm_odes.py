"""Order-parameter ODEs: vectorized vs plain loops, closed forms, plateaus, integration."""

from __future__ import annotations

import numpy as np
import pytest

from galu.scm.loop_reference import loop_eps_g, loop_rhs
from galu.scm.odes import (
    CommitteeODE,
    generalization_error,
    integrate,
    log_alpha_grid,
    pack,
    state_labels,
    unpack,
)


def random_state(rng: np.random.Generator, K: int, M: int) -> tuple[np.ndarray, np.ndarray]:
    """Overlaps of random students with an orthonormal teacher (a realizable state)."""
    B = np.linalg.qr(rng.standard_normal((12, M)))[0].T
    J = 0.6 * rng.standard_normal((K, 12))
    return J @ B.T, J @ J.T


@pytest.mark.parametrize("activation", ["relu", "erf"])
@pytest.mark.parametrize(("K", "M"), [(1, 1), (2, 2), (3, 2), (2, 3)])
def test_vectorized_rhs_equals_plain_loops(activation: str, K: int, M: int) -> None:
    rng = np.random.default_rng(K * 10 + M)
    R, Q = random_state(rng, K, M)
    for eta2_term in (False, True):
        ode = CommitteeODE(K, M, activation, 0.7, eta2_term)
        dR, dQ = loop_rhs(R, Q, activation, 0.7, eta2_term)
        # the loop takes the quadruple with repeated gates through the 4-unit integral (~1e-9)
        tol = 1e-7 if (eta2_term and activation == "relu") else 1e-13
        np.testing.assert_allclose(ode.rhs(0.0, pack(R, Q)), pack(dR, dQ), rtol=0, atol=tol)
    assert ode.eps_g(pack(R, Q)) == pytest.approx(loop_eps_g(R, Q, activation), abs=1e-14)


def test_perceptron_rhs_is_the_papers_closed_form() -> None:
    # Straat & Biehl, K = M = 1 with the eta^2 term (notes/scm-gaussian-averages.md)
    for R, Q, eta in [(0.3, 0.5, 0.9), (0.0, 0.25, 0.1), (0.9, 1.1, 1.9)]:
        rho = R / np.sqrt(Q)
        A = 0.25 + np.arcsin(rho) / (2 * np.pi) + R * np.sqrt(Q - R**2) / (2 * np.pi * Q)
        B = np.sqrt(Q - R**2) / (2 * np.pi) + R * np.arcsin(rho) / (2 * np.pi) + R / 4
        expected = [eta * (A - R / 2), 2 * eta * (B - Q / 2) + eta**2 * (A - 2 * B + Q / 2)]
        ode = CommitteeODE(1, 1, "relu", eta, eta2_term=True)
        np.testing.assert_allclose(ode.rhs(0.0, np.array([R, Q])), expected, atol=1e-12)


def test_small_eta_form_is_the_exact_form_without_its_eta_squared_part() -> None:
    R, Q = random_state(np.random.default_rng(3), 3, 2)
    y = pack(R, Q)
    exact = [CommitteeODE(3, 2, "relu", eta, True).rhs(0.0, y) for eta in (0.5, 1.0)]
    small = [CommitteeODE(3, 2, "relu", eta, False).rhs(0.0, y) for eta in (0.5, 1.0)]
    # exact(eta) = small(eta) + eta^2 N: the remainder scales as eta^2, Q entries only
    noise = [(e - s) / eta**2 for e, s, eta in zip(exact, small, (0.5, 1.0), strict=True)]
    np.testing.assert_allclose(noise[0], noise[1], atol=1e-12)
    assert np.all(noise[0][:6] == 0) and np.all(noise[0][6:][[0, 3, 5]] > 0)
    np.testing.assert_allclose(small[1], 2 * small[0], atol=1e-14)


def test_packing_round_trip_and_labels() -> None:
    R = np.arange(6.0).reshape(3, 2)
    Q = np.array([[1.0, 0.2, 0.3], [0.2, 2.0, 0.4], [0.3, 0.4, 3.0]])
    y = pack(R, Q)
    np.testing.assert_array_equal(y, [0, 1, 2, 3, 4, 5, 1.0, 0.2, 0.3, 2.0, 0.4, 3.0])
    R2, Q2 = unpack(y, 3, 2)
    np.testing.assert_array_equal(R2, R)
    np.testing.assert_array_equal(Q2, Q)
    assert state_labels(2, 2) == ["R_1_1", "R_1_2", "R_2_1", "R_2_2", "Q_1_1", "Q_1_2", "Q_2_2"]


def test_eps_g_vanishes_for_the_teacher_and_is_closed_form_for_an_orthogonal_student() -> None:
    assert generalization_error(np.eye(2), np.eye(2), "relu") == pytest.approx(0, abs=1e-15)
    assert generalization_error(np.eye(2), np.eye(2), "erf") == pytest.approx(0, abs=1e-15)
    # K = M = 1, R = 0: eps = (<relu^2>_Q + <relu^2>_1)/2 - <relu>_Q <relu>_1
    Q = 0.25
    expected = (Q / 2 + 1 / 2) / 2 - np.sqrt(Q) / (2 * np.pi)
    assert generalization_error(np.zeros((1, 1)), [[Q]], "relu") == pytest.approx(expected)


def test_erf_two_units_show_the_symmetric_plateau() -> None:
    # Saad & Solla: from a nearly symmetric start the students first agree with both teachers
    # equally (R_in all equal), eps_g stalls, then they specialize and eps_g -> 0
    ode = CommitteeODE(2, 2, "erf", 0.5, eta2_term=False)
    alpha = log_alpha_grid(2000.0, 120, 0.1)
    traj = integrate(ode, 1e-3 * np.eye(2), np.diag([0.2, 0.3]), alpha, method="LSODA")
    R = traj.y[:, :4]
    plateau = (alpha > 15) & (alpha < 60)
    spread = R[plateau].max(axis=1) - R[plateau].min(axis=1)
    assert spread.max() < 0.02 and R[plateau].mean() == pytest.approx(0.42, abs=0.02)
    eps = traj.eps_g[plateau]
    assert eps.max() - eps.min() < 0.05 * eps.mean() and 0.005 < eps.mean() < 0.02
    assert traj.eps_g[-1] < 1e-8
    np.testing.assert_allclose(traj.y[-1], [1, 0, 0, 1, 1, 0, 1], atol=1e-4)


def test_integrate_reports_on_the_requested_grid_and_rejects_bad_arguments() -> None:
    ode = CommitteeODE(1, 1, "relu", 0.1)
    alpha = log_alpha_grid(150.0, 40, 0.5)
    traj = integrate(ode, [[0.0]], [[0.25]], alpha)
    np.testing.assert_array_equal(traj.alpha, alpha)
    assert traj.y.shape == (40, 2) and traj.labels == ["R_1_1", "Q_1_1"]
    assert traj.y[-1] == pytest.approx([1.0, 1.0], abs=2e-3)  # e^(-eta alpha / 2) ~ 6e-4
    assert np.all(np.diff(traj.eps_g) < 0)  # the perceptron learns monotonically here
    with pytest.raises(ValueError, match="method must be one of"):
        integrate(ode, [[0.0]], [[0.25]], alpha, method="Euler")
    with pytest.raises(ValueError, match="not realizable"):
        integrate(ode, [[0.6]], [[0.25]], alpha)  # R^2 > Q
    with pytest.raises(ValueError, match="alpha must be a 1-D increasing grid starting at 0"):
        integrate(ode, [[0.0]], [[0.25]], alpha[1:])
    with pytest.raises(ValueError, match="eta must be a finite number > 0"):
        CommitteeODE(1, 1, "relu", -0.1)
    with pytest.raises(ValueError, match="activation must be one of"):
        CommitteeODE(1, 1, "sigmoid", 0.1)
