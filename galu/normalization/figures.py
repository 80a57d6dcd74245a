"""Figures of the static-normalization study (Richemond & Guo, arXiv 1905.01369).

One ``draw_<figure>(tables, *, scale, **params) -> Figure`` per figure: ``tables`` maps a
table's name (as :mod:`galu.normalization.stage` declares the figure's tables) to
the tidy CSV read as a frame. Nothing here trains, integrates or reads files, so every
figure can be tested on a few hand-written rows. Every activation keeps its colour in every
figure (:func:`galu.plotting.activation_colour`); the title names the run's scale. The
training figures are in :mod:`galu.normalization.training_figures`, the spectra's in
:mod:`galu.normalization.spectra_figures`; :data:`DRAW` lists them all.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping

import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from galu.activations import get_activation
from galu.normalization.correlation_map import correlation_map
from galu.normalization.isometry import mp_density
from galu.normalization.spectra_figures import (
    draw_jacobian,
    draw_layer_spectra,
    layer_drift,
    smallest_width,
)
from galu.normalization.training_figures import (
    RATIO_TOP,
    draw_ablation,
    draw_depth_scales,
    draw_max_depth,
    draw_training,
)
from galu.normalization.width_figures import draw_widths
from galu.plotting import (
    activation_colour,
    in_order,
    legend_outside,
    plt,  # imported from there: it selects the Agg backend first
    scaled_title,
)
from galu.seeding import seeds_in

Tables = Mapping[str, pd.DataFrame]


def draw_coefficients(tables: Tables, *, scale: str, x_max: float) -> Figure:
    """Each activation f (left) beside its static normalization (right),
    ``(f(x) - alpha x - beta) / gamma`` (paper Eq. 3), on ``[-x_max, x_max]``.

    ``tables["coefficients"]``: one row per activation with ``alpha, beta, gamma``.
    """
    fig, (raw, norm) = plt.subplots(1, 2, figsize=(9.6, 4.0), sharex=True)
    x = np.linspace(-x_max, x_max, 801)
    for row in tables["coefficients"].itertuples():
        f = get_activation(row.activation).f
        colour = activation_colour(row.activation)
        raw.plot(x, f(x), label=row.activation, color=colour)
        norm.plot(x, (f(x) - row.alpha * x - row.beta) / row.gamma, color=colour)
    raw.set(xlabel="pre-activation x", ylabel="f(x)", title="raw")
    norm.set(
        xlabel="pre-activation x", ylabel="(f(x) - alpha x - beta) / gamma", title="normalized"
    )
    # One legend for both panels, beside the right one (never over the curves).
    handles, labels = raw.get_legend_handles_labels()
    norm.legend(handles, labels, loc="upper left", bbox_to_anchor=(1.02, 1.0), borderaxespad=0.0)
    scaled_title(fig, "Activations and their static normalization", scale)
    return fig


def draw_isometry(tables: Tables, *, scale: str, bins: int) -> Figure:
    """Static isometry (paper Sec. 3): per activation, histograms of the eigenvalues of
    ``(1/n) F F^T`` raw and normalized, against Marchenko-Pastur's density.

    Eigenvalues are divided by the MP variance ``E f(z)^2``, so every panel compares with
    MP(1) on [0, 4]; only the first seed is drawn. The KS distances (mean over seeds) and
    the count of eigenvalues beyond the axis go in the panel's title, not over the data.
    ``tables``: ``isometry`` (summary per activation, variant, seed) and ``eigenvalues``.
    """
    summary, eigen = tables["isometry"], tables["eigenvalues"]
    first_seed = eigen["seed"].min()
    activations = in_order(summary["activation"])
    cols = min(3, len(activations))
    rows = math.ceil(len(activations) / cols)
    fig, axes = plt.subplots(
        rows, cols, figsize=(3.8 * cols, 3.1 * rows + 0.4), squeeze=False, layout="constrained"
    )
    edges = np.linspace(0.0, 6.0, bins + 1)
    x = np.linspace(1e-3, 4.0, 400)
    for ax, activation in zip(axes.flat, activations, strict=False):
        mine = summary[summary["activation"] == activation]
        ks = mine.groupby("variant")["ks_distance"].mean()
        notes = []
        for variant, color in (("raw", "C1"), ("normalized", "C0")):
            row = mine[mine["variant"] == variant]
            lam = eigen[
                (eigen["activation"] == activation)
                & (eigen["variant"] == variant)
                & (eigen["seed"] == first_seed)
            ]
            scaled = lam["eigenvalue"].to_numpy() / row["mp_variance"].iloc[0]
            outside = int(np.sum(scaled > edges[-1]))
            notes.append(
                f"{variant} KS {ks[variant]:.3f}" + (f", {outside} > 6" if outside else "")
            )
            ax.hist(
                np.clip(scaled, 0, edges[-1]),
                bins=edges,
                density=True,
                histtype="step",
                color=color,
                label=variant,
            )
        ax.plot(x, mp_density(x), color="k", lw=1.0, ls="--", label="Marchenko-Pastur")
        ax.set(
            title=f"{activation}\n{'; '.join(notes)}",
            xlabel="eigenvalue / E f(z)^2",
            ylabel="density",
            ylim=(0, 1.2),
        )
    # One legend for the three line styles, the same in every panel, below the panels.
    handles, labels = axes.flat[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="outside lower center", ncol=len(labels))
    for ax in list(axes.flat)[len(activations) :]:
        ax.set_axis_off()
    title = f"Static isometry: spectra of (1/n) F F^T, n = {summary['n'].iloc[0]}"
    scaled_title(fig, title, scale)
    return fig


# (re-exported for the tests and the stage: every figure of the study is reached from here)
__all__ = ["DRAW", "RATIO_TOP", "SHOWN_SEEDS", "layer_drift"]


def draw_correlations(tables: Tables, *, scale: str) -> Figure:
    """Correlation propagation, the diagnostic of the depth experiments: (a) the centred
    correlation after one layer as a function of the input correlation, for Gaussian inputs
    (:func:`galu.normalization.correlation.correlation_map`; the tilted ReLU equals |x|);
    (b) the measured mean |cos| of two CIFAR-10 images' centred representations per layer,
    networks at initialization, against independent random vectors.
    ``tables["correlations"]``: one row per activation, layer and seed.
    """
    table = tables["correlations"]
    fig, (theory, measured) = plt.subplots(1, 2, figsize=(12, 4), layout="constrained")
    rho = np.linspace(0.0, 1.0, 201)
    theory.plot(rho, rho, color="k", ls=":", lw=1, label="identity")
    for activation in ("relu", "tilted_relu"):
        theory.plot(
            rho,
            correlation_map(activation, rho),
            color=activation_colour(activation),
            label=f"{activation}" + (" (= abs)" if activation == "tilted_relu" else ""),
        )
    theory.set(
        xlabel="input correlation rho",
        ylabel="centred correlation after one layer",
        title="(a) one layer, Gaussian inputs (theory)",
    )
    legend_outside(theory)
    for activation in in_order(table["activation"]):
        rows = table[table["activation"] == activation].sort_values("layer")
        measured.plot(
            rows["layer"],
            rows["mean_abs_cos"],
            color=activation_colour(activation),
            label=activation,
        )
    baseline = table["random_baseline"].iloc[0]
    measured.axhline(baseline, color="k", ls="--", lw=1, label="independent random vectors")
    measured.set(
        xlabel="hidden layer l",
        ylabel="mean |cos| of two images' centred h_l",
        title="(b) CIFAR-10 test images, networks at initialization",
        ylim=(0, 1),
    )
    legend_outside(measured)
    scaled_title(fig, "Correlation propagation in deep plain MLPs", scale)
    return fig


# figure -> the seeds of the rows it draws (recorded in the figure's provenance sidecar)
SHOWN_SEEDS: dict[str, Callable[[Tables], list[int]]] = {
    "coefficients": lambda tables: [],
    "isometry": lambda tables: [int(tables["eigenvalues"]["seed"].min())],
    "training": lambda tables: seeds_in(tables["trainability"]),
    "max_depth": lambda tables: seeds_in(tables["runs"]),
    "layer_spectra": lambda tables: seeds_in(tables["spectra"]),
    "jacobian": lambda tables: seeds_in(smallest_width(tables["jacobian"])),
    "correlations": lambda tables: seeds_in(tables["correlations"]),
    "ablation": lambda tables: seeds_in(pd.concat([tables["ablation"], tables["runs"]])),
    "depth_scales": lambda tables: seeds_in(tables["runs"]),
    "widths": lambda tables: seeds_in(
        pd.concat([tables["widths"], tables["correlations"], tables["wide_correlations"]])
    ),
}
DRAW: dict[str, Callable[..., Figure]] = {
    "coefficients": draw_coefficients,
    "isometry": draw_isometry,
    "training": draw_training,
    "max_depth": draw_max_depth,
    "layer_spectra": draw_layer_spectra,
    "jacobian": draw_jacobian,
    "correlations": draw_correlations,
    "ablation": draw_ablation,
    "depth_scales": draw_depth_scales,
    "widths": draw_widths,
}
