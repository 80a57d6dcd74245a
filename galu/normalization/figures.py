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
    legend_proxy,
    log_ticks,
    mark_zero_bars,
    panel_note,
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


def _run_end(ax: plt.Axes, one: pd.DataFrame, column: str, colour: str) -> bool:
    """A diverged run's curve stops at its last finite epoch: a cross there and the words
    "diverged" with that epoch, so an ending line is never read as a finished run. Returns
    whether the run diverged."""
    finite = one[np.isfinite(one[column])]
    diverged = len(finite) < len(one) or ("diverged" in one and one["diverged"].astype(bool).any())
    if diverged and len(finite):
        last = finite.iloc[-1]
        ax.plot([last["epoch"]], [last[column]], "x", ms=9, mew=2, color=colour, zorder=4)
        ax.annotate(
            f"diverged after epoch {int(last['epoch'])}",
            (last["epoch"], last[column]),
            xytext=(4, 4),
            textcoords="offset points",
            fontsize=8,
            color=colour,
        )
        return True
    return False


def draw_training(
    tables: Tables, *, scale: str, epoch: int, margin: float, pair: list[str]
) -> Figure:
    """The claim that the tilted ReLU reaches tanh-level test error in about ``epoch`` epochs
    (paper Sec. 4): test error (left) and training loss (right, log) per epoch of the deep
    plain MLPs on CIFAR-10 at the shallowest depth, the depth the claim reads; one line per
    run, one colour per activation, the claim's two activations ``pair`` (tilted ReLU, tanh)
    bold, one line style per width. At ``epoch`` a dotted line, and the claim's bound
    (``pair[1]``'s mean test error there plus ``margin``) as a bar; a run shorter than
    ``epoch`` says so in words; a diverged run ends with a cross and the word.
    ``tables["trainability"]``: the ``trainability.csv`` layout.
    """
    curves = tables["trainability"]
    depth = int(curves["depth"].min())
    curves = curves[curves["depth"] == depth]
    activations = [a for a in _in_order(curves["activation"]) if a not in pair]
    activations = [a for a in pair if a in set(curves["activation"])] + activations
    widths = sorted(curves["width"].unique())
    styles = dict(zip(widths, WIDTH_STYLES, strict=False))
    last = int(curves["epoch"].max())
    fig, (error, loss) = plt.subplots(1, 2, figsize=(12.5, 4.4), layout="constrained")
    for activation in activations:
        colour, bold = activation_colour(activation), activation in pair
        runs = curves[curves["activation"] == activation]
        for (width, seed), one in runs.groupby(["width", "seed"]):
            first = seed == runs["seed"].min() and width == widths[0]
            kw = {
                "color": colour,
                "ls": styles.get(width, "-"),
                "lw": 2.2 if bold else 1.0,
                "alpha": 1.0 if bold else 0.7,
                "label": activation if first else None,
            }
            error.plot(one["epoch"], one["test_error"], **kw)
            loss.plot(one["epoch"], one["train_loss"], **kw)
            _run_end(error, one, "test_error", colour)
            _run_end(loss, one, "train_loss", colour)
    if last >= epoch:
        reference = curves[(curves["activation"] == pair[1]) & (curves["epoch"] == epoch)]
        bound = float(reference["test_error"].mean()) + margin
        for ax in (error, loss):
            ax.axvline(epoch, color="k", ls=":", lw=1)
        error.plot([epoch - 2.5, epoch + 2.5], [bound, bound], color=activation_colour(pair[1]),
                   lw=4, solid_capstyle="butt", zorder=5,
                   label=f"claim: {pair[0]} at epoch {epoch}\nat most {pair[1]} + {margin:g}"
                   f" = {bound:.3f}")  # fmt: skip
        measured = curves[(curves["activation"] == pair[0]) & (curves["epoch"] == epoch)]
        if len(measured):
            value = float(measured["test_error"].mean())
            error.plot(
                [epoch],
                [value],
                "*",
                ms=14,
                color=activation_colour(pair[0]),
                mec="k",
                zorder=6,
                label=f"{pair[0]} at epoch {epoch}: {value:.3f}",
            )
    else:
        panel_note(error, f"this run trains {last} epochs:\nthe claim reads epoch {epoch},"
                   " not reached", y=0.85)  # fmt: skip
    error.set(xlabel="epoch", ylabel="test error", title=f"test error, depth {depth}")
    loss.set(xlabel="epoch", ylabel="training loss", title=f"training loss, depth {depth}",
             yscale="log")  # fmt: skip
    log_ticks(loss, "y")
    several = len(widths) > 1
    legend_outside(
        error,
        loc="upper left",
        bbox_to_anchor=(0.0, -0.16),
        ncol=3,
        title=", ".join(f"w={w}: {s}" for w, s in styles.items()) if several else None,
    )
    scaled_title(fig, f"Deep plain MLPs on CIFAR-10: the shallowest depth, {depth} layers", scale)
    return fig


