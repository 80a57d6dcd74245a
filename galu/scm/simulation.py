"""Finite-N on-line SGD of a soft committee machine, vectorized across seeds.

The microscopic process behind the ODEs of :mod:`galu.scm.odes` (Straat & Biehl,
arXiv 1903.07378, Sec. 2 and Fig. 1): teacher rows ``B_n`` with
``B_n.B_m / N = delta_nm``, student rows ``J_i``, inputs ``xi ~ N(0, I_N)``, one
fresh example per step and

    ``J_i <- J_i + (eta / sqrt N) g'(x_i) (tau - sigma) xi``,  ``x_i = J_i.xi / sqrt N``,

which is SGD on ``(sigma - tau)^2 / 2`` and moves ``R`` and ``Q`` by O(1/N) per
step, so ``alpha = steps / N``. ReLU'(0) = 0.

The initial student has exactly the requested ``R0`` and ``Q0``: ``J = R0 B + L Z``
with ``Z`` orthonormal rows (times sqrt N) orthogonal to the teacher, made by
Gram-Schmidt (QR), and ``L L^T = Q0 - R0 R0^T``. All seeds advance together as
one batch; each seed draws from its own generators (its streams "init", "examples" and
"test", :func:`galu.seeding.derive_seed`), so a seed's trajectory does not depend on which
other seeds run beside it. Runs on any torch device; the examples and test inputs are
drawn by that device's generator (drawing N-dimensional examples on the CPU would undo a
GPU's gain), so a GPU run starts from the same students and teachers and then sees other
draws than a CPU run of the same seed: the same process, another sample
(tests/test_cuda.py).
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from galu.checkpoints import Checkpoint
from galu.device import torch_threads
from galu.progress import Throttle, log_progress
from galu.scm.odes import generalization_error
from galu.scm.transfer import check_activation, g, g_prime
from galu.seeding import derive_seed

Array = np.ndarray


@dataclass(frozen=True)
class SimulationResult:
    """Order parameters of ``len(seeds)`` runs at the recorded ``alpha`` (= steps / N).

    ``R`` (seeds, n, K, M), ``Q`` (seeds, n, K, K); ``eps_g_theory`` is the closed
    form in (R, Q), ``eps_g_measured`` the mean of ``(sigma - tau)^2 / 2`` over a
    fixed test set per seed that is never trained on.
    """

    alpha: Array
    seeds: tuple[int, ...]
    N: int
    R: Array
    Q: Array
    eps_g_theory: Array
    eps_g_measured: Array


def initial_weights(R0: Array, Q0: Array, N: int, rng: np.random.Generator) -> tuple[Array, Array]:
    """Teacher ``B`` (M, N) and student ``J`` (K, N) with ``J B^T/N = R0``, ``J J^T/N = Q0``.

    ``B B^T / N`` is the identity. Raises ValueError if ``Q0 - R0 R0^T`` is not
    positive semi-definite (no student has those overlaps) or ``N < K + M``.
    """
    R0, Q0 = np.asarray(R0, dtype=float), np.asarray(Q0, dtype=float)
    K, M = R0.shape
    if Q0.shape != (K, K):
        raise ValueError(f"Q0 must be ({K}, {K}) to match R0 {R0.shape}, got {Q0.shape}")
    if N < K + M:
        raise ValueError(f"N must be >= K + M = {K + M}, got {N}")
    residual = Q0 - R0 @ R0.T
    evals, evecs = np.linalg.eigh((residual + residual.T) / 2)
    if evals[0] < -1e-12:
        raise ValueError(
            "(R0, Q0) is not realizable: Q0 - R0 R0^T must be positive semi-definite, "
            f"its smallest eigenvalue is {evals[0]:.3g}"
        )
    # Gram-Schmidt on Gaussian rows: M teacher directions, then K orthogonal to them
    basis, _ = np.linalg.qr(rng.standard_normal((N, M + K)))
    rows = math.sqrt(N) * basis.T
    B, Z = rows[:M], rows[M:]
    L = evecs * np.sqrt(np.clip(evals, 0.0, None))
    return B, R0 @ B + L @ Z


def _seed_streams(seed: int) -> tuple[np.random.Generator, int, int]:
    """The initial weights' generator, and the seeds of the examples and of the test set."""
    return (
        np.random.default_rng(derive_seed(seed, "init")),
        derive_seed(seed, "examples"),
        derive_seed(seed, "test"),
    )


def record_steps(alpha: Array, N: int) -> Array:
    """Distinct step counts ``round(alpha N)``, increasing; raises on a bad grid."""
    alpha = np.asarray(alpha, dtype=float)
    if alpha.ndim != 1 or alpha.size == 0 or np.any(alpha < 0) or np.any(np.diff(alpha) < 0):
        raise ValueError("alpha must be a non-empty, non-decreasing 1-D grid of values >= 0")
    return np.unique(np.rint(alpha * N).astype(np.int64))


