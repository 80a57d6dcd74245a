"""Cross-key checks of the SCM stage's settings (read through ``STAGE.checks`` by
:func:`galu.workflow.settings.consistency.consistency_problems` before any job runs): a start (R0,
Q0) whose shapes disagree, that no student can have, or that a simulation cannot hold."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

import numpy as np

# Settings of the soft committee machine stage that carry a start (R0, Q0).
START_KEYS = ("R0", "Q0")


def start_problem(name: str, setting: Mapping[str, Any], sim_n: int | None) -> str | None:
    """Why the start of setting ``name`` is impossible, else None. R (K x M) and Q (K x K)
    are the order parameters of Straat & Biehl (arXiv 1903.07378, sec. 2): Q is a Gram
    matrix, and Q - R R^T must be one too (the student's part orthogonal to the teacher)."""
    R0, Q0 = setting.get("R0"), setting.get("Q0")
    where = f"scm.{name}"
    if len({len(row) for row in R0}) != 1:
        return f"{where}.R0: rows of different lengths {R0!r}; R0 is K rows of M numbers"
    K, M = len(R0), len(R0[0])
    if len(Q0) != K or any(len(r) != K for r in Q0):
        widths = sorted({len(r) for r in Q0})
        shape = f"{len(Q0)} x {widths[0]}" if len(widths) == 1 else f"rows of lengths {widths}"
        return (
            f"{where}: R0 is {K} x {M} (K = {K} student units, M = {M} teacher units) but Q0 "
            f"is {shape}; Q0 must be {K} x {K} (one row and column per student unit)"
        )
    r0, q0 = np.asarray(R0, dtype=float), np.asarray(Q0, dtype=float)
    if not np.allclose(q0, q0.T):
        return f"{where}.Q0: {Q0!r} is not symmetric; Q_ik = J_i . J_k / N is a Gram matrix"
    smallest = float(np.linalg.eigvalsh(q0 - r0 @ r0.T).min())
    if smallest < -1e-12:
        return (
            f"{where}: no student has these overlaps (Q0 - R0 R0^T has eigenvalue "
            f"{smallest:.3g} < 0); make the diagonal of Q0 larger or R0 smaller"
        )
    if sim_n is not None and setting.get("sim_etas") and sim_n < K + M:
        return (
            f"{where}: simulations need scm.simulation.N >= K + M = {K + M}, got N = {sim_n}; "
            "raise N or set sim_etas: []"
        )
    return None


def problems(config: Mapping[str, Any]) -> Iterator[str]:
    """One line per impossible start among the settings of ``config["scm"]``."""
    scm = config.get("scm") or {}
    sim_n = (scm.get("simulation") or {}).get("N")
    for name, setting in scm.items():
        if isinstance(setting, Mapping) and all(k in setting for k in START_KEYS):
            problem = start_problem(name, setting, sim_n)
            if problem:
                yield problem
