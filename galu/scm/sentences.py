"""What the SCM stage's figures show, in words computed from their CSVs (Straat &
Biehl, arXiv 1903.07378).

One function per figure, tables in (contract path -> frame), sentences out; :data:`SENTENCES`
names each figure's CSVs and its function. The report captions append them
(:mod:`galu.workflow.observations`), so a caption cannot say "grows" where the data fall.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from galu.sentences import ZERO, Describe, join, number, path

# eps_g of the ODEs below this is the integrator's tolerance (galu.scm.figures.EPS_FLOOR).
EPS_FLOOR = 1e-10
SOURCES = ("results/scm/trajectories.csv", "results/scm/stability.csv")


def _ode(table: pd.DataFrame, setting: str) -> pd.DataFrame:
    """The exact-in-eta ODE rows of a setting (the solid lines)."""
    rows = table[(table["setting"] == setting) & (table["source"] == "ode")]
    exact = rows[rows["eta2_term"].astype(str).str.lower() == "true"]
    return (exact if len(exact) else rows).sort_values("alpha")


def perceptron(tables: Mapping[str, pd.DataFrame]) -> list[str]:
    """eps_g's course for every eta, and where the fixed point's top eigenvalue turns positive."""
    ode = _ode(tables["results/scm/trajectories.csv"], "perceptron")
    parts = [
        f"eta = {eta:g}: {path(one['alpha'], one['eps_g'], floor=EPS_FLOOR)}"
        for eta, one in ode.groupby("eta", sort=True)
    ]
    lines = []
    if parts:
        alpha = ode["alpha"].max()
        lines.append(
            f"Generalization error eps_g (ODE, exact in eta) from alpha = 0 to {number(alpha)}: "
            + join(parts)
            + "."
        )
    stability = tables["results/scm/stability.csv"]
    lines.append(sign_change(stability[stability["setting"] == "perceptron"]))
    return lines


def sign_change(stability: pd.DataFrame) -> str:
    """Where the largest real eigenvalue at the fixed point changes sign, along eta."""
    top = stability.groupby("eta")["eigenvalue_real"].max().sort_index()
    if top.empty:
        return "No eigenvalues were computed."
    # |eigenvalue| up to ZERO is 0 within the finite differences' accuracy
    negative, positive = top[top < -ZERO], top[top > ZERO]
    zero = ", ".join(f"{e:g}" for e in top[top.abs() <= ZERO].index)
    span = f"eta from {top.index[0]:g} to {top.index[-1]:g}"
    text = "The largest Jacobian eigenvalue at R = Q = 1 is "
    if positive.empty or negative.empty:
        sign = "negative" if positive.empty else "positive"
        return text + f"{sign} for every {span}" + (f" but 0 at eta = {zero}." if zero else ".")
    turn = positive.index.min()
    text += f"negative up to eta = {negative.index[negative.index < turn].max():g}"
    text += f", 0 at eta = {zero}" if zero else ""
    return text + f" and positive from eta = {turn:g} on ({span})."


def _order_parameters(row: pd.Series) -> str:
    """``R_11 = 0.99, ...`` for the non-empty R and diagonal Q columns of one state."""
    names = [c for c in row.index if c.startswith("R_") and pd.notna(row[c])]
    names += [c for c in row.index if c.startswith("Q_") and pd.notna(row[c]) and c[2] == c[4]]
    return ", ".join(
        f"{c.replace('_', '', 1).replace('_', '')} = {number(row[c], ZERO)}" for c in names
    )


def scm_settings(settings: Sequence[str]) -> Callable[[Mapping[str, pd.DataFrame]], list[str]]:
    """Sentences for a figure of SCM settings: eps_g's course and the final order parameters
    of the plotted (first) eta, and where the simulations ended."""

    def describe_settings(tables: Mapping[str, pd.DataFrame]) -> list[str]:
        table = tables["results/scm/trajectories.csv"]
        lines = []
        for setting in settings:
            ode = _ode(table, setting)
            if ode.empty:
                continue
            eta = ode["eta"].iloc[0]
            one = ode[ode["eta"] == eta]
            end = one.iloc[-1]
            line = (
                f"{setting} (eta = {eta:g}, ODE exact in eta): eps_g "
                f"{path(one['alpha'], one['eps_g'], floor=EPS_FLOOR)} by alpha = "
                f"{number(end['alpha'])}, where "
                f"{_order_parameters(end)}."
            )
            sim = table[
                (table["setting"] == setting) & (table["source"] == "sim") & (table["eta"] == eta)
            ]
            if len(sim):
                last = sim[sim["alpha"] == sim["alpha"].max()]
                line += (
                    f" Simulations (mean of {last['seed'].nunique()} seeds) reach eps_g = "
                    f"{number(last['eps_g'].mean(), EPS_FLOOR)} at alpha = "
                    f"{number(last['alpha'].iloc[0])}."
                )
            lines.append(line)
        return lines

    return describe_settings


SCHEDULES = "results/scm/schedules.csv"
SCHEDULE_RUNS = "results/scm/schedule_runs.csv"


def _schedule_name(row: Any) -> str:
    return f"constant eta = {row.constant_eta:g}" if row.schedule == "constant" else row.schedule


def _reaches(row: Any, alpha_max: float) -> str:
    """When one run first reaches eps_target, or where it ended if it never did."""
    if math.isfinite(row.alpha_target):
        return f"{_schedule_name(row)} at alpha = {number(row.alpha_target)}"
    if pd.isna(row.final_eps_g) or not math.isfinite(row.final_eps_g):
        return f"{_schedule_name(row)} never (it diverges)"
    end = number(row.final_eps_g, EPS_FLOOR)
    return f"{_schedule_name(row)} never (eps_g {end} at alpha = {number(alpha_max)})"


def _schedule_events(runs: pd.DataFrame) -> list[str]:
    """Where an ODE run diverges, and where a greedy schedule changes its eta after eps_g
    fell to the integrator's floor (its eta there is chosen from noise)."""
    events = []
    for (schedule, _), run in runs.groupby(["schedule", "constant_eta"], dropna=False,
                                                  sort=False):  # fmt: skip
        run = run.sort_values("alpha")
        name = _schedule_name(run.iloc[0])
        infinite = run[~np.isfinite(run["eps_g"])]
        if len(infinite):
            events.append(f"{name} diverges (eps_g infinite from alpha = "
                          f"{number(infinite['alpha'].iloc[0])})")  # fmt: skip
        if schedule == "constant":
            continue
        at_floor = run[np.isfinite(run["eps_g"]) & (run["eps_g"] <= EPS_FLOOR)]
        if not len(at_floor):
            continue
        reached = at_floor["alpha"].iloc[0]
        before = run[run["alpha"] <= reached]["eta"].iloc[-1]
        after = run[run["alpha"] > reached]
        moved = after[~np.isclose(after["eta"], before)]
        if len(moved):
            events.append(
                f"{name}'s eta moves from {number(before)} to {number(moved['eta'].iloc[0])} "
                f"at alpha = {number(moved['alpha'].iloc[0])}, after eps_g fell below "
                f"{EPS_FLOOR:g} at alpha = {number(reached)}: there every eta leaves eps_g at "
                f"the floor, and the greedy choice follows finite-difference noise (dotted)"
            )
    return events