def simulate(
    K: int,
    M: int,
    activation: str,
    eta: float | Callable[[float], float],
    R0: Array,
    Q0: Array,
    N: int,
    alpha: Array,
    seeds: list[int],
    n_test: int = 1000,
    device: str = "cpu",
    dtype: torch.dtype = torch.float64,
    block: int = 512,
) -> SimulationResult:
    """Run on-line SGD for each seed and record R, Q and eps_g at ``alpha`` (rounded to steps).

    ``block`` examples per seed are drawn at once; the updates stay sequential.
    ``eta`` is a number or a schedule ``alpha -> eta`` (:mod:`galu.scm.schedules`),
    evaluated at ``alpha = step / N`` before each step.
    """
    return simulate_etas(
        K, M, activation, [eta], R0, Q0, N, alpha, seeds, n_test, device, dtype, block
    )[0]


def simulate_etas(
    K: int,
    M: int,
    activation: str,
    etas: Sequence[float | Callable[[float], float]],
    R0: Array,
    Q0: Array,
    N: int,
    alpha: Array,
    seeds: list[int],
    n_test: int = 1000,
    device: str = "cpu",
    dtype: torch.dtype = torch.float64,
    block: int = 512,
    checkpoint: Checkpoint | None = None,
) -> list[SimulationResult]:
    """:func:`simulate` for several learning rates or schedules, one result each, at once.

    A seed fixes the teacher, the initial student, the test set and the training inputs
    whatever the learning rate, so the runs of every ``eta`` share them: they are drawn
    once and the students of all etas advance together, one batch. Each run's numbers
    are those of :func:`simulate` with its eta alone (tested).

    With a ``checkpoint`` (:mod:`galu.checkpoints`) the state is saved every few minutes and
    a saved state is resumed from: the results are those of an uninterrupted run (tested).
    A progress line (alpha reached) goes to the log at most once a minute.
    """
    check_activation(activation)
    for eta in etas:
        _check_sim_args(1.0 if callable(eta) else eta, N, seeds, n_test, block)
    if len(etas) == 0:
        raise ValueError("etas must name at least one learning rate or schedule")
    if np.shape(R0) != (K, M) or np.shape(Q0) != (K, K):
        raise ValueError(
            f"R0 must be ({K}, {M}) and Q0 ({K}, {K}); got {np.shape(R0)}, {np.shape(Q0)}"
        )
    steps = record_steps(alpha, N)
    dev = torch.device(device)
    with _one_thread_on_cpu(dev):
        B, J0, test_x, gens = _setup(R0, Q0, N, seeds, n_test, dev, dtype)
        J = J0.expand(len(etas), *J0.shape).clone()  # (etas, S, K, N)
        test_tau = g(test_x @ B.transpose(1, 2) / math.sqrt(N), activation).sum(-1)  # (S, P)
        records: list[list[tuple[Array, Array, Array]]] = [[] for _ in etas]
        done = 0
        saved = checkpoint.load() if checkpoint is not None else None
        if saved is not None:
            done, records = _restore(saved, J, gens)
        progress = Throttle()
        for target in steps[len(records[0]) :]:  # the recordings a checkpoint holds are done
            while done < target:
                size = int(min(block, target - done))
                xi = torch.stack(
                    [torch.randn(size, N, generator=gen, device=dev, dtype=dtype) for gen in gens]
                )  # (S, size, N)
                rates = [_step_etas(e, done, size, N) if callable(e) else e for e in etas]
                _sgd_block(J, B, xi, activation, rates)
                done += size
                if progress():
                    log_progress("simulated steps", done, int(steps[-1]), alpha=done / N)
                # at a block's end the state is exactly J, the generators and the recordings:
                # an attempt resumed from here draws and computes what this one would have
                if checkpoint is not None and checkpoint.due():
                    checkpoint.save(_state(done, records, J, gens))
            for run, J_e in zip(records, J, strict=True):
                sigma = g(test_x @ J_e.transpose(1, 2) / math.sqrt(N), activation).sum(-1)
                run.append(
                    (
                        (J_e @ B.transpose(1, 2) / N).cpu().numpy(),
                        (J_e @ J_e.transpose(1, 2) / N).cpu().numpy(),
                        (0.5 * (sigma - test_tau) ** 2).mean(-1).cpu().numpy(),
                    )
                )
        if checkpoint is not None:  # finished: a job with more to do after this resumes here
            checkpoint.save(_state(done, records, J, gens))
    return [_result(run, steps, seeds, N, activation) for run in records]


def _result(
    run: list[tuple[Array, Array, Array]], steps: Array, seeds: list[int], N: int, activation: str
) -> SimulationResult:
    """One eta's recordings ``(R, Q, measured eps_g)`` per recorded step, as a result."""
    R_arr, Q_arr, measured = (np.stack(parts, axis=1) for parts in zip(*run, strict=True))
    return SimulationResult(
        alpha=steps / N,
        seeds=tuple(int(s) for s in seeds),
        N=N,
        R=R_arr,
        Q=Q_arr,
        eps_g_theory=generalization_error(R_arr, Q_arr, activation),
        eps_g_measured=measured,
    )


