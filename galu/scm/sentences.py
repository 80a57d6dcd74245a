"""What the SCM stage's figures show, in words computed from their CSVs (Straat &
Biehl, arXiv 1903.07378).

One function per figure, tables in (contract path -> frame), sentences out; :data:`SENTENCES`
names each figure's CSVs and its function. The report captions append them
(:mod:`galu.workflow.observations`), so a caption cannot say "grows" where the data fall.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

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


# figure -> (the CSVs it is drawn from, the function that describes them)
SENTENCES: dict[str, tuple[tuple[str, ...], Describe]] = {
    "figures/scm/perceptron.png": (SOURCES, perceptron),
    "figures/scm/relu_k2m2.png": (SOURCES, scm_settings(["relu_k2m2"])),
    "figures/scm/k3m2.png": (SOURCES, scm_settings(["relu_k3m2", "erf_k3m2"])),
    "figures/scm/relu_k2m3.png": (SOURCES, scm_settings(["relu_k2m3"])),
}
