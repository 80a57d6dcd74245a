"""Figures like Straat & Biehl's Figs. 1-4 from the SCM stage's tables.

ODE solutions are lines (solid: exact in eta; dashed: the paper's small-eta
form), simulations are markers at the seed mean with the seed standard
deviation as error bars. They never compute dynamics.

One function per figure, ``draw_<figure>(tables, *, scale, ...) -> Figure``: ``tables`` maps
the figure's table names (those its declaration in :mod:`galu.scm.stage` lists) to their
rows, ``scale`` is named in the title. A setting's runs are two tables, ``<setting>_ode``
(:func:`galu.scm.experiments.ode_table`) and ``<setting>_sim``
(:func:`galu.scm.experiments.simulation_table`); ``stability`` is
:func:`galu.scm.experiments.stability_table`'s. :data:`DRAW` maps each figure to its function:

- :func:`draw_perceptron`: Fig. 1, K = M = 1;
- :func:`draw_committee`: Figs. 2-4, one row per committee setting;
- :func:`draw_schedules`: the learning-rate schedules (ours, :mod:`galu.scm.schedules`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from galu.plotting import (
    distinct_colours,
    legend_outside,
    legend_proxy,
    log_ticks,
    plt,
    scaled_title,
    use_style,
)

Tables = Mapping[str, pd.DataFrame]

ETA_C = 2.0  # the perceptron's critical learning rate (Straat & Biehl, Sec. 4)
FORM_STYLE = {True: "-", False: "--"}
# eps_g below this is the integrator's tolerance (atol) showing through a cancellation of
# O(1) terms, not dynamics: the log axes stop here
EPS_FLOOR = 1e-10
TITLES = {
    "perceptron": "ReLU perceptron, K = M = 1",
    "relu_k2m2": "ReLU, K = M = 2",
    "relu_k3m2": "ReLU, K = 3, M = 2",
    "erf_k3m2": "erf, K = 3, M = 2",
    "relu_k2m3": "ReLU, K = 2, M = 3",
}
SCM_TITLE = "On-line learning in soft committee machines"


def state_columns(table: pd.DataFrame, kind: str) -> list[str]:
    """The non-empty ``R_*`` or ``Q_*`` columns of a table, in index order."""
    return [c for c in table.columns if c.startswith(f"{kind}_") and table[c].notna().any()]


def _pretty(column: str) -> str:
    kind, i, j = column.split("_")
    return f"${kind}_{{{i}{j}}}$"


def _sim_summary(sim: pd.DataFrame, column: str) -> pd.DataFrame:
    return sim.groupby("alpha")[column].agg(["mean", "std"]).reset_index()


def plot_component(
    ax: Any, table: pd.DataFrame, column: str, color: Any, label: str | None, log_alpha: bool
) -> None:
    """One quantity against alpha: ODE lines per form, simulation markers with spread."""
    for eta2_term, ode in table[table["source"] == "ode"].groupby("eta2_term"):
        data = ode[ode["alpha"] > 0] if log_alpha else ode
        ax.plot(data["alpha"], data[column], FORM_STYLE[bool(eta2_term)], color=color,
                label=label if eta2_term else None)  # fmt: skip
    sim = table[table["source"] == "sim"]
    if len(sim):
        stats = _sim_summary(sim, column)
        if log_alpha:
            stats = stats[stats["alpha"] > 0]
        ax.errorbar(stats["alpha"], stats["mean"], yerr=stats["std"].fillna(0), fmt="o",
                    color=color, markersize=3, elinewidth=0.8, alpha=0.8)  # fmt: skip


def trajectory_row(
    axes: Any, table: pd.DataFrame, title: str, plateau_R: float | None = None
) -> None:
    """Three panels: R_in, Q_ik and eps_g against alpha (log axes) for one setting and eta."""
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    for ax, kind in zip(axes[:2], ("R", "Q"), strict=True):
        for k, column in enumerate(state_columns(table, kind)):
            plot_component(ax, table, column, colors[k % len(colors)], _pretty(column), True)
        ax.set(xscale="log", xlabel=r"$\alpha$", ylabel=kind, title=f"{title}: {kind}")
    if plateau_R is not None:
        axes[0].axhline(plateau_R, color="0.4", lw=0.8, ls=":", label="plateau fixed point")
    plot_component(axes[2], table, "eps_g", "k", None, True)
    axes[2].set(xscale="log", yscale="log", xlabel=r"$\alpha$", ylabel=r"$\epsilon_g$",
                title=f"{title}: generalization error")  # fmt: skip
    axes[2].set_ylim(bottom=max(EPS_FLOOR, axes[2].get_ylim()[0]))
    log_ticks(axes[2], "y")
    forms = set(table.loc[table["source"] == "ode", "eta2_term"].astype(bool))
    if True in forms:
        legend_proxy(axes[2], "k-", label="ODE, exact in $\\eta$")
    if False in forms:
        legend_proxy(axes[2], "k--", label="ODE, small $\\eta$")
    if (table["source"] == "sim").any():
        legend_proxy(axes[2], "ko", markersize=3, label="simulation (mean, sd)")
    # Legends beside the panels (never over the curves), listing only visible curves.
    for ax in axes:
        legend_outside(ax)


def setting_runs(tables: Tables, setting: str) -> pd.DataFrame:
    """A setting's ODE and simulation rows, in that order (tables ``<setting>_ode``,
    ``<setting>_sim``)."""
    return pd.concat([tables[f"{setting}_ode"], tables[f"{setting}_sim"]])


def draw_committee(tables: Tables, *, scale: str, settings: Sequence[str]) -> Figure:
    """Figs. 2-4: one row of :func:`trajectory_row` per setting (its first eta), with the
    symmetric plateau's R from ``stability`` where the setting has one."""
    use_style()
    fig, axes = plt.subplots(
        len(settings), 3, figsize=(17, 4.2 * len(settings)), squeeze=False, layout="constrained"
    )
    for row, name in zip(axes, settings, strict=True):
        table = setting_runs(tables, name)
        first = table[table["eta"] == table["eta"].iloc[0]]
        eta = first["eta"].iloc[0]
        plateau = plateau_R(tables["stability"], name)
        trajectory_row(row, first, f"{TITLES[name]}, $\\eta$={eta:g}", plateau)
    scaled_title(fig, SCM_TITLE, scale)
    return fig


