"""Learning-rate schedules from the order-parameter ODEs that are exact in eta.

Straat & Biehl (arXiv 1903.07378, conclusion) leave the ``eta^2`` term "for future
research", which "would also make possible the study of learning rate adaptation
schemes". Our ODEs keep it (:mod:`galu.scm.odes`, Eqs. 5-6): every ``dR/dalpha``
is ``eta a_R`` and every ``dQ/dalpha`` is ``eta a_Q + eta^2 b_Q``, with ``a`` and
``b`` functions of the order parameters only (:meth:`CommitteeODE.parts`). With
``g = grad eps_g`` (Eq. 7, by central differences), the error's rate of change is

    ``d eps_g / d alpha = eta (g . a) + eta^2 (g . b) = eta c_1 + eta^2 c_2``,

a parabola in eta. The *greedy* schedule takes, at every state, the eta in
``[eta_min, eta_max]`` that makes this rate most negative: ``-c_1 / (2 c_2)`` when
``c_2 > 0``, clipped to the range, else the better end of the range. It is a
feedback law ``eta(R, Q)``; along its own ODE trajectory it becomes a schedule
``eta(alpha)`` that a finite-N simulation can follow open-loop
(:func:`galu.scm.simulation.simulate` accepts ``eta`` as a function of alpha).

Measures of a trajectory (``eps_g`` on an alpha grid): ``alpha_to(eps)`` is the
first alpha at which ``eps_g <= eps`` (linear interpolation in log eps_g between
grid points; ``inf`` if never). The plateau is measured by when it is left:
``alpha_to(eps_exit)`` with ``eps_exit`` below every plateau's error (the descent
before the plateau takes a few alpha, the plateau tens).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd
from scipy.integrate import solve_ivp

from galu.scm.odes import (
    CommitteeODE,
    Trajectory,
    check_integration,
    log_alpha_grid,
    state_labels,
)
from galu.seeding import run_seeds

if TYPE_CHECKING:
    from galu.checkpoints import Checkpoint

Array = np.ndarray
SOLVER_DEFAULTS = {"method": "LSODA", "rtol": 1e-8, "atol": 1e-10}
# a law maps (alpha, packed state, (a, b) at that state) to eta
EtaLaw = Callable[[float, Array, tuple[Array, Array]], float]


def eps_gradient(ode: CommitteeODE, y: Array, step: float = 1e-6) -> Array:
    """``d eps_g / d y`` at packed state ``y`` by central differences (one batched call).

    Valid inside the realizable states; ``step`` is absolute, in packed coordinates.
    """
    y = np.asarray(y, dtype=float)
    shifts = step * np.eye(y.size)
    values = ode.eps_g(np.concatenate([y + shifts, y - shifts]))
    return (values[: y.size] - values[y.size :]) / (2 * step)


def rate_coefficients(
    ode: CommitteeODE, y: Array, parts: tuple[Array, Array] | None = None
) -> tuple[float, float]:
    """``(c_1, c_2)`` with ``d eps_g / d alpha = eta c_1 + eta^2 c_2`` at state ``y``.

    ``parts`` is ``ode.parts(y)`` when the caller has it already.
    """
    a, b = ode.parts(y) if parts is None else parts
    grad = eps_gradient(ode, y)
    return float(grad @ a), float(grad @ b)


def greedy_eta(c1: float, c2: float, eta_min: float, eta_max: float) -> float:
    """The eta in ``[eta_min, eta_max]`` minimizing ``eta c1 + eta^2 c2``.

    The parabola's vertex ``-c1 / (2 c2)`` when ``c2 > 0`` (clipped to the range);
    otherwise the rate is concave or linear in eta and the better end wins.
    """
    if not 0 < eta_min <= eta_max:
        raise ValueError(f"need 0 < eta_min <= eta_max, got {eta_min}, {eta_max}")
    candidates = [eta_min, eta_max]
    if c2 > 0:
        candidates.append(min(max(-c1 / (2 * c2), eta_min), eta_max))
    rates = [eta * c1 + eta**2 * c2 for eta in candidates]
    return float(candidates[int(np.argmin(rates))])


@dataclass(frozen=True)
class ScheduledTrajectory:
    """An ODE trajectory under a learning-rate law, with the eta used at each grid point."""

    trajectory: Trajectory
    eta: Array


def greedy_law(ode: CommitteeODE, eta_min: float, eta_max: float) -> EtaLaw:
    """The greedy feedback law ``(alpha, y, parts) -> eta`` of the module doc."""

    def law(alpha: float, y: Array, parts: tuple[Array, Array]) -> float:
        return greedy_eta(*rate_coefficients(ode, y, parts), eta_min, eta_max)

    return law


def constant_law(eta: float) -> EtaLaw:
    """A constant learning rate as a law."""
    return lambda alpha, y, parts: float(eta)


def integrate_law(
    ode: CommitteeODE,
    law: EtaLaw,
    R0: Array,
    Q0: Array,
    alpha: Array,
    *,
    diverge_at: float = 1e3,
    **solver: Any,
) -> ScheduledTrajectory:
    """Solve ``dy/dalpha = eta a(y) + eta^2 b(y)`` with ``eta = law(alpha, y, (a, b))``.

    ``ode.eta`` and ``ode.eta2_term`` are ignored: the eta^2 term is always kept.
    ``alpha`` must start at 0 and increase. A run whose order parameters exceed
    ``diverge_at`` in magnitude (eta above the stable range) stops there: later grid
    points get NaN states, ``eps_g = inf`` and NaN eta. ``solver`` may set ``method``
    (default LSODA), ``rtol`` (1e-8) and ``atol`` (1e-10), as in :func:`integrate`.
    """
    method, rtol, atol = (solver.pop(k, d) for k, d in SOLVER_DEFAULTS.items())
    if solver:
        raise TypeError(f"unknown solver options: {', '.join(sorted(solver))}")
    alpha, y0 = check_integration(ode, R0, Q0, alpha, method, rtol, atol)

    def rhs(t: float, y: Array) -> Array:
        a, b = ode.parts(y)
        eta = law(t, y, (a, b))
        return eta * a + eta**2 * b

    def diverged(t: float, y: Array) -> float:
        return float(np.max(np.abs(y)) - diverge_at)

    diverged.terminal = True  # type: ignore[attr-defined]
    sol = solve_ivp(rhs, (0.0, alpha[-1]), y0, method=method, t_eval=alpha, rtol=rtol,
                    atol=atol, events=diverged)  # fmt: skip
    if sol.status < 0:
        raise RuntimeError(f"solve_ivp ({method}) failed: {sol.message}")
    done = sol.y.shape[1]
    y = np.full((alpha.size, ode.size), np.nan)
    y[:done] = sol.y.T
    eps = np.full(alpha.size, np.inf)
    eps[:done] = ode.eps_g(y[:done])
    etas = np.full(alpha.size, np.nan)
    etas[:done] = [law(t, s, ode.parts(s)) for t, s in zip(alpha[:done], y[:done], strict=True)]
    traj = Trajectory(alpha=alpha, y=y, eps_g=eps, labels=state_labels(ode.K, ode.M))
    return ScheduledTrajectory(trajectory=traj, eta=etas)


def alpha_to(alpha: Array, eps_g: Array, eps: float) -> float:
    """First alpha with ``eps_g <= eps``, interpolated linearly in ``log eps_g``; inf if never."""
    alpha, eps_g = np.asarray(alpha, dtype=float), np.asarray(eps_g, dtype=float)
    below = np.flatnonzero(eps_g <= eps)
    if below.size == 0:
        return math.inf
    j = int(below[0])
    if j == 0:
        return float(alpha[0])
    hi, lo = math.log(max(eps_g[j - 1], 1e-300)), math.log(max(eps_g[j], 1e-300))
    frac = 1.0 if hi == lo else (hi - math.log(eps)) / (hi - lo)
    return float(alpha[j - 1] + frac * (alpha[j] - alpha[j - 1]))


def schedule_function(alpha: Array, eta: Array) -> Callable[[float], float]:
    """``alpha -> eta`` by linear interpolation of a recorded schedule (held at the ends)."""
    alpha, eta = np.asarray(alpha, dtype=float), np.asarray(eta, dtype=float)
    if alpha.shape != eta.shape or alpha.ndim != 1 or np.any(np.diff(alpha) <= 0):
        raise ValueError("alpha and eta must be 1-D of equal length, alpha increasing")
    if not np.all(np.isfinite(eta) & (eta > 0)):
        raise ValueError("a schedule's learning rates must be finite and > 0")
    return lambda a: float(np.interp(a, alpha, eta))


def _trajectory_frame(
    name: str, schedule: str, source: str, alpha: Array, eps_g: Array, eta: Array
) -> pd.DataFrame:
    return pd.DataFrame(
        {"setting": name, "schedule": schedule, "source": source, "alpha": alpha,
         "eps_g": eps_g, "eta": eta}
    )  # fmt: skip


def schedule_experiment(
    name: str,
    setting: Mapping[str, Any],
    config: Mapping[str, Any],
    ode_config: Mapping[str, Any],
    sim_config: Mapping[str, Any],
    seed: int,
    device: str = "cpu",
    checkpoint: Checkpoint | None = None,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Constant etas, the greedy schedule and the floored greedy schedule of one setting.

    ``setting`` gives ``activation``, ``R0``, ``Q0`` (:mod:`galu.scm.experiments`).
    ``config`` holds ``constant_etas``, ``eta_min``, ``eta_max``, ``eps_exit``,
    ``eps_target``, ``alpha_max``, ``points``, ``rtol``, ``atol``, ``sim_schedules`` and
    ``sim_alpha_max``; ``ode_config`` gives ``method`` and ``alpha_min``.
    The best constant eta is the one reaching ``eps_target`` at the smallest alpha;
    ``greedy_floor`` is the greedy law clipped to ``[best constant, eta_max]``.
    The simulations (``sim_config``: N, seeds, n_test, block, points) follow each
    schedule's ODE eta(alpha) open-loop; ``constant`` there means the best constant.
    ``checkpoint``: see :func:`galu.scm.simulation.simulate_etas`.

    Returns (summary, trajectories): per (schedule, source) the alpha at which
    eps_g first falls below ``eps_exit`` (leaving the plateau) and ``eps_target``,
    and their gains ``1 - alpha / alpha_best_constant``; and eps_g, eta against alpha.
    """
    from galu.scm.experiments import start  # noqa: PLC0415 (experiments imports odes only)

    R0, Q0 = start(setting)
    K, M = R0.shape
    flow = CommitteeODE(K, M, setting["activation"], 1.0)
    grid = log_alpha_grid(config["alpha_max"], config["points"], ode_config["alpha_min"])
    # the schedules' own tolerances: the greedy law's finite differences make each step dear
    solve = {"method": ode_config["method"], "rtol": config["rtol"], "atol": config["atol"]}
    runs: dict[tuple[str, float], ScheduledTrajectory] = {}
    for eta in config["constant_etas"]:
        runs[("constant", float(eta))] = integrate_law(flow, constant_law(eta), R0, Q0, grid,
                                                       **solve)  # fmt: skip
    reach = {eta: alpha_to(grid, run.trajectory.eps_g, config["eps_target"])
             for (_, eta), run in runs.items()}  # fmt: skip
    best = min(reach, key=lambda e: (reach[e], e))
    lows = {"greedy": config["eta_min"], "greedy_floor": max(best, config["eta_min"])}
    for schedule, low in lows.items():
        law = greedy_law(flow, low, config["eta_max"])
        runs[(schedule, math.nan)] = integrate_law(flow, law, R0, Q0, grid, **solve)
    rows, frames = [], []
    for (schedule, eta), run in runs.items():
        traj = run.trajectory
        frames.append(_trajectory_frame(name, schedule, "ode", grid, traj.eps_g, run.eta)
                      .assign(constant_eta=eta))  # fmt: skip
        rows.append(_summary_row(name, schedule, "ode", eta, grid, traj.eps_g, config))
    sim_rows, sim_frames = _simulate_schedules(
        name, setting, config, sim_config, seed, device, runs, best, checkpoint
    )
    summary = pd.DataFrame(rows + sim_rows)
    summary["best_constant_eta"] = best
    summary["is_best_constant"] = (summary["schedule"] == "constant") & (
        summary["constant_eta"] == best
    )
    for measure in ("exit", "target"):
        column = f"alpha_{measure}"
        base = summary[summary["is_best_constant"]].set_index("source")[column]
        summary[f"gain_{measure}"] = 1.0 - summary[column] / summary["source"].map(base)
    return summary, pd.concat(frames + sim_frames, ignore_index=True)