def _state(
    done: int,
    records: list[list[tuple[Array, Array, Array]]],
    J: torch.Tensor,
    gens: list[torch.Generator],
) -> dict[str, Any]:
    """What a resumed run needs: steps done, recordings so far, students, generator states."""
    return {
        "done": done,
        "records": [[[torch.from_numpy(a) for a in rec] for rec in run] for run in records],
        "J": J.cpu(),
        "generators": [gen.get_state() for gen in gens],
    }


def _restore(
    saved: dict[str, Any], J: torch.Tensor, gens: list[torch.Generator]
) -> tuple[int, list[list[tuple[Array, Array, Array]]]]:
    """Put a checkpoint's students and generator states back; its steps done and recordings."""
    if saved["J"].shape != J.shape or len(saved["generators"]) != len(gens):
        raise ValueError("the checkpoint does not match this simulation's shape")
    J.copy_(saved["J"])
    for gen, state in zip(gens, saved["generators"], strict=True):
        gen.set_state(state)
    records = [[tuple(t.numpy() for t in rec) for rec in run] for run in saved["records"]]
    return int(saved["done"]), records  # type: ignore[return-value]


def _step_etas(schedule: Callable[[float], float], done: int, size: int, N: int) -> list[float]:
    """The schedule's learning rate before each of steps ``done .. done + size - 1``."""
    etas = [float(schedule((done + t) / N)) for t in range(size)]
    if not all(math.isfinite(e) and e > 0 for e in etas):
        raise ValueError("the learning-rate schedule must give finite values > 0")
    return etas


def _one_thread_on_cpu(device: torch.device) -> contextlib.AbstractContextManager[None]:
    """Per-step tensors are tiny: on the CPU, intra-op threads only add synchronization."""
    return torch_threads(1) if device.type == "cpu" else contextlib.nullcontext()


def _check_sim_args(eta: float, N: int, seeds: list[int], n_test: int, block: int) -> None:
    if not (math.isfinite(eta) and eta > 0):
        raise ValueError(f"eta must be a finite number > 0, got {eta!r}")
    if N < 2:
        raise ValueError(f"N must be >= 2, got {N}")
    if len(seeds) == 0 or len(set(seeds)) != len(seeds):
        raise ValueError(f"seeds must be a non-empty list of distinct integers, got {seeds}")
    if n_test < 1 or block < 1:
        raise ValueError(f"n_test and block must be >= 1, got n_test={n_test}, block={block}")


def _setup(
    R0: Array,
    Q0: Array,
    N: int,
    seeds: list[int],
    n_test: int,
    dev: torch.device,
    dtype: torch.dtype,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, list[torch.Generator]]:
    """Per-seed teacher, student, test inputs (S, P, N) and training generators."""
    Bs, Js, tests, gens = [], [], [], []
    for seed in seeds:
        init_rng, train_seed, test_seed = _seed_streams(seed)
        B, J = initial_weights(R0, Q0, N, init_rng)
        Bs.append(B)
        Js.append(J)
        test_gen = torch.Generator(device=dev).manual_seed(test_seed)
        tests.append(torch.randn(n_test, N, generator=test_gen, device=dev, dtype=dtype))
        gens.append(torch.Generator(device=dev).manual_seed(train_seed))
    to = {"device": dev, "dtype": dtype}
    B_t = torch.as_tensor(np.stack(Bs), **to)
    J_t = torch.as_tensor(np.stack(Js), **to)
    return B_t, J_t, torch.stack(tests), gens


def _sgd_block(
    J: torch.Tensor,
    B: torch.Tensor,
    xi: torch.Tensor,
    activation: str,
    rates: list[float | list[float]],
) -> None:
    """Apply one SGD step per example of ``xi`` (S, b, N) to ``J`` (etas, S, K, N) in place.

    ``rates[e]`` is eta e's learning rate: one for every step or one per step.
    """
    xi = xi / math.sqrt(xi.shape[-1])  # x = J.xi/sqrt N and the step (eta/sqrt N) xi share it
    # the teacher never changes, so its outputs for the whole block come in one product
    tau = g(torch.bmm(xi, B.transpose(1, 2)), activation).sum(-1)  # (S, b)
    if len(rates) > 1:  # one row of rates per eta, one column per step: (etas, b, 1, 1)
        table = [rate if isinstance(rate, list) else [rate] * xi.shape[1] for rate in rates]
        columns = torch.tensor(table, dtype=J.dtype, device=J.device)[:, :, None, None]
    for t in range(xi.shape[1]):
        x_t = xi[:, None, t]  # (S, 1, N)
        pre = (J * x_t).sum(-1)  # (etas, S, K); cheaper than bmm for a batch of mat-vecs
        error = tau[:, t] - g(pre, activation).sum(-1)  # tau - sigma
        delta = g_prime(pre, activation) * error[..., None]
        if len(rates) == 1:
            rate = rates[0]
            J.addcmul_(delta[..., None], x_t, value=rate[t] if isinstance(rate, list) else rate)
        else:  # addcmul's value * t1 * t2 with value 1: (eta * delta) * x, as for one eta
            J.addcmul_((delta * columns[:, t])[..., None], x_t)