def _depth_bars(
    ax: plt.Axes, depth: pd.DataFrame, runs: pd.DataFrame, paper_depths: Mapping[str, int]
) -> None:
    """Max trainable depth per activation, one hatched bar per width; a depth of 0 (no
    tested depth trains) is a result, marked on the axis rather than left as a gap, and an
    activation without a result says so. The paper's depth (``paper_depths``) is a black
    dashed bar across the activation's bars, its number above; how many of an activation's
    runs diverged is written under its name."""
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
            label=f"w = {width}" if len(widths) > 1 else None,
        )
        mark_zero_bars(ax, x, d["max_trainable_depth"].fillna(-1), bar_colours)
        for xi, value in zip(x, d["max_trainable_depth"], strict=True):
            if not np.isfinite(value):
                ax.annotate("no result", (xi, 0), xytext=(0, 4), textcoords="offset points",
                            ha="center", va="bottom", rotation=90, fontsize=8)  # fmt: skip
    marked = [a for a in activations if a in paper_depths]
    for activation in marked:
        i, paper = activations.index(activation), paper_depths[activation]
        ax.plot([i - 0.45, i + 0.45], [paper, paper], color="k", ls="--", lw=2.5, zorder=4,
                label="the paper's depth" if activation == marked[0] else None)  # fmt: skip
        ax.annotate(f"paper: {paper}", (i, paper), xytext=(0, 3), textcoords="offset points",
                    ha="center", va="bottom", fontsize=9, fontweight="bold")  # fmt: skip
    names = []
    for activation in activations:
        mine = runs[runs["activation"] == activation]
        count = int(mine["diverged"].astype(bool).sum()) if "diverged" in mine else 0
        names.append(activation + (f"\n{count} of {len(mine)}\nruns diverged" if count else ""))
    ax.set_xticks(np.arange(len(activations)), names, rotation=0, fontsize=8)
    tested = sorted(runs["depth"].unique())
    top = max([*tested, *paper_depths.values()])
    ax.set(ylabel="max trainable depth", yticks=sorted({0, *tested, *paper_depths.values()}),
           ylim=(0, top * 1.12), title="deepest depth that trains")  # fmt: skip
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


def draw_max_depth(
    tables: Tables, *, scale: str, loss_fraction: float, paper_depths: Mapping[str, int]
) -> Figure:
    """The paper's trainability claim (Sec. 4: ReLU to about 30 layers, the tilted ReLU to
    60, ``paper_depths``): the deepest depth that trains per activation and width beside
    the paper's (left), and each run's loss ratio against depth (right). ``tables``:
    ``max_depth`` and ``runs`` (``trainability_runs.csv``); ``loss_fraction``: the
    trainability threshold.
    """
    depth, runs = tables["max_depth"], tables["runs"]
    wide = max(12.5, 7.0 + 0.75 * len(_in_order(depth["activation"])))
    fig, (bars, ratios) = plt.subplots(1, 2, figsize=(wide, 4.4), layout="constrained")
    _depth_bars(bars, depth, runs, paper_depths)
    _loss_ratios(ratios, runs, _in_order(depth["activation"]), loss_fraction)
    scaled_title(fig, "Trainability of deep plain MLPs on CIFAR-10", scale)
    return fig


# TRAINABLE_XI (galu.normalization.sentences): Schoenholz et al. (ICLR 2017, Sec. 5)'s
# trainable depth, six correlation depth scales xi_c; the figure marks it for each activation
# whose xi_c is finite, and its caption says it.


