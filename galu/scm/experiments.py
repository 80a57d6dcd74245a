"""The SCM stage's experiments as tidy tables (docs/design.md contracts for results/scm/).

A *setting* is a mapping with ``activation``, ``etas``, ``forms`` (``exact``
keeps the eta^2 term, ``small_eta`` is the paper's form), start overlaps ``R0``
(K x M) and ``Q0`` (K x K), ``alpha_max``, and the simulated ``sim_etas`` up to
``sim_alpha_max``. K and M are the shapes of ``R0``. Every function returns a
pandas DataFrame whose rows follow the contract of ``trajectories.csv`` or
``stability.csv``; order-parameter columns are ``R_i_n`` and ``Q_i_k`` with
``i <= k`` (1-based), so settings of different K, M share one table.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from galu.scm.odes import CommitteeODE, integrate, log_alpha_grid, pack, state_labels
from galu.scm.stability import analyse, find_fixed_point
from galu.seeding import run_seeds

if TYPE_CHECKING:
    from galu.checkpoints import Checkpoint

FORMS = {"exact": True, "small_eta": False}
TRAJECTORY_COLUMNS = [
    "setting", "activation", "K", "M", "eta", "source", "eta2_term", "N", "seed", "alpha",
    "eps_g", "eps_g_measured",
]  # fmt: skip


def start(setting: Mapping[str, Any]) -> tuple[np.ndarray, np.ndarray]:
    """``(R0, Q0)`` of a setting as arrays, checked for matching shapes."""
    R0, Q0 = np.asarray(setting["R0"], dtype=float), np.asarray(setting["Q0"], dtype=float)
    if R0.ndim != 2 or Q0.shape != (R0.shape[0], R0.shape[0]):
        raise ValueError(f"R0 must be K x M and Q0 K x K; got R0 {R0.shape} and Q0 {Q0.shape}")
    return R0, Q0


def _check_form(form: str) -> bool:
    if form not in FORMS:
        raise ValueError(f"forms must be among {sorted(FORMS)}, got {form!r}")
    return FORMS[form]


def ode_table(name: str, setting: Mapping[str, Any], ode: Mapping[str, Any]) -> pd.DataFrame:
    """ODE trajectories of one setting, one block of rows per (eta, form).

    ``ode`` holds ``method``, ``rtol``, ``atol``, ``points`` and ``alpha_min``.
    """
    R0, Q0 = start(setting)
    K, M = R0.shape
    grid = log_alpha_grid(setting["alpha_max"], ode["points"], ode["alpha_min"])
    frames = []
    for eta in setting["etas"]:
        for form in setting["forms"]:
            flow = CommitteeODE(K, M, setting["activation"], eta, _check_form(form))
            traj = integrate(flow, R0, Q0, grid, ode["method"], ode["rtol"], ode["atol"])
            frame = pd.DataFrame(traj.y, columns=traj.labels)
            frame.insert(0, "alpha", traj.alpha)
            frame.insert(1, "eps_g", traj.eps_g)
            frames.append(_label(frame, name, setting, K, M, eta, "ode", FORMS[form]))
    return _tidy(frames)


def simulation_table(
    name: str,
    setting: Mapping[str, Any],
    sim: Mapping[str, Any],
    seed: int,
    device: str,
    checkpoint: Checkpoint | None = None,
) -> pd.DataFrame:
    """Finite-N simulations of one setting: every ``sim_etas`` value, ``sim["seeds"]`` runs.

    Recorded on a log-spaced grid to ``sim_alpha_max`` with ``sim["points"]`` points;
    seeds are ``seed, seed + 1, ...``. Empty (with the contract's columns) if no
    eta is simulated. ``checkpoint``: see :func:`galu.scm.simulation.simulate_etas`.
    """
    import torch  # only simulations need it; the ODE jobs start faster without

    from galu.scm.simulation import simulate_etas

    if sim["dtype"] not in ("float32", "float64"):
        raise ValueError(f"dtype must be float32 or float64, got {sim['dtype']!r}")
    R0, Q0 = start(setting)
    K, M = R0.shape
    seeds = run_seeds(seed, sim["seeds"])
    grid = log_alpha_grid(setting["sim_alpha_max"], sim["points"], 1.0 / sim["N"])
    frames = []
    etas = list(setting["sim_etas"])
    # Every eta runs the same seeds: one batch shares their draws (simulate_etas).
    results = simulate_etas(
        K, M, setting["activation"], etas, R0, Q0, sim["N"], grid, seeds, sim["n_test"],
        device, getattr(torch, sim["dtype"]), sim["block"], checkpoint,
    ) if etas else []  # fmt: skip
    for eta, result in zip(etas, results, strict=True):
        states = pack_many(result.R, result.Q)  # (seeds, n, size)
        for s, seed_value in enumerate(result.seeds):
            frame = pd.DataFrame(states[s], columns=state_labels(K, M))
            frame.insert(0, "alpha", result.alpha)
            frame.insert(1, "eps_g", result.eps_g_theory[s])
            frame.insert(2, "eps_g_measured", result.eps_g_measured[s])
            frame = _label(frame, name, setting, K, M, eta, "sim", None)
            frame["N"], frame["seed"] = sim["N"], seed_value
            frames.append(frame)
    return _tidy(frames)


def pack_many(R: np.ndarray, Q: np.ndarray) -> np.ndarray:
    """:func:`galu.scm.odes.pack` over leading axes: (..., K, M), (..., K, K) -> (..., size)."""
    K = R.shape[-2]
    iu = np.triu_indices(K)
    return np.concatenate([R.reshape(*R.shape[:-2], -1), Q[..., iu[0], iu[1]]], axis=-1)


def _label(frame: pd.DataFrame, name: str, setting: Mapping[str, Any], K: int, M: int,
           eta: float, source: str, eta2_term: bool | None) -> pd.DataFrame:  # fmt: skip
    frame["setting"], frame["activation"], frame["K"], frame["M"] = (
        name,
        setting["activation"],
        K,
        M,
    )
    frame["eta"], frame["source"] = float(eta), source
    frame["eta2_term"] = pd.array([eta2_term] * len(frame), dtype="boolean")
    frame["N"] = pd.array([pd.NA] * len(frame), dtype="Int64")
    frame["seed"] = pd.array([pd.NA] * len(frame), dtype="Int64")
    return frame


def _tidy(frames: list[pd.DataFrame]) -> pd.DataFrame:
    """Concatenate and order columns: contract columns first, then R_*, then Q_*."""
    if not frames:
        return pd.DataFrame(columns=TRAJECTORY_COLUMNS)
    table = pd.concat(frames, ignore_index=True)
    return table[order_columns(table.columns)]


def order_columns(columns: Any) -> list[str]:
    """Contract columns, then ``R_i_n`` and ``Q_i_k`` sorted by their indices."""

    def key(c: str) -> tuple[int, int, int]:
        kind, i, j = c.split("_")
        return (0 if kind == "R" else 1, int(i), int(j))

    state = [c for c in columns if c[:2] in ("R_", "Q_")]
    return [c for c in TRAJECTORY_COLUMNS if c in columns] + sorted(state, key=key)


def combine(tables: list[pd.DataFrame]) -> pd.DataFrame:
    """One trajectories table from per-setting ones (missing order parameters stay empty)."""
    table = pd.concat([t for t in tables if len(t)], ignore_index=True)
    for column in ("N", "seed"):
        table[column] = table[column].astype("Int64")
    table["eta2_term"] = table["eta2_term"].astype("boolean")
    return table[order_columns(table.columns)]


def perceptron_stability(etas: np.ndarray) -> pd.DataFrame:
    """Eigenvalues at the perceptron's fixed point R = Q = 1 (exact form) for each eta.

    Straat & Biehl: ``-eta/2`` and ``eta^2/2 - eta``, so the fixed point is stable
    for ``eta < eta_c = 2``.
    """
    rows = []
    for eta in etas:
        flow = CommitteeODE(1, 1, "relu", float(eta), eta2_term=True)
        point = find_fixed_point(flow, np.array([1.0, 1.0]))
        rows.extend(_eigen_rows("perceptron", "R=Q=1", flow, point))
    return pd.DataFrame(rows)


def plateau_stability(
    name: str, setting: Mapping[str, Any], plateau_alpha: float, ode: Mapping[str, Any]
) -> pd.DataFrame:
    """The symmetric plateau of a K = M setting, its eigenvalues and eigenvectors.

    The ODE (small-eta form, first eta of the setting) is integrated from the
    setting's start to ``plateau_alpha``; that state, symmetrized over students and
    teachers, seeds the root finder. The fixed point is then analysed in the
    small-eta form and, for every eta of the setting, in the exact form.
    """
    R0, Q0 = start(setting)
    K, M = R0.shape
    eta0 = float(setting["etas"][0])
    flow = CommitteeODE(K, M, setting["activation"], eta0, eta2_term=False)
    grid = log_alpha_grid(plateau_alpha, 20, min(0.05, plateau_alpha / 2))
    traj = integrate(flow, R0, Q0, grid, ode["method"], ode["rtol"], ode["atol"])
    point = find_fixed_point(flow, symmetrize(traj.y[-1], K, M))
    rows = _eigen_rows(name, "symmetric_plateau", flow, point)
    for eta in setting["etas"]:
        exact = CommitteeODE(K, M, setting["activation"], float(eta), eta2_term=True)
        rows.extend(_eigen_rows(name, "symmetric_plateau", exact, find_fixed_point(exact, point)))
    return pd.DataFrame(rows)


def stability_table(
    etas: np.ndarray,
    plateau_name: str,
    plateau_setting: Mapping[str, Any],
    plateau_alpha: float,
    ode: Mapping[str, Any],
) -> pd.DataFrame:
    """stability.csv: perceptron sweep, then plateau; fixed-point and vector columns last."""
    table = pd.concat(
        [
            perceptron_stability(etas),
            plateau_stability(plateau_name, plateau_setting, plateau_alpha, ode),
        ],
        ignore_index=True,
    )
    extra = [c for c in table.columns if not c.startswith(("fp_", "vec_"))]
    point = [c for c in table.columns if c.startswith("fp_")]
    vector = [c for c in table.columns if c.startswith("vec_")]
    return table[extra + point + vector]


def symmetrize(y: np.ndarray, K: int, M: int) -> np.ndarray:
    """Average a state over permutations: one R for all (i, n), one Q_ii, one Q_ik (i != k)."""
    from galu.scm.odes import unpack

    R, Q = unpack(y, K, M)
    off = Q[~np.eye(K, dtype=bool)]
    Qs = np.full((K, K), off.mean() if off.size else 0.0)
    np.fill_diagonal(Qs, np.diag(Q).mean())
    return pack(np.full((K, M), R.mean()), Qs)


def _eigen_rows(
    name: str, label: str, flow: CommitteeODE, point: np.ndarray
) -> list[dict[str, Any]]:
    result = analyse(flow, point)
    labels = state_labels(flow.K, flow.M)
    rows = []
    for j, value in enumerate(np.atleast_1d(result.eigenvalues)):
        row = {
            "setting": name, "eta": flow.eta, "fixed_point": label,
            "eigenvalue_real": float(np.real(value)), "eigenvalue_imag": float(np.imag(value)),
            "eta2_term": flow.eta2_term, "index": j,
            "eigenvalue_per_eta": float(np.real(value)) / flow.eta,
        }  # fmt: skip
        row.update({f"fp_{c}": v for c, v in zip(labels, point, strict=True)})
        row.update({f"vec_{c}": float(np.real(v)) for c, v in
                    zip(labels, result.eigenvectors[:, j], strict=True)})  # fmt: skip
        rows.append(row)
    return rows
