"""Figures of the static-normalization study (Richemond & Guo, arXiv 1905.01369).

One ``draw_<figure>(tables, *, scale, **params) -> Figure`` per figure: ``tables`` maps a
table's name (as :mod:`galu.normalization.stage` declares the figure's tables) to
the tidy CSV read as a frame. Nothing here trains, integrates or reads files, so every
figure can be tested on a few hand-written rows. Every activation keeps its colour in every
figure (:func:`galu.plotting.activation_colour`); the title names the run's scale.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping

import numpy as np
import pandas as pd
from matplotlib import cm, colors
from matplotlib.figure import Figure

from galu.activations import get_activation
from galu.normalization.correlation_map import correlation_map
from galu.normalization.isometry import mp_density
from galu.normalization.jacobian_summary import JACOBIAN_FLOOR, jacobian_stats
from galu.normalization.sentences import TRAINABLE_XI
from galu.plotting import (
    activation_colour,
    legend_outside,
    log_ticks,
    mark_zero_bars,
    plt,  # imported from there: it selects the Agg backend first
    scaled_title,
)
from galu.seeding import seeds_in

Tables = Mapping[str, pd.DataFrame]
BAR_HATCHES = ["", "//", "..", "xx"]
WIDTH_STYLES = ["-", "--", ":", "-."]


def _in_order(column: pd.Series) -> list[str]:
    """A column's distinct values in order of first appearance (the table's own order)."""
    return list(dict.fromkeys(column))


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
    activations = _in_order(summary["activation"])
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


def draw_training(tables: Tables, *, scale: str) -> Figure:
    """Training loss (top, log) and test error (bottom) per epoch of the deep plain MLPs on
    CIFAR-10 (paper Sec. 4): one column per depth, one line per run, one colour per
    activation, one line style per width (named in the legend's title when there are
    several). ``tables["trainability"]``: the ``trainability.csv`` layout.
    """
    curves = tables["trainability"]
    depths = sorted(curves["depth"].unique())
    activations = _in_order(curves["activation"])
    widths = sorted(curves["width"].unique())
    styles = dict(zip(widths, WIDTH_STYLES, strict=False))
    fig, axes = plt.subplots(
        2,
        len(depths),
        figsize=(3.4 * len(depths), 5.6),
        squeeze=False,
        sharex=True,
        sharey="row",
        layout="constrained",
    )
    for col, depth in enumerate(depths):
        for activation in activations:
            runs = curves[(curves["depth"] == depth) & (curves["activation"] == activation)]
            for (width, seed), one in runs.groupby(["width", "seed"]):
                label = activation if seed == runs["seed"].min() and width == widths[0] else None
                kw = {
                    "color": activation_colour(activation),
                    "ls": styles.get(width, "-"),
                    "label": label,
                    "lw": 1.2,
                }
                axes[0, col].plot(one["epoch"], one["train_loss"], **kw)
                axes[1, col].plot(one["epoch"], one["test_error"], **kw)
        axes[0, col].set(title=f"depth {depth}", yscale="log")
        axes[1, col].set(xlabel="epoch")
    axes[0, 0].set_ylabel("training loss")
    axes[1, 0].set_ylabel("test error")
    several = len(widths) > 1
    legend_outside(
        axes[0, -1], title=", ".join(f"w={w}: {s}" for w, s in styles.items()) if several else None
    )
    for ax in axes[0]:
        log_ticks(ax, "y")
    scaled_title(fig, "Deep plain MLPs on CIFAR-10", scale)
    return fig


def _depth_bars(ax: plt.Axes, depth: pd.DataFrame, runs: pd.DataFrame) -> None:
    """Max trainable depth per activation, one hatched bar per width; a depth of 0 (no
    tested depth trains) is a result, marked on the axis rather than left as a gap."""
    activations = _in_order(depth["activation"])
    widths = sorted(depth["width"].unique())
    bar_colours = [activation_colour(a) for a in activations]
    step = 0.8 / len(widths)
    for j, width in enumerate(widths):
        d = depth[depth["width"] == width].set_index("activation").reindex(activations)
        x = np.arange(len(activations)) + (j - (len(widths) - 1) / 2) * step
        ax.bar(
            x,
            d["max_trainable_depth"],
            width=step,
            color=bar_colours,
            hatch=BAR_HATCHES[j % len(BAR_HATCHES)],
            edgecolor="white",
            label=f"w = {width}",
        )
        mark_zero_bars(ax, x, d["max_trainable_depth"].fillna(-1), bar_colours)
    ax.set_xticks(np.arange(len(activations)), activations, rotation=20)
    tested = sorted(runs["depth"].unique())
    ax.set(ylabel="max trainable depth", yticks=[0, *tested], title="deepest depth that trains")
    if len(widths) > 1:
        legend_outside(ax)


def _loss_ratios(ax: plt.Axes, runs: pd.DataFrame, activations: list[str], fraction: float) -> None:
    """Each run's best loss over its reference loss against depth (points; x: diverged),
    the mean per depth (line) and the threshold ``fraction`` below which a run trains."""
    for activation in activations:
        colour = activation_colour(activation)
        one = runs[runs["activation"] == activation]
        mean = one.groupby("depth")["loss_ratio"].mean()
        ax.plot(mean.index, mean.to_numpy(), marker="o", color=colour, label=activation)
        ax.scatter(one["depth"], one["loss_ratio"], color=colour, s=8, alpha=0.5)
        diverged = one[one["diverged"]]
        ax.scatter(diverged["depth"], diverged["loss_ratio"], color=colour, marker="x", s=40)
    ax.axhline(fraction, color="k", ls="--", lw=1, label=f"trains below {fraction}")
    ax.set(
        xlabel="depth (hidden layers)",
        ylabel="best loss / min(initial, ln 10)",
        title="training progress within the epoch budget (x: diverged)",
    )
    legend_outside(ax)


def draw_max_depth(tables: Tables, *, scale: str, loss_fraction: float) -> Figure:
    """The paper's trainability claim (Sec. 4: ReLU to about 30 layers, the tilted ReLU to
    60): the deepest depth that trains per activation and width (left), and each run's
    loss ratio against depth (right). ``tables``: ``max_depth`` and ``runs``
    (``trainability_runs.csv``); ``loss_fraction``: the trainability threshold.
    """
    depth, runs = tables["max_depth"], tables["runs"]
    fig, (bars, ratios) = plt.subplots(1, 2, figsize=(12.5, 4.2), layout="constrained")
    _depth_bars(bars, depth, runs)
    _loss_ratios(ratios, runs, _in_order(depth["activation"]), loss_fraction)
    scaled_title(fig, "Trainability of deep plain MLPs on CIFAR-10", scale)
    return fig


# TRAINABLE_XI (galu.normalization.sentences): Schoenholz et al. (ICLR 2017, Sec. 5)'s
# trainable depth, six correlation depth scales xi_c; the figure marks it for each activation
# whose xi_c is finite, and its caption says it.


def _xi_label(activation: str, scales: pd.DataFrame) -> str:
    row = scales[scales["activation"] == activation]
    if row.empty:
        return f"{activation} (no mean-field scale)"
    xi = float(row["xi_c"].iloc[0])
    return f"{activation}, xi_c = {'inf' if math.isinf(xi) else f'{xi:.3g}'}"


def draw_depth_scales(tables: Tables, *, scale: str) -> Figure:
    """Theory beside measurement (ours): each activation's mean final test error against
    depth (one line per width), labelled with its mean-field correlation depth scale xi_c,
    with a dotted vertical line at ``6 xi_c`` (Schoenholz et al. 2017's trainable depth)
    where that falls within the depths drawn. ``tables``: ``runs``
    (``trainability_runs.csv``) and ``depth_scales`` (``depth_scales.csv``).
    """
    runs, scales = tables["runs"], tables["depth_scales"]
    widths = sorted(runs["width"].unique())
    styles = dict(zip(widths, WIDTH_STYLES * len(widths), strict=False))
    fig, ax = plt.subplots(figsize=(8.5, 4.4), layout="constrained")
    deepest = float(runs["depth"].max())
    for activation in _in_order(runs["activation"]):
        colour = activation_colour(activation)
        one = runs[runs["activation"] == activation]
        for width in widths:
            mean = one[one["width"] == width].groupby("depth")["final_test_error"].mean()
            label = _xi_label(activation, scales) if width == widths[0] else None
            ax.plot(mean.index, mean.to_numpy(), marker="o", color=colour, ls=styles[width],
                    label=label)  # fmt: skip
        xi = scales.loc[scales["activation"] == activation, "xi_c"]
        if len(xi) and 0 < TRAINABLE_XI * float(xi.iloc[0]) <= deepest:
            ax.axvline(TRAINABLE_XI * float(xi.iloc[0]), color=colour, ls=":", lw=1.5)
    ax.set(xlabel="depth (hidden layers)", ylabel="final test error",
           title=f"dotted: {TRAINABLE_XI:g} xi_c, where within the depths trained")  # fmt: skip
    legend_outside(
        ax, title=", ".join(f"w={w}: {s}" for w, s in styles.items()) if len(widths) > 1 else None
    )
    scaled_title(fig, "Mean-field depth scales beside the measured errors", scale)
    return fig


OPTIMIZER_TITLES = {"sgd": "SGD with momentum", "adam": "Adam"}


# The ablation's loss-ratio axis stops here: a blown-up run (ratio 10 or more) would flatten
# the rest; it is drawn at the top as a triangle.
RATIO_TOP = 1.5


def _ablation_line(ax: plt.Axes, x: pd.Series, y: pd.Series, top: float | None, **kw) -> None:
    """One line of the ablation figure; values above ``top`` drawn there as triangles."""
    shown = y if top is None else y.clip(upper=top)
    ax.plot(x, shown, **kw)
    if top is not None and (y > top).any():
        ax.scatter(x[y > top], shown[y > top], marker="^", s=40, color=kw["color"])


def draw_ablation(tables: Tables, *, scale: str, loss_fraction: float) -> Figure:
    """The ablation (ours): at one depth, each network's best loss over its reference (top;
    the threshold ``loss_fraction`` dashed; ratios above :data:`RATIO_TOP`, and diverged runs,
    at the top as triangles) and final test error (bottom) against its gain factor, one column per
    optimizer, one colour per activation, one line style per learning rate.
    ``tables["ablation"]``: the ``ablation.csv`` layout.
    """
    table = tables["ablation"]
    optimizers = _in_order(table["optimizer"])
    fig, axes = plt.subplots(
        2,
        len(optimizers),
        figsize=(4.2 * len(optimizers) + 1.8, 5.6),
        squeeze=False,
        sharey="row",
        layout="constrained",
    )
    for col, optimizer in enumerate(optimizers):
        runs = table[table["optimizer"] == optimizer]
        lrs = sorted(runs["lr"].unique())
        styles = dict(zip(lrs, WIDTH_STYLES * len(lrs), strict=False))
        for activation in _in_order(runs["activation"]):
            for lr in lrs:
                one = runs[(runs["activation"] == activation) & (runs["lr"] == lr)]
                one = one.sort_values("gain_factor")
                kw = {
                    "color": activation_colour(activation),
                    "ls": styles[lr],
                    "marker": "o",
                    "ms": 4,
                    "label": activation if lr == lrs[0] else None,
                }
                x = one["gain_factor"]
                # a diverged run's ratio is no measurement: it goes to the top with the blown-up
                ratio = one["loss_ratio"].where(~one["diverged"].astype(bool), math.inf)
                _ablation_line(axes[0, col], x, ratio, RATIO_TOP, **kw)
                _ablation_line(axes[1, col], x, one["final_test_error"], None, **kw)
        axes[0, col].axhline(loss_fraction, color="k", ls="--", lw=1)
        title = OPTIMIZER_TITLES.get(optimizer, optimizer)
        rates = ", ".join(f"{lr:g} {s}" for lr, s in styles.items())
        axes[0, col].set(title=f"{title}\nlr: {rates}", ylim=(0, RATIO_TOP * 1.05))
        axes[1, col].set(xlabel="gain / critical gain")
    axes[0, 0].set_ylabel(f"best loss / min(initial, ln 10)\n(trains below {loss_fraction})")
    axes[1, 0].set_ylabel("final test error")
    legend_outside(axes[0, -1])
    depth, width = int(table["depth"].iloc[0]), int(table["width"].iloc[0])
    scaled_title(fig, f"Ablation at depth {depth}, width {width}, on CIFAR-10", scale)
    return fig


def first_network(spectra: pd.DataFrame) -> pd.DataFrame:
    """The rows :func:`draw_layer_spectra` draws: the first seed at the smallest width, square
    hidden layers only (layer 1 maps the 3072 inputs, the last one is the 10-way readout)."""
    spectra = spectra[
        (spectra["seed"] == spectra["seed"].min()) & (spectra["width"] == spectra["width"].min())
    ]
    return spectra[(spectra["layer"] > 1) & (spectra["layer"] <= spectra["depth"])]


def _layer_panel(fig: Figure, ax: plt.Axes, net: pd.DataFrame, title: str, depth: int) -> None:
    """One network's sorted eigenvalues of ``W_l W_l^T`` after training, coloured by layer,
    with the mean eigenvalue at initialization dashed (its value in the title)."""
    cmap = plt.get_cmap("viridis")
    norm = colors.Normalize(2, max(depth, 3))
    for layer, one in net[net["stage"] == "trained"].groupby("layer"):
        ax.plot(
            one["index"] / one["index"].max(), one["eigenvalue"], color=cmap(norm(layer)), lw=0.8
        )
    init = net.loc[net["stage"] == "init", "eigenvalue"]
    if not init.empty:
        # The init level is named in the title: a legend would cover the curves.
        ax.axhline(init.mean(), color="k", ls="--", lw=1)
        title += f"\n(dashed: init, {init.mean():.2f})"
    ax.set(title=title, yscale="log", xlabel="rank / width")
    fig.colorbar(cm.ScalarMappable(norm=norm, cmap=cmap), ax=ax, label="layer")


def draw_layer_spectra(tables: Tables, *, scale: str) -> Figure:
    """Paper Fig. 6: sorted eigenvalues of ``W_l W_l^T`` per hidden layer after training,
    one panel per activation (rows) and depth (columns), of :func:`first_network`.
    ``tables["spectra"]``: the ``spectra.csv`` layout.
    """
    spectra = first_network(tables["spectra"])
    activations = _in_order(spectra["activation"])
    depths = sorted(spectra["depth"].unique())
    fig, axes = plt.subplots(
        len(activations),
        len(depths),
        figsize=(3.4 * len(depths), 3.0 * len(activations)),
        squeeze=False,
        sharey=True,
        layout="constrained",
    )
    for row, activation in enumerate(activations):
        for col, depth in enumerate(depths):
            net = spectra[(spectra["activation"] == activation) & (spectra["depth"] == depth)]
            _layer_panel(fig, axes[row, col], net, f"{activation}, depth {depth}", depth)
        axes[row, 0].set_ylabel("eigenvalue of W W^T")
    for ax in axes.flat:
        log_ticks(ax, "y")
    scaled_title(fig, "Layer spectra after training (paper Fig. 6)", scale)
    return fig


def smallest_width(jacobian: pd.DataFrame) -> pd.DataFrame:
    """The rows :func:`draw_jacobian` draws: the networks of the smallest width."""
    return jacobian[jacobian["width"] == jacobian["width"].min()]


def _jacobian_cdf(ax: plt.Axes, values: np.ndarray, colour: str, depth: int, low: float) -> None:
    """The CDF of one network's squared singular values on a log axis. Values below
    JACOBIAN_FLOOR are numerically zero (ReLU: rank lost to inactive units) and have no
    place on a log axis: they are not drawn, the CDF starts at their fraction (a hollow
    marker at the left edge), and the legend states that fraction."""
    stats = jacobian_stats(values)
    above = np.sort(values[values >= JACOBIAN_FLOOR])
    zeros = values.size - above.size
    label = f"depth {depth}"
    if zeros:
        label += f": {100 * stats.at_floor:.0f} % < {JACOBIAN_FLOOR:g}, not drawn"
    cdf = (zeros + np.arange(1, above.size + 1)) / values.size
    ax.step(above, cdf, where="post", color=colour, label=label)
    if zeros:
        ax.plot([above[0] if above.size else low], [zeros / values.size], "o",
                color=colour, ms=4, mfc="white")  # fmt: skip


def draw_jacobian(tables: Tables, *, scale: str) -> Figure:
    """CDF of the input-output Jacobian's squared singular values at initialization, one
    panel per activation, one curve per depth (:func:`smallest_width` networks).

    The values span many decades (ReLU) or sit exactly at 1 (tilted ReLU, |x|: each layer's
    Jacobian is orthogonal, paper Sec. 4): a CDF on a shared log axis shows both.
    ``tables["jacobian"]``: one row per squared singular value.
    """
    jac = smallest_width(tables["jacobian"])
    activations = _in_order(jac["activation"])
    depths = sorted(jac["depth"].unique())
    fig, axes = plt.subplots(
        1,
        len(activations),
        figsize=(4.8 * len(activations), 3.8),
        squeeze=False,
        sharex=True,
        sharey=True,
        layout="constrained",
    )
    low = jac.loc[jac["squared_singular_value"] >= JACOBIAN_FLOOR, "squared_singular_value"].min()
    for ax, activation in zip(axes[0], activations, strict=True):
        for i, depth in enumerate(depths):
            values = jac.query("activation == @activation and depth == @depth")[
                "squared_singular_value"
            ].to_numpy()
            if values.size:
                _jacobian_cdf(ax, values, f"C{i}", depth, low)
        ax.set(title=activation, xscale="log", xlabel="squared singular value of d h_L / d h_1")
        ax.axvline(1.0, color="k", ls=":", lw=1)
        legend_outside(ax, loc="upper left", bbox_to_anchor=(0.0, -0.22))
    for ax in axes[0]:
        log_ticks(ax, "x")
    axes[0, 0].set_ylabel("fraction of singular values")
    scaled_title(fig, "Input-output Jacobian spectra at initialization", scale)
    return fig


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
    for activation in _in_order(table["activation"]):
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
    "layer_spectra": lambda tables: seeds_in(first_network(tables["spectra"])),
    "jacobian": lambda tables: seeds_in(smallest_width(tables["jacobian"])),
    "correlations": lambda tables: seeds_in(tables["correlations"]),
    "ablation": lambda tables: seeds_in(tables["ablation"]),
    "depth_scales": lambda tables: seeds_in(tables["runs"]),
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
}