def _simulated(row: Any, base: pd.Series) -> str:
    """A simulated schedule against the simulated best constant: when each first reaches
    eps_target, or, where either does not within the simulations' alpha, eps_exit."""
    for level, eps in (("target", row.eps_target), ("exit", row.eps_exit)):
        mine, theirs = getattr(row, f"alpha_{level}"), base[f"alpha_{level}"]
        if math.isfinite(mine) and math.isfinite(theirs):
            return (
                f"{_schedule_name(row)} reaches eps_{level} = {eps:g} at alpha = {number(mine)}"
                f" against {number(theirs)} for the best constant (gain "
                f"{number(getattr(row, f'gain_{level}'))})"
            )
    return f"{_schedule_name(row)} reaches neither eps_target nor eps_exit"


def schedules(tables: Mapping[str, pd.DataFrame]) -> list[str]:
    """Per setting: the alpha at which each ODE run first reaches eps_target (the best
    constant eta first), the simulations' gain of a schedule over the best constant, and the
    runs' divergences and noise-driven etas (:func:`_schedule_events`)."""
    summary, runs = tables[SCHEDULES], tables[SCHEDULE_RUNS]
    lines = []
    for setting, part in summary.groupby("setting", sort=False):
        ode = part[part["source"] == "ode"]
        mine = runs[(runs["setting"] == setting) & (runs["source"] == "ode")]
        alpha_max = float(mine["alpha"].max()) if len(mine) else math.nan
        ordered = pd.concat([ode[ode["is_best_constant"]], ode[~ode["is_best_constant"]]])
        best = float(part["best_constant_eta"].iloc[0])
        target = float(part["eps_target"].iloc[0])
        line = (
            f"{setting} (ODE): eps_g first reaches eps_target = {target:g} with the best "
            f"constant eta ({best:g}) at alpha = {number(ordered['alpha_target'].iloc[0])}; "
            + ", ".join(_reaches(r, alpha_max) for r in ordered.iloc[1:].itertuples())
            + "."
        )
        sim = part[(part["source"] == "sim") & ~part["is_best_constant"]]
        base = part[(part["source"] == "sim") & part["is_best_constant"]]
        if len(sim) and len(base):
            line += " Simulations: " + ", ".join(_simulated(r, base.iloc[0]) for r in
                                                 sim.itertuples()) + "."  # fmt: skip
        events = _schedule_events(mine)
        if events:
            line += " In the ODEs, " + "; ".join(events) + "."
        lines.append(line)
    return lines


# figure -> (the CSVs it is drawn from, the function that describes them)
SENTENCES: dict[str, tuple[tuple[str, ...], Describe]] = {
    "figures/scm/perceptron.png": (SOURCES, perceptron),
    "figures/scm/relu_k2m2.png": (SOURCES, scm_settings(["relu_k2m2"])),
    "figures/scm/k3m2.png": (SOURCES, scm_settings(["relu_k3m2", "erf_k3m2"])),
    "figures/scm/relu_k2m3.png": (SOURCES, scm_settings(["relu_k2m3"])),
    "figures/scm/schedules.png": ((SCHEDULES, SCHEDULE_RUNS), schedules),
}
