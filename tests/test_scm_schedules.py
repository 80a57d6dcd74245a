"""Learning-rate schedules from the exact-eta ODEs: structure, greedy law, measures."""

from __future__ import annotations

import math

import numpy as np
import pytest

from galu.scm.odes import CommitteeODE, integrate, log_alpha_grid, pack
from galu.scm.schedules import (
    alpha_to,
    constant_law,
    eps_gradient,
    greedy_eta,
    greedy_law,
    integrate_law,
    rate_coefficients,
    schedule_function,
)
from galu.scm.simulation import simulate


def random_state(rng: np.random.Generator, K: int, M: int) -> np.ndarray:
    """Packed overlaps of a random student with an orthonormal teacher (interior state)."""
    B = np.linalg.qr(rng.standard_normal((12, M)))[0].T
    J = 0.6 * rng.standard_normal((K, 12))
    return pack(J @ B.T, J @ J.T)


@pytest.mark.parametrize("activation", ["relu", "erf"])
@pytest.mark.parametrize(("K", "M"), [(1, 1), (2, 2), (3, 2)])
def test_rhs_is_eta_a_plus_eta_squared_b(activation: str, K: int, M: int) -> None:
    y = random_state(np.random.default_rng(K + 7 * M), K, M)
    a, b = CommitteeODE(K, M, activation, 1.0).parts(y)
    assert np.all(b[: K * M] == 0)  # dR/dalpha has no eta^2 term
    for eta in (0.1, 0.7, 2.3):
        exact = CommitteeODE(K, M, activation, eta).rhs(0.0, y)
        small = CommitteeODE(K, M, activation, eta, eta2_term=False).rhs(0.0, y)
        np.testing.assert_allclose(exact, eta * a + eta**2 * b, rtol=1e-12, atol=1e-14)
        np.testing.assert_allclose(small, eta * a, rtol=1e-12, atol=1e-14)
    # the diagonal noise <delta_i^2> is a mean of squares: positive
    iu = np.triu_indices(K)
    assert np.all(b[K * M :][iu[0] == iu[1]] > 0)


def test_greedy_eta_vertex_clip_and_concave_cases() -> None:
    assert greedy_eta(-1.0, 0.25, 0.01, 5.0) == pytest.approx(2.0)  # vertex -c1 / (2 c2)
    assert greedy_eta(-1.0, 0.25, 0.01, 1.5) == 1.5  # clipped above
    assert greedy_eta(1.0, 0.25, 0.01, 1.5) == 0.01  # error rises for every eta
    assert greedy_eta(-1.0, -0.1, 0.01, 3.0) == 3.0  # concave: the far end wins
    assert greedy_eta(0.5, -0.1, 0.01, 3.0) == 0.01  # 0.5 e - 0.1 e^2 is least at e = 0.01
    with pytest.raises(ValueError, match="eta_min"):
        greedy_eta(-1.0, 1.0, 0.0, 1.0)


@pytest.mark.parametrize("r", [0.2, 0.5, 0.8])
def test_perceptron_greedy_eta_is_one_on_the_aligned_line(r: float) -> None:
    # J = r B: R = r, Q = r^2, x = r y, delta = (1 - r) y 1{y > 0}; with d eps/dR = -1/2 and
    # d eps/dQ = 1/4 there, d eps/d alpha = -eta (1 - r)^2 / 4 + eta^2 (1 - r)^2 / 8: eta* = 1.
    # (Q is nudged off the singular line, where central differences stay realizable: ~0.5 %.)
    ode = CommitteeODE(1, 1, "relu", 1.0)
    y = np.array([r, r * r + 1e-7])
    c1, c2 = rate_coefficients(ode, y)
    assert c1 == pytest.approx(-((1 - r) ** 2) / 4, rel=1e-2)
    assert c2 == pytest.approx((1 - r) ** 2 / 8, rel=1e-2)
    assert greedy_eta(c1, c2, 0.01, 3.0) == pytest.approx(1.0, rel=1e-2)


def test_eps_gradient_matches_a_closed_form_for_the_perceptron() -> None:
    # eps_g = Q/4 + 1/4 - f, f = (sqrt(Q - R^2) + (pi - theta) R) / (2 pi), cos theta = R/sqrt Q
    R, Q = 0.3, 0.5
    theta = math.acos(R / math.sqrt(Q))
    d_R = -(math.pi - theta) / (2 * math.pi)
    d_Q = 0.25 - math.sqrt(Q - R * R) / (4 * math.pi * Q)
    grad = eps_gradient(CommitteeODE(1, 1, "relu", 1.0), np.array([R, Q]))
    np.testing.assert_allclose(grad, [d_R, d_Q], rtol=1e-7)


@pytest.mark.parametrize(("K", "M", "activation"), [(2, 2, "relu"), (3, 2, "relu"), (2, 2, "erf")])
def test_greedy_rate_beats_every_constant_eta_on_a_grid(K: int, M: int, activation: str) -> None:
    rng = np.random.default_rng(3 * K + M)
    for _ in range(3):
        y = random_state(rng, K, M)
        flow = CommitteeODE(K, M, activation, 1.0)
        grad = eps_gradient(flow, y)
        eta = greedy_law(flow, 0.05, 3.0)(0.0, y, flow.parts(y))
        best = grad @ CommitteeODE(K, M, activation, eta).rhs(0.0, y)
        for other in np.linspace(0.05, 3.0, 60):
            rate = grad @ CommitteeODE(K, M, activation, float(other)).rhs(0.0, y)
            assert best <= rate + 1e-12