def _xi_label(activation: str, scales: pd.DataFrame, depths: tuple[float, float]) -> str:
    """The legend's name of an activation: its xi_c and where six of them lie (in words when
    that is off the depths drawn, so a missing dotted line is never a mystery)."""
    row = scales[scales["activation"] == activation]
    if row.empty:
        return f"{activation} (no mean-field scale)"
    xi = float(row["xi_c"].iloc[0])
    if math.isinf(xi):
        return f"{activation}, xi_c = inf (critical: no depth limit)"
    limit = TRAINABLE_XI * xi
    where = (
        "dotted" if depths[0] <= limit <= depths[1]
        else f"beyond depth {depths[1]:g}" if limit > depths[1] else f"below depth {depths[0]:g}"
    )  # fmt: skip
    return f"{activation}, xi_c = {xi:.3g}: {TRAINABLE_XI:g} xi_c = {limit:.0f} ({where})"


def _claim_gap(ax: plt.Axes, runs: pd.DataFrame, pair: list[str]) -> None:
    """The claim at the deepest depth: ``pair[0]``'s mean final test error minus
    ``pair[1]``'s (the claim: at most 0), a double arrow between the two and its value."""
    deepest = runs[runs["depth"] == runs["depth"].max()]
    means = deepest.groupby("activation")["final_test_error"].mean()
    if not set(pair) <= set(means.index):
        return
    depth, (ours, theirs) = float(deepest["depth"].iloc[0]), (means[pair[0]], means[pair[1]])
    ax.annotate("", (depth, ours), xytext=(depth, theirs),
                arrowprops={"arrowstyle": "<->", "color": "k", "lw": 1.2})  # fmt: skip
    verdict = "below" if ours <= theirs else "above"
    ax.annotate(f"claim: {pair[0]} below {pair[1]}\nhere {verdict}, by {abs(ours - theirs):.2f}",
                (depth, (ours + theirs) / 2), xytext=(-8, 0), textcoords="offset points",
                ha="right", va="center", fontsize=9)  # fmt: skip


def draw_depth_scales(tables: Tables, *, scale: str, pair: list[str]) -> Figure:
    """Theory beside measurement: each activation's mean final test error against depth (one
    line per width), labelled with its mean-field correlation depth scale xi_c and where
    ``6 xi_c`` lies (Schoenholz et al. 2017's trainable depth; a dotted vertical line where
    that falls within the depths drawn, in words otherwise); at the deepest depth, the claim
    that ``pair[0]`` (tilted ReLU) ends below ``pair[1]`` (ReLU) as a double arrow with the
    gap. ``tables``: ``runs`` (``trainability_runs.csv``) and ``depth_scales``
    (``depth_scales.csv``).
    """
    runs, scales = tables["runs"], tables["depth_scales"]
    widths = sorted(runs["width"].unique())
    styles = dict(zip(widths, WIDTH_STYLES * len(widths), strict=False))
    fig, ax = plt.subplots(figsize=(10.5, 4.6), layout="constrained")
    depths = (float(runs["depth"].min()), float(runs["depth"].max()))
    for activation in _in_order(runs["activation"]):
        colour = activation_colour(activation)
        one = runs[runs["activation"] == activation]
        for width in widths:
            mean = one[one["width"] == width].groupby("depth")["final_test_error"].mean()
            label = _xi_label(activation, scales, depths) if width == widths[0] else None
            ax.plot(mean.index, mean.to_numpy(), marker="o", color=colour, ls=styles[width],
                    label=label)  # fmt: skip
        xi = scales.loc[scales["activation"] == activation, "xi_c"]
        if len(xi) and depths[0] <= TRAINABLE_XI * float(xi.iloc[0]) <= depths[1]:
            ax.axvline(TRAINABLE_XI * float(xi.iloc[0]), color=colour, ls=":", lw=1.5)
    _claim_gap(ax, runs, pair)
    ax.set(xlabel="depth (hidden layers)", ylabel="final test error (seed mean)",
           title=f"{TRAINABLE_XI:g} xi_c, Schoenholz et al.'s trainable depth: dotted where"
           " within the depths, else in the legend")  # fmt: skip
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


