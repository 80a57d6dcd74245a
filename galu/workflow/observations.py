"""What each figure's data show, in words computed from the CSVs the figure is drawn from.

A report caption states a number or a direction (falls, grows, reaches) only through these
sentences: the caption templates under ``workflow/report/`` describe the set-up and what the
papers report, and the ``claims`` rule appends :func:`describe` of the figure, so a caption
cannot say "grows" where the data fall. Each entry of :data:`OBSERVATIONS` names the CSVs it
reads (the claims rule declares them as inputs) and a function from those tables to
sentences. Functions are pure: tables in, strings out.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from galu.normalization.jacobian_summary import JACOBIAN_FLOOR, jacobian_stats
from galu.workflow.rst import rst_escape
from galu.workflow.scales import OutputRoot, output_root

# Relative change below which a quantity "stays at about" its first value.
FLAT = 0.05
# Order parameters and eigenvalues closer to 0 than this are integrator noise: shown as 0.
ZERO = 1e-6
# eps_g of the ODEs below this is the integrator's tolerance (galu.scm.figures.EPS_FLOOR).
EPS_FLOOR = 1e-10


def number(value: float, floor: float = 0.0) -> str:
    """Three significant digits, as in the claims table; a magnitude below ``floor`` (the
    quantity's noise level) is shown as ``below floor`` (or 0 for order parameters, whose noise
    floor is :data:`ZERO`), not as digits of noise."""
    if value is None or not np.isfinite(value):
        return "–"
    if floor and abs(value) <= floor:
        return "0" if floor == ZERO else f"below {floor:g}"
    return f"{value:.3g}"


def trend(first: float, last: float, flat: float = FLAT, floor: float = 0.0) -> str:
    """``falls from a to b``, ``grows from a to b`` or ``stays at about a``: the direction
    of ``first`` -> ``last`` (a change within ``flat`` of the larger magnitude is flat;
    values below ``floor``, the quantity's noise level, count as the floor)."""
    if floor:
        first, last = max(first, floor), max(last, floor)
    scale = max(abs(first), abs(last))
    if scale == 0 or abs(last - first) <= flat * scale:
        return f"stays at about {number(first, floor)}"
    word = "falls" if last < first else "grows"
    return f"{word} from {number(first, floor)} to {number(last, floor)}"


def path(x: Sequence[float], y: Sequence[float], name: str = "alpha", floor: float = 0.0) -> str:
    """The course of ``y`` along ``x``: its :func:`trend`, or a fall to an interior minimum
    and a rise after it (or the reverse), with where the turn is. Values below ``floor``
    (the quantity's noise level) count as the floor, so noise never makes a curve grow."""
    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    keep = np.isfinite(y)
    x, y = x[keep], np.maximum(y[keep], floor)
    if not len(y):
        return "has no finite value"
    first, last = y[0], y[-1]
    low, high = int(np.argmin(y)), int(np.argmax(y))
    for turn, into, after, kind in ((low, "falls", "grows", "minimum"),
                                    (high, "grows", "falls", "maximum")):  # fmt: skip
        if (
            0 < turn < len(y) - 1
            and trend(first, y[turn], floor=floor).startswith(into)
            and trend(y[turn], last, floor=floor).startswith(after)
        ):
            return (
                f"{into} from {number(first, floor)} to a {kind} of {number(y[turn], floor)} "
                f"at {name} = {number(x[turn])}, then {after} to {number(last, floor)}"
            )
    return trend(first, last, floor=floor)


def _join(parts: Sequence[str]) -> str:
    return "; ".join(parts)


# --- SCM (Straat & Biehl) -------------------------------------------------------------------


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
            + _join(parts)
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


# --- memorization (Fiat, Malach & Shalev-Shwartz) -----------------------------------------


def zero_error(tables: Mapping[str, pd.DataFrame], band: float = 0.25) -> list[str]:
    """Range of min_width * d / m per model, and every search outside ``1 +- band``."""
    rows = tables["results/memorization/min_width.csv"]
    rows = rows[rows["criterion"] == "zero_error"]
    found = rows[rows["found"].astype(bool)]
    parts = [
        f"{model} from {number(one['kd_over_m'].min())} to {number(one['kd_over_m'].max())} "
        f"(median {number(one['kd_over_m'].median())}, {len(one)} searches)"
        for model, one in found.groupby("model", sort=False)
    ]
    lines = ["min_width * d / m: " + _join(parts) + "."] if parts else []
    outside = found[(found["kd_over_m"] - 1).abs() > band]
    if len(outside):
        listed = ", ".join(
            f"{r.model} at m = {r.m}, d = {r.d}, seed {r.seed}: {number(r.kd_over_m)}"
            for r in outside.sort_values("kd_over_m", ascending=False).itertuples()
        )
        lines.append(
            f"{len(outside)} of {len(found)} searches lie outside 1 ± {band:g} ({listed})."
        )
    else:
        lines.append(f"All {len(found)} searches lie within 1 ± {band:g}.")
    failed = rows[~rows["found"].astype(bool)]
    if len(failed):
        lines.append(f"{len(failed)} search(es) found no width up to the largest tried.")
    return lines


def underparam(tables: Mapping[str, pd.DataFrame]) -> list[str]:
    """Per model: how the loss changes with kd/m, and its distance to the GaLU law."""
    rows = tables["results/memorization/underparam.csv"]
    lines = []
    for model, one in rows.groupby("model", sort=False):
        mean = one.groupby("kd_over_m")["train_loss"].mean().sort_index()
        gap = (one["train_loss"] - (1 - one["kd_over_m"])).abs().max()
        lines.append(
            f"{model}: the mean loss {trend(mean.iloc[0], mean.iloc[-1])} as kd/m goes from "
            f"{number(mean.index[0])} to {number(mean.index[-1])}; largest distance to "
            f"1 - kd/m {number(gap)}."
        )
    return lines


def min_width(tables: Mapping[str, pd.DataFrame]) -> list[str]:
    """Per model: how the minimal width changes with the label dimension."""
    rows = tables["results/memorization/min_width.csv"]
    rows = rows[(rows["criterion"] == "mse") & rows["found"].astype(bool)]
    lines = []
    for model, one in rows.groupby("model", sort=False):
        mean = one.groupby("out_dim")["min_width"].mean().sort_index()
        if len(mean) == 1:
            lines.append(
                f"{model}: minimal width {number(mean.iloc[0])} (out_dim = {mean.index[0]} only)."
            )
            continue
        lines.append(
            f"{model}: the minimal width {trend(mean.iloc[0], mean.iloc[-1])} as out_dim goes "
            f"from {mean.index[0]} to {mean.index[-1]}."
        )
    return lines


# --- static activation normalization (Richemond & Guo) ------------------------------------


def max_depth(tables: Mapping[str, pd.DataFrame]) -> list[str]:
    """The deepest depth that trains, per activation (and width)."""
    rows = tables["results/normalization/max_depth.csv"]
    several = rows["width"].nunique() > 1
    parts = [
        f"{r.activation}{f' (w = {r.width})' if several else ''} "
        + (str(int(r.max_trainable_depth)) if r.max_trainable_depth else "none of the depths")
        for r in rows.itertuples()
    ]
    return ["Deepest tested depth that trains: " + _join(parts) + "."]


def training(tables: Mapping[str, pd.DataFrame]) -> list[str]:
    """Per activation and depth: the mean training loss from epoch 0 to the last epoch, and
    the final test error."""
    rows = tables["results/normalization/trainability.csv"]
    lines = []
    for activation, one in rows.groupby("activation", sort=False):
        parts = []
        for depth, net in one.groupby("depth"):
            loss = net.groupby("epoch")["train_loss"].mean().sort_index()
            error = net.groupby("epoch")["test_error"].mean().sort_index()
            parts.append(
                f"depth {depth}: loss {trend(loss.iloc[0], loss.iloc[-1])}, test error "
                f"{number(error.iloc[-1])}"
            )
        lines.append(f"{activation} (mean over runs, epoch 0 to last): " + _join(parts) + ".")
    return lines


def jacobian_spectra(tables: Mapping[str, pd.DataFrame]) -> list[str]:
    """Per activation and depth (smallest width): the fraction of squared singular values
    that are numerically zero, the median and the spread in decades of the others."""
    rows = tables["results/normalization/jacobian.csv"]
    rows = rows[rows["width"] == rows["width"].min()]
    lines = []
    for activation, one in rows.groupby("activation", sort=False):
        parts = []
        for depth, net in one.groupby("depth"):
            values = net["squared_singular_value"].to_numpy(dtype=float)
            stats = jacobian_stats(values)
            text = f"depth {depth}: median {number(stats.median)}"
            if stats.decades > 0.01:
                text += f", 5-95 % range {number(stats.decades)} decades"
            if stats.at_floor:
                text += f", {100 * stats.at_floor:.0f} % below {JACOBIAN_FLOOR:g} (rank lost)"
            parts.append(text)
        lines.append(f"{activation}: " + _join(parts) + ".")
    return lines


def correlations(tables: Mapping[str, pd.DataFrame], near: float = 0.02) -> list[str]:
    """Per activation: mean |cos| from the first to the last layer, and the first layer within
    ``near`` of the random-vector value."""
    rows = tables["results/normalization/correlations.csv"]
    baseline = float(rows["random_baseline"].iloc[0])
    parts = []
    for activation, one in rows.groupby("activation", sort=False):
        one = one.sort_values("layer")
        text = f"{activation} {path(one['layer'], one['mean_abs_cos'], 'layer')}"
        close = one[(one["mean_abs_cos"] - baseline).abs() <= near]
        text += (
            f" (within {near:g} of random from layer {close['layer'].iloc[0]})"
            if len(close)
            else ""
        )
        parts.append(text)
    # Here, not at the top: the workflow imports this module when it parses, and the
    # normalization package brings scipy.
    from galu.normalization.correlation_map import correlation_map

    first, last = rows["layer"].min(), rows["layer"].max()
    step = 1e-6  # central difference of the closed form at rho = 0
    slopes = [
        f"{a} {number((correlation_map(a, step) - correlation_map(a, -step)) / (2 * step), ZERO)}"
        for a in ("relu", "tilted_relu")
    ]
    return [
        "Theory, the fraction of a small correlation one layer keeps (slope at 0): "
        + _join(slopes)
        + ".",
        f"Mean |cos| from layer {first} to layer {last} (independent random vectors: "
        f"{number(baseline)}): " + _join(parts) + ".",
    ]


def isometry(tables: Mapping[str, pd.DataFrame]) -> list[str]:
    """Mean Kolmogorov-Smirnov distance to Marchenko-Pastur per activation, raw and normalized."""
    rows = tables["results/normalization/isometry.csv"]
    ks = rows.groupby(["activation", "variant"], sort=False)["ks_distance"].mean()
    parts = [
        f"{activation} raw {number(ks.get((activation, 'raw'), math.nan))}, normalized "
        f"{number(ks.get((activation, 'normalized'), math.nan))}"
        for activation in dict.fromkeys(rows["activation"])
    ]
    return ["Mean KS distance to Marchenko-Pastur: " + _join(parts) + "."]


def layer_spectra(tables: Mapping[str, pd.DataFrame]) -> list[str]:
    """Per panel (first seed, smallest width): the spread of the deepest square layer's
    eigenvalues after training."""
    rows = tables["results/normalization/spectra.csv"]
    rows = rows[(rows["seed"] == rows["seed"].min()) & (rows["width"] == rows["width"].min())]
    rows = rows[(rows["stage"] == "trained") & (rows["layer"] > 1)]
    rows = rows[rows["layer"] <= rows["depth"]]
    parts = []
    for (activation, depth), net in rows.groupby(["activation", "depth"], sort=False):
        deepest = net[net["layer"] == net["layer"].max()]["eigenvalue"]
        parts.append(
            f"{activation}, depth {depth}: {number(deepest.min())} to {number(deepest.max())}"
        )
    return ["Eigenvalues of the deepest hidden layer after training: " + _join(parts) + "."]


Describe = Callable[[Mapping[str, pd.DataFrame]], list[str]]
SCM = ("results/scm/trajectories.csv", "results/scm/stability.csv")
# figure -> (the CSVs it is drawn from, the function that describes them)
OBSERVATIONS: dict[str, tuple[tuple[str, ...], Describe]] = {
    "figures/scm/perceptron.png": (SCM, perceptron),
    "figures/scm/relu_k2m2.png": (SCM, scm_settings(["relu_k2m2"])),
    "figures/scm/k3m2.png": (SCM, scm_settings(["relu_k3m2", "erf_k3m2"])),
    "figures/scm/relu_k2m3.png": (SCM, scm_settings(["relu_k2m3"])),
    "figures/memorization/zero_error.png": (("results/memorization/min_width.csv",), zero_error),
    "figures/memorization/min_width.png": (("results/memorization/min_width.csv",), min_width),
    "figures/memorization/underparam.png": (
        ("results/memorization/underparam.csv",),
        underparam,
    ),
    "figures/normalization/max_depth.png": (
        ("results/normalization/max_depth.csv",),
        max_depth,
    ),
    "figures/normalization/training_curves.png": (
        ("results/normalization/trainability.csv",),
        training,
    ),
    "figures/normalization/jacobian_spectra.png": (
        ("results/normalization/jacobian.csv",),
        jacobian_spectra,
    ),
    "figures/normalization/correlations.png": (
        ("results/normalization/correlations.csv",),
        correlations,
    ),
    "figures/normalization/isometry.png": (("results/normalization/isometry.csv",), isometry),
    "figures/normalization/layer_spectra.png": (
        ("results/normalization/spectra.csv",),
        layer_spectra,
    ),
}


def observation_sources(figures: Sequence[str]) -> list[str]:
    """The CSVs the observations of ``figures`` read (inputs of the claims rule)."""
    return sorted({s for f in figures if f in OBSERVATIONS for s in OBSERVATIONS[f][0]})


def observations(figure: str, root: str | Path | OutputRoot = ".") -> list[str]:
    """The sentences describing ``figure``'s data (contract paths; ``root``: the run's
    outputs, see galu.workflow.scales); none for a figure without an entry."""
    if figure not in OBSERVATIONS:
        return []
    sources, describe = OBSERVATIONS[figure]
    tables = {s: pd.read_csv(output_root(root) / s) for s in sources}
    return describe(tables)


def observations_rst(figure: str, root: str | Path | OutputRoot = ".") -> str:
    """The caption paragraph "What the data show" (literal text inside Jinja ``raw`` tags,
    like the verdicts), or an empty string."""
    lines = observations(figure, root)
    if not lines:
        return ""
    sources = ", ".join(f"``{s}``" for s in OBSERVATIONS[figure][0])
    body = "\n".join(f"- {rst_escape(line)}" for line in lines)
    return (
        f"\n{{% raw %}}\n\n**What the data show** (computed from {sources} by "
        f"``galu/workflow/observations.py``):\n\n{body}\n\n{{% endraw %}}\n"
    )
