"""Finite-N on-line SGD: exact initial overlaps, reproducibility, agreement with the ODE,
resumption from a checkpoint."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch

from galu.checkpoints import Checkpoint
from galu.scm.odes import CommitteeODE, integrate
from galu.scm.simulation import (
    initial_weights,
    record_steps,
    simulate,
    simulate_etas,
)


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


def _straddling(activation: str) -> dict:
    """A K = M = 2 run of 180 steps, recorded at steps 0, 30, 60 and 180, in blocks of 16."""
    return dict(
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


@pytest.mark.parametrize("activation", ["relu", "erf"])
def test_etas_run_together_give_each_eta_its_own_run_bit_for_bit(activation: str) -> None:
    # Two constant etas and a schedule in one batch; blocks of 16 straddle the records.
    kwargs = _straddling(activation)
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


class _Killed(Exception):
    """Stands for a kill: raised by the checkpoint below after a given number of saves."""


class _KilledAfter(Checkpoint):
    def __init__(self, path: Path, saves: int) -> None:
        super().__init__(path, key="job", every_s=0.0)  # due after every block
        self.saves = saves

    def save(self, state: dict) -> None:
        super().save(state)
        self.saves -= 1
        if self.saves == 0:
            raise _Killed


@pytest.mark.parametrize("kill_after", [1, 4, 7])
def test_a_killed_simulation_resumes_from_its_checkpoint_bit_for_bit(
    tmp_path: Path, kill_after: int, caplog: pytest.LogCaptureFixture
) -> None:
    # Blocks of 16 straddle the records; a schedule and a constant eta advance together.
    kwargs = {**_straddling("relu"), "etas": [0.5, lambda a: 0.8 if a < 1.0 else 0.3]}
    straight = simulate_etas(**kwargs)
    # 180 steps recorded at 0, 30, 60, 180: blocks of 16 end early at each record
    ends = [16, 30, 46, 60, 76, 92, 108, 124, 140, 156, 172, 180]
    path = tmp_path / "sim.pt"
    with pytest.raises(_Killed):
        simulate_etas(**kwargs, checkpoint=_KilledAfter(path, kill_after))
    assert torch.load(path, weights_only=True)["state"]["done"] == ends[kill_after - 1]
    counter = Checkpoint(path, key="job", every_s=0.0)
    saves = []
    counter.save = lambda state: saves.append(state["done"])  # type: ignore[method-assign]
    with caplog.at_level("INFO", logger="galu.checkpoints"):
        resumed = simulate_etas(**kwargs, checkpoint=counter)
    assert "resuming from checkpoint" in caplog.text
    # the resumed attempt ran only the blocks after the checkpoint (and saved the end state)
    assert saves == ends[kill_after:] + [180]
    for run, again in zip(straight, resumed, strict=True):
        for field in ("alpha", "R", "Q", "eps_g_theory", "eps_g_measured"):
            np.testing.assert_array_equal(getattr(again, field), getattr(run, field))


def test_another_jobs_checkpoint_is_ignored(tmp_path: Path) -> None:
    kwargs = dict(
        K=1, M=1, activation="erf", etas=[0.5], R0=np.array([[0.1]]), Q0=np.array([[0.2]]),
        N=40, alpha=np.array([0.0, 1.0, 2.0]), seeds=[1], n_test=20, block=8,
    )  # fmt: skip
    path = tmp_path / "sim.pt"
    with pytest.raises(_Killed):
        simulate_etas(**kwargs, checkpoint=_KilledAfter(path, 3))
    other = Checkpoint(path, key="another job", every_s=1e9)
    assert other.load() is None
    fresh = simulate_etas(**kwargs, checkpoint=other)[0]
    np.testing.assert_array_equal(fresh.R, simulate_etas(**kwargs)[0].R)
    assert torch.load(path, weights_only=True)["key"] == "another job"  # replaced at the end


def test_a_checkpoint_of_another_shape_is_refused(tmp_path: Path) -> None:
    kwargs = dict(
        K=1, M=1, activation="erf", etas=[0.5], R0=np.array([[0.1]]), Q0=np.array([[0.2]]),
        N=40, alpha=np.array([0.0, 1.0]), n_test=20, block=8,
    )  # fmt: skip
    with pytest.raises(_Killed):
        simulate_etas(**kwargs, seeds=[1], checkpoint=_KilledAfter(tmp_path / "sim.pt", 1))
    with pytest.raises(ValueError, match="does not match"):
        simulate_etas(**kwargs, seeds=[1, 2], checkpoint=Checkpoint(tmp_path / "sim.pt", "job"))