def _fraction_bars(
    ax: plt.Axes, runs: pd.DataFrame, ablation: pd.DataFrame, depths: list[int], margin: float
) -> None:
    """The claim that ReLU's runs fail where the tilted ReLU's train: per activation of the
    ablation, the fraction of the depth grid's runs at ``depths[0]`` to ``depths[1]`` that
    train (solid, the claim's quantity) beside the fraction of the ablation's settings that
    train (hatched); the claim's bound (the first activation's grid fraction plus ``margin``)
    dashed over the last one's bar."""
    activations = _in_order(ablation["activation"])
    grid = runs[(runs["depth"] >= depths[0]) & (runs["depth"] <= depths[1])]
    for i, activation in enumerate(activations):
        colour = activation_colour(activation)
        mine = grid[grid["activation"] == activation]
        settings = ablation[ablation["activation"] == activation]
        for dx, part, hatch in ((-0.2, mine, ""), (0.2, settings, "//")):
            value = float(part["trains"].astype(bool).mean()) if len(part) else math.nan
            ax.bar(i + dx, 0 if math.isnan(value) else value, width=0.38, color=colour,
                   hatch=hatch, edgecolor="white")  # fmt: skip
            text = (
                "no runs"
                if math.isnan(value)
                else f"{value:.2f}\n({int(part['trains'].sum())}/{len(part)})"
            )
            ax.annotate(
                text,
                (i + dx, 0 if math.isnan(value) else value),
                xytext=(0, 2),
                textcoords="offset points",
                ha="center",
                va="bottom",
                fontsize=8,
            )
    first, top = grid[grid["activation"] == activations[0]], 1.0
    if len(first) and len(activations) > 1:
        bound = float(first["trains"].astype(bool).mean()) + margin
        last, top = len(activations) - 1, max(top, bound)
        ax.plot(
            [last - 0.42, last + 0.02],
            [bound, bound],
            color="k",
            ls="--",
            lw=2,
            label=f"claim: {activations[-1]} at least\n{activations[0]} + {margin:g}",
        )
    legend_proxy(
        ax,
        "s",
        color="0.5",
        ms=9,
        label=f"depth grid, depths {depths[0]}-{depths[1]}:\nall seeds (the claim)",
    )
    proxy = ax.bar([0], [0], width=0, color="0.5", hatch="//", edgecolor="white",
                   label="the ablation's settings")  # fmt: skip
    proxy[0]._galu_proxy = True
    ax.set_xticks(range(len(activations)), activations)
    ax.set(ylim=(0, top * 1.2), ylabel="fraction of runs that train", title="runs that train")
    legend_outside(ax, loc="upper left", bbox_to_anchor=(0.0, -0.12))


def draw_ablation(
    tables: Tables, *, scale: str, loss_fraction: float, claim_depths: list[int], margin: float
) -> Figure:
    """The ablation (ours): at one depth, each network's best loss over its reference (top;
    the threshold ``loss_fraction`` dashed; ratios above :data:`RATIO_TOP`, and diverged runs,
    at the top as triangles) and final test error (bottom) against its gain factor, one column per
    optimizer, one colour per activation, one line style per learning rate (named in each
    column's legend); right, the claim that ReLU's runs fail where the tilted ReLU's train
    (:func:`_fraction_bars`: ``claim_depths``, ``margin``). ``tables``: ``ablation`` (the
    ``ablation.csv`` layout) and ``runs`` (``trainability_runs.csv``).
    """
    table = tables["ablation"]
    optimizers = _in_order(table["optimizer"])
    mosaic = [[f"ratio {o}" for o in optimizers] + ["fraction"],
              [f"error {o}" for o in optimizers] + ["fraction"]]  # fmt: skip
    fig = plt.figure(figsize=(4.4 * len(optimizers) + 4.6, 6.4), layout="constrained")
    axes = fig.subplot_mosaic(mosaic, sharey=False)
    for col, optimizer in enumerate(optimizers):
        ratio_ax, error_ax = axes[f"ratio {optimizer}"], axes[f"error {optimizer}"]
        if col:
            ratio_ax.sharey(axes[f"ratio {optimizers[0]}"])
            error_ax.sharey(axes[f"error {optimizers[0]}"])
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
                _ablation_line(ratio_ax, x, ratio, RATIO_TOP, **kw)
                _ablation_line(error_ax, x, one["final_test_error"], None, **kw)
        ratio_ax.axhline(loss_fraction, color="k", ls="--", lw=1)
        for lr, style in styles.items():
            legend_proxy(error_ax, color="k", ls=style, label=f"lr {lr:g}")
        ratio_ax.set(title=OPTIMIZER_TITLES.get(optimizer, optimizer), ylim=(0, RATIO_TOP * 1.05))
        error_ax.set(xlabel="gain / critical gain")
        legend_outside(error_ax, loc="upper left", bbox_to_anchor=(0.0, -0.2), ncol=2)
    first = optimizers[0]
    axes[f"ratio {first}"].set_ylabel(
        f"best loss / min(initial, ln 10)\n(trains below {loss_fraction}; triangle: blew up)"
    )
    axes[f"error {first}"].set_ylabel("final test error")
    _fraction_bars(axes["fraction"], tables["runs"], table, claim_depths, margin)
    depth, width = int(table["depth"].iloc[0]), int(table["width"].iloc[0])
    scaled_title(fig, f"Ablation at depth {depth}, width {width}, on CIFAR-10", scale)
    return fig


