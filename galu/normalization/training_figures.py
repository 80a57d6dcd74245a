"""Figures of the deep plain MLPs' training on CIFAR-10 (Richemond & Guo, arXiv 1905.01369,
Sec. 4, Fig. 4): the training curves, the deepest depth that trains, the errors beside the
mean-field depth scales, and our ablation. The drawing conventions are
:mod:`galu.normalization.figures`'s, which lists every figure in ``DRAW``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from galu.normalization.sentences import TRAINABLE_XI
from galu.plotting import (
    activation_colour,
    in_order,
    legend_outside,
    legend_proxy,
    log_ticks,
    mark_zero_bars,
    panel_note,
    plt,  # imported from there: it selects the Agg backend first
    scaled_title,
)

Tables = Mapping[str, pd.DataFrame]
BAR_HATCHES = ["", "//", "..", "xx"]
WIDTH_STYLES = ["-", "--", ":", "-."]


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
    activations = [a for a in in_order(curves["activation"]) if a not in pair]
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
    activations = in_order(depth["activation"])
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
    wide = max(12.5, 7.0 + 0.75 * len(in_order(depth["activation"])))
    fig, (bars, ratios) = plt.subplots(1, 2, figsize=(wide, 4.4), layout="constrained")
    _depth_bars(bars, depth, runs, paper_depths)
    _loss_ratios(ratios, runs, in_order(depth["activation"]), loss_fraction)
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
    for activation in in_order(runs["activation"]):
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
    activations = in_order(ablation["activation"])
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
    optimizers = in_order(table["optimizer"])
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
        for activation in in_order(runs["activation"]):
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
