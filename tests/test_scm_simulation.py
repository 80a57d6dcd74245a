"""Finite-N on-line SGD: exact initial overlaps, reproducibility, agreement with the ODE."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from galu.scm.odes import CommitteeODE, integrate
from galu.scm.simulation import initial_weights, record_steps, simulate, simulate_etas


def test_initial_weights_have_exactly_the_requested_overlaps() -> None:
    R0 = np.array([[1e-3, 0.0], [0.0, 1e-3], [0.2, -0.1]])
    Q0 = np.array([[0.2, 0.0, 0.01], [0.0, 0.3, 0.0], [0.01, 0.0, 0.25]])
    B, J = initial_weights(R0, Q0, 300, np.random.default_rng(0))
    np.testing.assert_allclose(B @ B.T / 300, np.eye(2), atol=1e-13)
    np.testing.assert_allclose(J @ B.T / 300, R0, atol=1e-13)
    np.testing.assert_allclose(J @ J.T / 300, Q0, atol=1e-13)
    with pytest.raises(ValueError, match="not realizable"):
        initial_weights(np.array([[0.9]]), np.array([[0.25]]), 50, np.random.default_rng(0))


def test_record_steps_round_alpha_to_whole_steps() -> None:
    np.testing.assert_array_equal(
        record_steps(np.array([0, 0.001, 0.5, 0.5004, 2]), 1000), [0, 1, 500, 2000]
    )
    with pytest.raises(ValueError, match="non-decreasing"):
        record_steps(np.array([1.0, 0.5]), 100)


def test_a_seed_gives_the_same_run_alone_or_in_a_batch() -> None:
    kwargs = dict(
        K=2,
        M=2,
        activation="erf",
        eta=0.5,
        R0=1e-3 * np.eye(2),
        Q0=np.diag([0.2, 0.3]),
        N=60,
        alpha=np.array([0.0, 1.0, 2.0]),
        n_test=50,
    )
    alone = simulate(seeds=[7], **kwargs)
    batch = simulate(seeds=[3, 7], **kwargs)
    again = simulate(seeds=[7], **kwargs)
    np.testing.assert_allclose(batch.R[1], alone.R[0], atol=1e-12)
    np.testing.assert_array_equal(again.Q, alone.Q)
    np.testing.assert_array_equal(again.eps_g_measured, alone.eps_g_measured)
    assert not np.allclose(batch.R[0], batch.R[1])
    np.testing.assert_allclose(alone.R[0, 0], 1e-3 * np.eye(2), atol=1e-13)  # alpha = 0


def test_perceptron_simulation_agrees_with_the_ode_within_seed_spread() -> None:
    eta, N = 0.5, 500
    alpha = np.array([0.0, 2.0, 5.0, 10.0, 20.0])
    sim = simulate(
        1,
        1,
        "relu",
        eta,
        np.zeros((1, 1)),
        np.full((1, 1), 0.25),
        N,
        alpha,
        seeds=list(range(6)),
        n_test=4000,
        dtype=torch.float64,
    )
    ode = integrate(CommitteeODE(1, 1, "relu", eta, True), [[0.0]], [[0.25]], alpha)
    for name, values, exact in [
        ("R", sim.R[..., 0, 0], ode.y[:, 0]),
        ("Q", sim.Q[..., 0, 0], ode.y[:, 1]),
        ("eps_g", sim.eps_g_theory, ode.eps_g),
    ]:
        mean, spread = values.mean(0), values.std(0, ddof=1)
        # finite-size bias is O(1/N); allow 4 standard errors of the seed mean plus that
        bound = 4 * spread / np.sqrt(values.shape[0]) + 2.0 / N
        assert np.all(np.abs(mean - exact) <= bound), name
    # eps_g measured on held-out inputs tracks the closed form in (R, Q)
    rel = np.abs(sim.eps_g_measured - sim.eps_g_theory) / sim.eps_g_theory
    assert rel[:, :4].max() < 0.15
    assert sim.eps_g_theory[:, -1].mean() < 0.05 * sim.eps_g_theory[:, 0].mean()


def test_bad_arguments_raise() -> None:
    args = (1, 1, "relu", 0.1, np.zeros((1, 1)), np.full((1, 1), 0.25), 50, np.array([0.0, 1.0]))
    with pytest.raises(ValueError, match="seeds must be a non-empty list of distinct integers"):
        simulate(*args, seeds=[1, 1])
    with pytest.raises(ValueError, match="activation must be one of"):
        simulate(1, 1, "tanh", *args[3:], seeds=[1])
    with pytest.raises(ValueError, match=r"R0 must be \(2, 1\)"):
        simulate(2, 1, *args[2:], seeds=[1])


@pytest.mark.parametrize("activation", ["relu", "erf"])
def test_etas_run_together_give_each_eta_its_own_run_bit_for_bit(activation: str) -> None:
    # Two constant etas and a schedule in one batch; blocks of 16 straddle the records.
    kwargs = dict(
        K=2,
        M=2,
        activation=activation,
        R0=1e-3 * np.eye(2),
        Q0=np.diag([0.2, 0.3]),
        N=60,
        alpha=np.array([0.0, 0.5, 1.0, 3.0]),
        seeds=[3, 7],
        n_test=50,
        block=16,
    )
    etas = [0.5, 1.5, lambda a: 0.8 if a < 1.0 else 0.3]
    together = simulate_etas(etas=etas, **kwargs)
    for eta, run in zip(etas, together, strict=True):
        alone = simulate(eta=eta, **kwargs)
        for field in ("alpha", "R", "Q", "eps_g_theory", "eps_g_measured"):
            np.testing.assert_array_equal(getattr(run, field), getattr(alone, field))
    assert not np.allclose(together[0].R[:, -1], together[1].R[:, -1])
    with pytest.raises(ValueError, match="at least one"):
        simulate_etas(etas=[], **kwargs)
    with pytest.raises(ValueError, match="eta must be"):
        simulate_etas(etas=[0.5, -1.0], **kwargs)