NETWORK = ["activation", "width", "depth", "seed"]


def layer_drift(spectra: pd.DataFrame) -> pd.DataFrame:
    """Per network (``NETWORK``) and square hidden layer (layer 1 maps the 3072 inputs, the
    last one is the 10-way readout): ``drift``, the mean over its eigenvalues of
    ``|trained / init - 1|`` (the quantity of the layer-spectra claims; NaN where the run
    diverged and left no finite trained spectrum), ``position`` (layer / depth) and ``deep``
    (the deeper half, ``layer > depth / 2``, which the claims read)."""
    square = spectra[(spectra["layer"] > 1) & (spectra["layer"] <= spectra["depth"])]
    keys = [*NETWORK, "layer", "index"]
    both = square.set_index([*keys, "stage"])["eigenvalue"].unstack("stage")
    ratio = (both["trained"] / both["init"] - 1).abs().rename("drift").reset_index()
    drift = ratio.groupby([*NETWORK, "layer"])["drift"].agg(lambda d: d.mean(skipna=False))
    drift = drift.reset_index()
    drift["position"] = drift["layer"] / drift["depth"]
    drift["deep"] = drift["layer"] > drift["depth"] / 2
    return drift


def _diverged_depths(drift: pd.DataFrame) -> list[int]:
    """The depths at which every network of ``drift`` (one activation) left no finite
    trained spectrum."""
    finite = drift.groupby("depth")["drift"].apply(lambda d: bool(np.isfinite(d).any()))
    return [int(d) for d, ok in finite.items() if not ok]


def draw_layer_spectra(tables: Tables, *, scale: str, drift_bound: float) -> Figure:
    """The layer-spectra claims (paper Fig. 6: deep layers' spectra of ``W W^T`` stay flat;
    batch norm flatter still): how far training moved each eigenvalue from its flat
    orthogonal start, ``|trained / init - 1|`` (:func:`layer_drift`). Left: the mean over
    the deeper half of the layers against depth, one line per activation (seed mean), with
    the claim's bound ``drift_bound`` dashed; then one panel per activation: each layer's
    mean drift against its place in the network (layer / depth), one line per depth. A depth
    whose runs diverged (no finite trained spectrum) is named in words and crossed at the top.
    ``tables["spectra"]``: the ``spectra.csv`` layout.
    """
    drift = layer_drift(tables["spectra"])
    activations = _in_order(drift["activation"])
    depths = sorted(drift["depth"].unique())
    fig, axes = plt.subplots(
        1, 1 + len(activations), figsize=(4.6 * (1 + len(activations)), 4.4), squeeze=False,
        layout="constrained",
    )  # fmt: skip
    summary, panels = axes[0, 0], axes[0, 1:]
    cmap = plt.get_cmap("viridis")
    norm = colors.Normalize(min(depths), max(max(depths), min(depths) + 1))
    notes, drawn = [], []
    for activation, ax in zip(activations, panels, strict=True):
        mine = drift[drift["activation"] == activation]
        colour = activation_colour(activation)
        deep = mine[mine["deep"]].groupby([*NETWORK])["drift"].mean().reset_index()
        per_depth = deep.groupby("depth")["drift"].mean()  # NaN: every seed diverged
        shown = per_depth[np.isfinite(per_depth)]
        drawn += list(shown)
        summary.plot(shown.index, shown.to_numpy(), marker="o", color=colour, label=activation)
        gone = _diverged_depths(mine)
        if gone:
            notes.append((activation, gone, colour))
        for depth, one in mine.groupby("depth"):
            net = one.groupby("layer")[["position", "drift"]].mean()
            ax.plot(net["position"], net["drift"], color=cmap(norm(depth)), lw=1.2)
        ax.axvspan(0.5, 1.0, color="0.9", zorder=0)
        ax.axhline(drift_bound, color="k", ls="--", lw=1)
        title = activation
        if gone:
            title += f"\ndiverged, no trained spectrum: depth {', '.join(map(str, gone))}"
        ax.set(title=title, xlabel="layer / depth (shaded: the deeper half)", xlim=(0, 1),
               yscale="log")  # fmt: skip
        if not np.isfinite(mine["drift"]).any():
            panel_note(ax, f"every {activation} run diverged:\nno trained spectrum")
    panels[0].set_ylabel("mean |trained / init - 1| per layer")
    fig.colorbar(cm.ScalarMappable(norm=norm, cmap=cmap), ax=list(panels), label="depth")
    summary.axhline(drift_bound, color="k", ls="--", lw=1,
                    label=f"claim: at most {drift_bound:g}")  # fmt: skip
    finite = [v for v in drawn if v > 0]
    low, high = (min(finite), max(finite)) if finite else (drift_bound, drift_bound)
    top = max(high, drift_bound) * 4
    for activation, gone, colour in notes:
        summary.plot(
            gone,
            [top] * len(gone),
            "x",
            ms=9,
            mew=2,
            color=colour,
            clip_on=False,
            label=f"{activation} diverged:\nno spectrum at depth {', '.join(map(str, gone))}",
        )
    summary.set(yscale="log", ylim=(min(low, drift_bound) / 3, top * 1.5), xticks=depths,
                xlabel="depth (hidden layers)",
                ylabel="mean |trained / init - 1| of W W^T eigenvalues",
                title="the deeper half of the layers (seed mean)")  # fmt: skip
    summary.legend(loc="upper left", fontsize=8)
    for ax in axes.flat:
        log_ticks(ax, "y")
    scaled_title(fig, "How far training moves the layer spectra from their flat start", scale)
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