def plateau_R(stability: pd.DataFrame, setting: str) -> float | None:
    """R on the symmetric plateau (small-eta form) from stability.csv, if present."""
    rows = stability[(stability["setting"] == setting) & (~stability["eta2_term"].astype(bool))]
    return float(rows["fp_R_1_1"].iloc[0]) if len(rows) else None


def draw_perceptron(tables: Tables, *, scale: str) -> Figure:
    """Fig. 1: R, Q at the simulated eta; eps_g for every eta; eigenvalues against eta."""
    table, stability = setting_runs(tables, "perceptron"), tables["stability"]
    use_style()
    fig, (ax_rq, ax_eps, ax_eig) = plt.subplots(1, 3, figsize=(17, 4.2), layout="constrained")
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    sim = table[table["source"] == "sim"]
    eta_sim = sim["eta"].iloc[0] if len(sim) else table["eta"].iloc[0]
    at_eta = table[table["eta"] == eta_sim]
    for k, column in enumerate(("R_1_1", "Q_1_1")):
        plot_component(ax_rq, at_eta, column, colors[k], _pretty(column), False)
    ax_rq.set(xlabel=r"$\alpha$", ylabel="order parameter", title=f"$\\eta$ = {eta_sim:g}")
    legend_outside(ax_rq)
    for k, (eta, group) in enumerate(table.groupby("eta")):
        plot_component(ax_eps, group, "eps_g", colors[k % len(colors)], f"$\\eta$={eta:g}", False)
    ax_eps.set(yscale="log", xlabel=r"$\alpha$", ylabel=r"$\epsilon_g$",
               title="generalization error")  # fmt: skip
    ax_eps.set_ylim(bottom=max(EPS_FLOOR, ax_eps.get_ylim()[0]))
    log_ticks(ax_eps, "y")
    legend_outside(ax_eps)
    _eigenvalue_panel(ax_eig, stability[stability["setting"] == "perceptron"])
    scaled_title(fig, SCM_TITLE, scale)
    return fig


