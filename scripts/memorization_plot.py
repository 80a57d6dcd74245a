"""Figure of one memorization experiment from its table (never trains).

underparam: normalized training loss against kd/m with the laws 1 - kd/m and 1 - 2kd/m;
min_width: minimal width against the label dimension; zero_error: min_width * d / m
against m per d (Fiat, Malach & Shalev-Shwartz, arXiv 1906.05032, sec. 3).
"""

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from galu.plotting import legend_outside, log_ticks, scaled_title, use_style
from galu.provenance import Run, log_to_file

LABELS = {"relu": "ReLU (trained)", "galu": "GaLU (trained)", "galu_exact": "GaLU (exact)"}
MARKERS = {"relu": "o", "galu": "s", "galu_exact": "^"}
COLOURS = {"relu": "C0", "galu": "C1", "galu_exact": "C2"}


def style(model: str) -> dict:
    """Marker, colour and legend label of a model, the same in every figure."""
    return {
        "marker": MARKERS.get(model, "o"),
        "color": COLOURS.get(model, "C3"),
        "label": LABELS.get(model, model),
    }


def underparam_figure(rows: pd.DataFrame) -> plt.Figure:
    fig, ax = plt.subplots(figsize=(6.4, 4.6))
    x = np.linspace(0.0, rows["kd_over_m"].max(), 200)
    ax.plot(x, 1 - x, "k--", lw=1, label="1 - kd/m (GaLU law)")
    ax.plot(x, np.clip(1 - 2 * x, 0, None), "k:", lw=1, label="max(0, 1 - 2kd/m)")
    points = rows.groupby(["model", "m", "d", "k", "kd_over_m"]).train_loss
    stats = points.agg(["mean", "std"]).reset_index()
    for model, part in stats.groupby("model", sort=False):
        ax.errorbar(
            part["kd_over_m"],
            part["mean"],
            part["std"],
            ls="none",
            ms=5,
            alpha=0.8,
            capsize=2,
            **style(model),
        )
    ax.set(xlabel="kd / m", ylabel="training MSE / label variance", ylim=(-0.03, 1.05))
    legend_outside(ax)
    return fig


def min_width_figure(rows: pd.DataFrame) -> plt.Figure:
    fig, ax = plt.subplots(figsize=(6.4, 4.6))
    m, d = int(rows["m"].iloc[0]), int(rows["d"].iloc[0])
    dims = np.geomspace(rows["out_dim"].min(), rows["out_dim"].max(), 100)
    ax.plot(dims, m * dims / (d + dims), "k--", lw=1, label="k (d + out_dim) = m out_dim")
    ax.axhline(m / d, color="k", ls=":", lw=1, label="m / d")
    for model, part in rows.groupby("model", sort=False):
        found = part[part["found"]].groupby("out_dim")["min_width"].mean()
        ax.plot(found.index, found.values, **style(model))
        missing = part[~part["found"]]
        ax.plot(missing["out_dim"], missing["search_hi"], ls="none", marker="x", color="C3")
    ax.set(
        xscale="log",
        yscale="log",
        xlabel="label dimension out_dim",
        ylabel="minimal width k",
        title=f"m = {m}, d = {d}",
    )
    log_ticks(ax, "x")
    log_ticks(ax, "y")
    legend_outside(ax)
    return fig


def zero_error_figure(rows: pd.DataFrame) -> plt.Figure:
    fig, ax = plt.subplots(figsize=(6.4, 4.6))
    ax.axhline(1.0, color="k", ls=":", lw=1, label="k = m / d")
    styles = dict(zip(sorted(rows["d"].unique()), ["-", "--", "-.", ":"] * 4, strict=False))
    for (model, d), part in rows.groupby(["model", "d"], sort=False):
        mean = part.groupby("m")["kd_over_m"].mean()
        ax.plot(
            mean.index,
            mean.values,
            ls=styles[d],
            **{**style(model), "label": f"{LABELS.get(model, model)}, d = {d}"},
        )
    ax.set_xscale("log", base=2)
    ax.set(xlabel="examples m", ylabel="min_width * d / m")
    ax.minorticks_off()
    ax.set_xticks(sorted(rows["m"].unique()), [str(m) for m in sorted(rows["m"].unique())])
    ax.set_ylim(0, max(2.0, 1.1 * rows["kd_over_m"].max()))
    legend_outside(ax, fontsize="small")
    return fig


TITLES = {
    "underparam": "Under-parameterized memorization: loss against kd/m",
    "min_width": "Minimal width to fit Gaussian label vectors",
    "zero_error": "Minimal width to memorize random signs",
}

log_to_file(snakemake.log[0])
run = Run.from_snakemake(snakemake)
table = pd.read_csv(snakemake.input.csv)
name = snakemake.params.figure
use_style()
fig = {
    "underparam": underparam_figure,
    "min_width": min_width_figure,
    "zero_error": zero_error_figure,
}[name](table)
scaled_title(fig, TITLES[name], snakemake.params.scale)
run.save_figure(fig, snakemake.output.png, seeds=sorted(int(s) for s in table["seed"].unique()))