def test_constant_law_reproduces_the_constant_eta_trajectory() -> None:
    R0, Q0 = np.array([[1e-3, 0.0], [0.0, 1e-3]]), np.array([[0.2, 0.0], [0.0, 0.3]])
    grid = log_alpha_grid(30.0, 20, 0.1)
    ode = CommitteeODE(2, 2, "relu", 0.5)
    reference = integrate(ode, R0, Q0, grid, rtol=1e-10, atol=1e-12)
    scheduled = integrate_law(ode, constant_law(0.5), R0, Q0, grid, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(scheduled.trajectory.y, reference.y, rtol=0, atol=1e-8)
    assert np.all(scheduled.eta == 0.5)


def test_greedy_eta_is_one_along_the_perceptron_run_and_diverging_runs_stop() -> None:
    ode = CommitteeODE(1, 1, "relu", 1.0)
    grid = log_alpha_grid(5.0, 10, 0.1)
    run = integrate_law(ode, greedy_law(ode, 0.01, 3.0), [[0.5]], [[0.26]], grid)
    assert np.all(np.diff(run.trajectory.eps_g) < 0)
    assert np.all((run.eta > 0.5) & (run.eta < 2.0))
    # a constant eta far above eta_c = 2 blows up: the run stops, eps_g = inf afterwards
    wild = integrate_law(ode, constant_law(6.0), [[0.5]], [[0.26]], log_alpha_grid(50, 20, 0.1))
    assert np.isinf(wild.trajectory.eps_g[-1]) and np.isnan(wild.eta[-1])


def test_alpha_to_interpolates_in_log_eps() -> None:
    alpha = np.array([0.0, 1.0, 2.0, 3.0, 4.0])
    eps = np.array([0.5, 0.1, 0.1, 0.01, 0.001])
    assert alpha_to(alpha, eps, 0.5) == 0.0
    assert alpha_to(alpha, eps, 0.1) == 1.0
    assert alpha_to(alpha, eps, math.sqrt(0.1 * 0.01)) == pytest.approx(2.5)  # log-linear
    assert alpha_to(alpha, eps, 1e-4) == math.inf


def test_schedule_function_interpolates_and_checks() -> None:
    f = schedule_function(np.array([0.0, 1.0, 2.0]), np.array([1.0, 0.5, 0.5]))
    assert f(0.5) == pytest.approx(0.75) and f(10.0) == 0.5
    with pytest.raises(ValueError, match="finite"):
        schedule_function(np.array([0.0, 1.0]), np.array([1.0, 0.0]))


def test_simulation_with_a_constant_schedule_equals_the_constant_eta() -> None:
    R0, Q0 = np.array([[0.0]]), np.array([[0.25]])
    grid = np.array([0.0, 0.5, 1.0])
    fixed = simulate(1, 1, "relu", 0.5, R0, Q0, 50, grid, [0, 1], n_test=20, block=7)
    sched = simulate(1, 1, "relu", lambda a: 0.5, R0, Q0, 50, grid, [0, 1], n_test=20, block=7)
    assert np.array_equal(fixed.R, sched.R) and np.array_equal(fixed.Q, sched.Q)
    # a schedule that switches to eta = 0.5 at alpha = 0.5 matches the constant run up to there
    late = simulate(1, 1, "relu", lambda a: 0.1 if a >= 0.5 else 0.5, R0, Q0, 50, grid, [0, 1],
                    n_test=20, block=7)  # fmt: skip
    assert np.array_equal(late.R[:, :2], fixed.R[:, :2])
    assert not np.allclose(late.R[:, 2], fixed.R[:, 2])
    with pytest.raises(ValueError, match="schedule"):
        simulate(1, 1, "relu", lambda a: -1.0, R0, Q0, 50, grid, [0], n_test=20)


def test_the_schedules_figure_draws_the_papers_seven_constant_rates_in_distinct_colours():
    """config/paper.yaml has 7 constant etas plus 2 schedules: more curves than the style's
    8 colours (a paper-only path that crashed before the paper-cpu slice)."""
    import matplotlib.colors as mcolors
    import pandas as pd

    from galu.scm.figures import draw_schedules

    etas = [0.25, 0.5, 0.625, 0.75, 0.875, 1.0, 1.25]
    curves = [("constant", e) for e in etas] + [
        ("greedy", float("nan")),
        ("greedy_floor", float("nan")),
    ]
    rows = [
        {"setting": "relu_k2m2", "schedule": s, "constant_eta": e, "source": "ode",
         "alpha": a, "eps_g": 0.1 / a, "eta": 0.5}
        for s, e in curves for a in (1.0, 10.0)
    ]  # fmt: skip
    summary = pd.DataFrame(
        [{"setting": "relu_k2m2", "best_constant_eta": 0.875, "eps_target": 1e-3, "eps_exit": 0.02}]
    )
    fig = draw_schedules({"schedules": summary, "schedule_runs": pd.DataFrame(rows)}, scale="paper")
    drawn = [mcolors.to_hex(line.get_color()) for line in fig.axes[0].get_lines()[: len(curves)]]
    assert len(set(drawn)) == len(curves) == 9