def _summary_row(name: str, schedule: str, source: str, eta: float, alpha: Array,
                 eps_g: Array, config: Mapping[str, Any]) -> dict[str, Any]:  # fmt: skip
    return {
        "setting": name, "schedule": schedule, "source": source, "constant_eta": eta,
        "alpha_exit": alpha_to(alpha, eps_g, config["eps_exit"]),
        "alpha_target": alpha_to(alpha, eps_g, config["eps_target"]),
        "eps_exit": config["eps_exit"], "eps_target": config["eps_target"],
        "final_eps_g": float(eps_g[-1]),
    }  # fmt: skip


def _simulate_schedules(
    name: str,
    setting: Mapping[str, Any],
    config: Mapping[str, Any],
    sim_config: Mapping[str, Any],
    seed: int,
    device: str,
    runs: Mapping[tuple[str, float], ScheduledTrajectory],
    best: float,
    checkpoint: Checkpoint | None = None,
) -> tuple[list[dict[str, Any]], list[pd.DataFrame]]:
    """Finite-N runs under the best constant eta and each listed schedule (seed mean)."""
    from galu.scm.experiments import start  # noqa: PLC0415
    from galu.scm.simulation import simulate_etas  # noqa: PLC0415 (torch only when simulating)

    R0, Q0 = start(setting)
    K, M = R0.shape
    seeds = run_seeds(seed, sim_config["seeds"])
    grid = log_alpha_grid(config["sim_alpha_max"], sim_config["points"], 1.0 / sim_config["N"])
    keys: list[tuple[str, float]] = []
    etas: list[float | Callable[[float], float]] = []
    for schedule in config["sim_schedules"]:
        if schedule == "constant":
            etas.append(best)
            keys.append(("constant", best))
        else:
            keys.append((schedule, math.nan))
            run = next(r for k, r in runs.items() if k[0] == schedule)
            ok = np.isfinite(run.eta)
            etas.append(schedule_function(run.trajectory.alpha[ok], run.eta[ok]))
    # The schedules run the same seeds: one batch shares their draws (simulate_etas).
    results = simulate_etas(
        K, M, setting["activation"], etas, R0, Q0, sim_config["N"], grid, seeds,
        sim_config["n_test"], device, block=sim_config["block"], checkpoint=checkpoint,
    ) if etas else []  # fmt: skip
    rows, frames = [], []
    for (schedule, constant), eta, result in zip(keys, etas, results, strict=True):
        eps = result.eps_g_theory.mean(axis=0)  # seed mean of the closed form in (R, Q)
        used = np.array([eta(a) for a in result.alpha]) if callable(eta) else np.full(
            result.alpha.size, best)  # fmt: skip
        frames.append(_trajectory_frame(name, schedule, "sim", result.alpha, eps, used)
                      .assign(constant_eta=constant))  # fmt: skip
        rows.append(_summary_row(name, schedule, "sim", constant, result.alpha, eps, config))
    return rows, frames