def _eigenvalue_panel(ax: Any, stability: pd.DataFrame) -> None:
    """The perceptron's fixed-point eigenvalues against eta: the measured ones as open rings
    (at most about 30 per eigenvalue) under the paper's two closed forms, drawn on top as thin
    black lines (dashed, dotted) so that both stay visible where they agree; eta_c marked."""
    eta = np.sort(stability["eta"].unique())
    colours = distinct_colours(max(2, stability["index"].nunique()))
    for k, (index, group) in enumerate(stability.groupby("index")):
        group = group.sort_values("eta")
        every = max(1, len(group) // 30)  # a dense eta grid would hide the lines under rings
        ax.plot(
            group["eta"],
            group["eigenvalue_real"],
            "o",
            markersize=6,
            mfc="none",
            mew=1.2,
            color=colours[k],
            markevery=every,
            zorder=2,
            label=f"Jacobian eigenvalue {index + 1}"
            + (f" (every {every}th eta)" if every > 1 else ""),
        )
    ax.plot(eta, -eta / 2, "--", color="k", lw=1.2, zorder=3, label=r"paper: $-\eta/2$")
    ax.plot(eta, eta**2 / 2 - eta, ":", color="k", lw=1.6, zorder=3,
            label=r"paper: $\eta^2/2-\eta$")  # fmt: skip
    ax.axvline(ETA_C, color="0.4", lw=0.8, ls="-.", label=r"paper: $\eta_c = 2$")
    ax.axhline(0, color="k", lw=0.6)
    ax.set(xlabel=r"$\eta$", ylabel="eigenvalue at R = Q = 1", title="stability of R = Q = 1")
    legend_outside(ax)


def floor_reached(eps_g: pd.Series) -> np.ndarray:
    """Per point of one ODE run (alpha increasing): whether eps_g has fallen to
    :data:`EPS_FLOOR` by then (at that point or before). From there on the state sits on its
    fixed point to the integrator's tolerance, the finite-difference gradient of eps_g
    (:func:`galu.scm.schedules.eps_gradient`) is noise, and so is the greedy law's choice of
    eta: every eta leaves eps_g where it is."""
    eps = np.asarray(eps_g, dtype=float)
    return np.maximum.accumulate(np.isfinite(eps) & (eps <= EPS_FLOOR))


def _schedule_curves(ax_eps: Any, ax_eta: Any, part: pd.DataFrame, colour: Any, label: str,
                     schedule: str) -> tuple[bool, bool]:  # fmt: skip
    """One ODE run of a schedule: eps_g (left) and eta (right) against alpha. A run that
    diverges ends with a cross at its last finite point; a greedy schedule's eta after eps_g
    reached the floor (:func:`floor_reached`) is drawn thin and dotted. Returns (diverged,
    drawn at the floor)."""
    finite = part[np.isfinite(part["eps_g"])]
    ax_eps.plot(finite["alpha"], finite["eps_g"], "-", color=colour, label=label)
    diverged = len(finite) < len(part) and len(finite) > 0
    rates = finite[np.isfinite(finite["eta"])]
    # a constant eta is not chosen from the state: nothing of it is noise
    at_floor = floor_reached(rates["eps_g"]) & (schedule != "constant")
    # the solid part runs to the first point at the floor, so the two parts join
    solid = ~at_floor | (np.cumsum(at_floor) == 1)
    ax_eta.plot(rates["alpha"][solid], rates["eta"][solid], "-", color=colour, label=label)
    if at_floor.any():
        ax_eta.plot(rates["alpha"][at_floor], rates["eta"][at_floor], ":", lw=1, color=colour)
    if diverged:
        last = finite.iloc[-1]
        ax_eps.plot([last["alpha"]], [min(last["eps_g"], 1.0)], "x", ms=8, mew=2, color=colour,
                    clip_on=False)  # fmt: skip
        ax_eta.plot([last["alpha"]], [last["eta"]], "x", ms=8, mew=2, color=colour)
    return diverged, bool(at_floor.any())


def draw_schedules(tables: Tables, *, scale: str) -> Figure:
    """Per setting: eps_g against alpha under each schedule (ODE lines, simulation markers)
    and the learning rate eta(alpha) each schedule uses (tables ``schedule_runs`` and the
    summary ``schedules``, both from :func:`galu.scm.schedules.schedule_experiment`).

    The reference levels of the summary are labelled lines: ``eps_exit`` (dashed, the
    plateau is left) and ``eps_target`` (dotted, the level whose first alpha measures a
    schedule's speed). A run that diverges (eps_g infinite, :func:`galu.scm.schedules.
    integrate_law` stops it) ends with a cross; a greedy schedule's eta once eps_g has reached
    the integrator's floor is dotted (:func:`floor_reached`: its value there is noise)."""
    runs, summary = tables["schedule_runs"], tables["schedules"]
    use_style()
    settings = list(dict.fromkeys(runs["setting"]))
    fig, axes = plt.subplots(
        len(settings), 2, figsize=(14, 4.2 * len(settings)), squeeze=False, layout="constrained"
    )
    for (ax_eps, ax_eta), name in zip(axes, settings, strict=True):
        best = float(summary.loc[summary["setting"] == name, "best_constant_eta"].iloc[0])
        mine = runs[runs["setting"] == name]
        curves = mine[["schedule", "constant_eta"]].drop_duplicates()
        colors = distinct_colours(len(curves))
        diverged = at_floor = False
        for k, (schedule, eta) in enumerate(curves.itertuples(index=False)):
            label = f"constant $\\eta$={eta:g}" if schedule == "constant" else schedule
            if schedule == "constant" and eta == best:
                label += " (best)"
            same = (mine["schedule"] == schedule) & (
                mine["constant_eta"].isna() if pd.isna(eta) else mine["constant_eta"] == eta
            )
            ode = mine[same & (mine["source"] == "ode") & (mine["alpha"] > 0)]
            if len(ode):
                ends = _schedule_curves(ax_eps, ax_eta, ode, colors[k], label, schedule)
                diverged, at_floor = diverged or ends[0], at_floor or ends[1]
            sim = mine[same & (mine["source"] == "sim") & (mine["alpha"] > 0)]
            sim = sim[np.isfinite(sim["eps_g"])]
            if len(sim):
                ax_eps.plot(sim["alpha"], sim["eps_g"], "o", color=colors[k], markersize=3)
        eps = summary[summary["setting"] == name]
        exit_, target = float(eps["eps_exit"].iloc[0]), float(eps["eps_target"].iloc[0])
        ax_eps.axhline(exit_, color="0.6", lw=0.8, ls="--",
                       label=f"$\\epsilon_{{exit}}$ = {exit_:g}: plateau left")  # fmt: skip
        ax_eps.axhline(target, color="0.4", lw=0.8, ls=":",
                       label=f"$\\epsilon_{{target}}$ = {target:g}: speed measured")  # fmt: skip
        legend_proxy(ax_eps, "ko", markersize=3, label="simulation (seed mean)")
        if diverged:
            for ax in (ax_eps, ax_eta):
                legend_proxy(ax, "kx", ms=8, mew=2, ls="none", label="diverged: run stops")
        if at_floor:
            legend_proxy(ax_eta, "k:", lw=1,
                         label=f"greedy $\\eta$ once $\\epsilon_g \\leq$ {EPS_FLOOR:g}:\n"
                         "chosen from noise ($\\epsilon_g$ stays there)")  # fmt: skip
        ax_eps.set(xscale="log", yscale="log", xlabel=r"$\alpha$", ylabel=r"$\epsilon_g$",
                   title=f"{name}: generalization error")  # fmt: skip
        ax_eps.set_ylim(bottom=max(EPS_FLOOR, ax_eps.get_ylim()[0]), top=1.0)
        legend_outside(ax_eps, fontsize="small")
        ax_eta.set(xscale="log", xlabel=r"$\alpha$", ylabel=r"$\eta$",
                   title=f"{name}: learning rate")  # fmt: skip
        legend_outside(ax_eta, fontsize="small")
    scaled_title(fig, "Learning-rate schedules from the exact-eta ODEs", scale)
    return fig


DRAW: dict[str, Callable[..., Figure]] = {
    "perceptron": draw_perceptron,
    "relu_k2m2": draw_committee,
    "k3m2": draw_committee,
    "relu_k2m3": draw_committee,
    "schedules": draw_schedules,
}