def draw_jacobian(tables: Tables, *, scale: str, band: float) -> Figure:
    """CDF of the input-output Jacobian's squared singular values at initialization, one
    panel per activation (one row each, its legend beside it), one curve per depth
    (:func:`smallest_width` networks). Each panel's title gives the claim's quantity: the
    fraction of values further than ``band`` from 1 (the tilted ReLU's claim: 0).

    The values span many decades (ReLU) or sit exactly at 1 (tilted ReLU, |x|: each layer's
    Jacobian is orthogonal, paper Sec. 4): a CDF on a shared log axis shows both.
    ``tables["jacobian"]``: one row per squared singular value.
    """
    jac = smallest_width(tables["jacobian"])
    activations = _in_order(jac["activation"])
    depths = sorted(jac["depth"].unique())
    fig, axes = plt.subplots(
        len(activations),
        1,
        figsize=(9.0, 2.9 * len(activations) + 0.6),
        squeeze=False,
        sharex=True,
        sharey=True,
        layout="constrained",
    )
    low = jac.loc[jac["squared_singular_value"] >= JACOBIAN_FLOOR, "squared_singular_value"].min()
    for ax, activation in zip(axes[:, 0], activations, strict=True):
        values = jac.loc[jac["activation"] == activation, "squared_singular_value"].to_numpy()
        off = float(np.mean(np.abs(values - 1.0) > band))
        for i, depth in enumerate(depths):
            values = jac.query("activation == @activation and depth == @depth")[
                "squared_singular_value"
            ].to_numpy()
            if values.size:
                _jacobian_cdf(ax, values, f"C{i}", depth, low)
        ax.set(title=f"{activation}: {100 * off:.3g} % of the values further than {band:g} from 1",
               xscale="log", ylabel="fraction of values")  # fmt: skip
        ax.axvline(1.0, color="k", ls=":", lw=1)
        if off == 0:
            panel_note(ax, f"every depth's values lie within {band:g} of 1:\nits steps overlap"
                       " there", x=0.3)  # fmt: skip
        legend_outside(ax)
    for ax in axes[:, 0]:
        log_ticks(ax, "x")
    axes[-1, 0].set_xlabel("squared singular value of d h_L / d h_1")
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
    "layer_spectra": lambda tables: seeds_in(tables["spectra"]),
    "jacobian": lambda tables: seeds_in(smallest_width(tables["jacobian"])),
    "correlations": lambda tables: seeds_in(tables["correlations"]),
    "ablation": lambda tables: seeds_in(pd.concat([tables["ablation"], tables["runs"]])),
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
