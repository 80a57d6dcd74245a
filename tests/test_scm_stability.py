"""Fixed points and Jacobian eigenvalues against Straat & Biehl's analytic results."""

from __future__ import annotations

import numpy as np
import pytest

from galu.scm.odes import CommitteeODE, integrate, log_alpha_grid
from galu.scm.stability import analyse, find_fixed_point, flow_jacobian


@pytest.mark.parametrize("eta", [0.05, 0.5, 1.0, 1.9, 2.1, 3.0])
def test_perceptron_fixed_point_and_eigenvalues(eta: float) -> None:
    ode = CommitteeODE(1, 1, "relu", eta, eta2_term=True)
    np.testing.assert_allclose(ode.rhs(0.0, np.array([1.0, 1.0])), 0.0, atol=1e-12)
    result = analyse(ode, np.array([1.0, 1.0]))
    expected = np.sort([-eta / 2, eta**2 / 2 - eta])[::-1]
    np.testing.assert_allclose(result.eigenvalues, expected, atol=1e-6)
    # and the whole Jacobian: d(dR)/dR = -eta/2, d(dR)/dQ = 0, d(dQ)/dR = eta - eta^2
    exact = [[-eta / 2, 0.0], [eta - eta**2, eta**2 / 2 - eta]]
    np.testing.assert_allclose(result.flow_jacobian, exact, atol=1e-6)


def test_fixed_point_is_found_from_a_nearby_start() -> None:
    ode = CommitteeODE(1, 1, "relu", 0.5, eta2_term=True)
    np.testing.assert_allclose(find_fixed_point(ode, np.array([0.8, 0.9])), [1.0, 1.0], atol=1e-8)


def test_jacobian_matches_central_differences_inside_the_realizable_set() -> None:
    ode = CommitteeODE(2, 2, "erf", 0.3, eta2_term=True)
    y = np.array([0.3, 0.1, 0.05, 0.4, 0.5, 0.05, 0.6])
    h = 1e-4
    columns = [(ode.rhs(0, y + h * e) - ode.rhs(0, y - h * e)) / (2 * h) for e in np.eye(7)]
    np.testing.assert_allclose(flow_jacobian(ode, y, step=1e-5), np.stack(columns, 1), atol=1e-7)


def test_relu_two_unit_plateau_has_one_unstable_specializing_direction() -> None:
    ode = CommitteeODE(2, 2, "relu", 1.0, eta2_term=False)
    alpha = log_alpha_grid(15.0, 40, 0.1)
    traj = integrate(ode, 1e-3 * np.eye(2), np.diag([0.2, 0.3]), alpha, method="LSODA")
    start = traj.y[-1].copy()  # on the plateau; symmetrize it
    start[:4] = start[:4].mean()
    start[[4, 6]] = start[[4, 6]].mean()
    point = find_fixed_point(ode, start)
    # the paper: R ~ 0.52 on the plateau, one positive eigenvalue 0.24 (per unit eta)
    np.testing.assert_allclose(point[:4], point[0], atol=1e-9)
    assert point[0] == pytest.approx(0.5246, abs=1e-3)
    result = analyse(ode, point)
    assert np.sum(result.eigenvalues.real > 1e-6) == 1
    assert result.eigenvalues[0] == pytest.approx(0.2392, abs=1e-3)
    np.testing.assert_allclose(
        result.eigenvectors[:, 0], [0.5, -0.5, -0.5, 0.5, 0, 0, 0], atol=1e-6
    )
    # the small-eta flow is eta times a fixed field: eigenvalues scale with eta
    slow = analyse(CommitteeODE(2, 2, "relu", 0.25, eta2_term=False), point)
    np.testing.assert_allclose(slow.eigenvalues, 0.25 * result.eigenvalues, atol=1e-7)
