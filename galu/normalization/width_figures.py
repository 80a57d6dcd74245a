"""The trainability runs at two widths side by side (Richemond & Guo, arXiv 1905.01369,
Sec. 4: networks "either 1024 or 128 units wide", 30 against 60 layers): does a conclusion
drawn at width 128 hold at the paper's main width? Drawn only where ``normalization.wide``
trains a second width (:mod:`galu.normalization.stage`).
"""

from __future__ import annotations

from collections.abc import Mapping

import pandas as pd
from matplotlib.figure import Figure

from galu.normalization.training_figures import WIDTH_STYLES
from galu.plotting import (
    activation_colour,
    in_order,
    legend_outside,
    plt,  # imported from there: it selects the Agg backend first
    scaled_title,
)

Tables = Mapping[str, pd.DataFrame]
WIDTH_MARKERS = ["o", "s", "^", "D"]


def _styles(widths: list[int]) -> dict[int, tuple[str, str]]:
    """Each width's (line style, marker), the narrowest first."""
    return {w: (WIDTH_STYLES[i % 4], WIDTH_MARKERS[i % 4]) for i, w in enumerate(widths)}


def _per_depth(ax: plt.Axes, runs: pd.DataFrame, column: str, widths: list[int]) -> None:
    """``column`` against depth: each run a point (x: diverged), each (activation, width)
    the mean over seeds as a line, coloured by activation, styled by width."""
    styles = _styles(widths)
    for activation in in_order(runs["activation"]):
        colour = activation_colour(activation)
        for width in widths:
            one = runs[(runs["activation"] == activation) & (runs["width"] == width)]
            if one.empty:
                continue
            ls, marker = styles[width]
            mean = one.groupby("depth")[column].mean()
            ax.plot(mean.index, mean.to_numpy(), ls=ls, marker=marker, color=colour,
                    label=f"{activation}, w = {width}")  # fmt: skip
            kept = one[~one["diverged"]]
            ax.scatter(kept["depth"], kept[column], color=colour, marker=marker, s=10, alpha=0.5)
            gone = one[one["diverged"]]
            ax.scatter(gone["depth"], gone[column], color=colour, marker="x", s=40)
    ax.set_xticks(sorted(runs["depth"].unique()))


def _correlations(ax: plt.Axes, tables: Tables, widths: list[int], shown: list[str]) -> None:
    """Mean |cos| of two images' centred representations per layer at initialization, for
    the activations of the width comparison, at each width; dotted: random vectors."""
    styles = _styles(widths)
    both = pd.concat([tables["correlations"], tables["wide_correlations"]], ignore_index=True)
    both = both[both["activation"].isin(shown) & both["width"].isin(widths)]
    for (activation, width), rows in both.groupby(["activation", "width"], sort=False):
        ls, _ = styles[width]
        mean = rows.groupby("layer")["mean_abs_cos"].mean()
        ax.plot(mean.index, mean.to_numpy(), ls=ls, color=activation_colour(activation),
                label=f"{activation}, w = {width}")  # fmt: skip
    for width, rows in both.groupby("width"):
        ax.axhline(rows["random_baseline"].iloc[0], color="k", ls=styles[width][0], lw=0.8,
                   label=f"random vectors, w = {width}")  # fmt: skip
    ax.set(xlabel="hidden layer l", ylabel="mean |cos| of two images' centred h_l", ylim=(0, 1),
           title="(c) correlation at initialization")  # fmt: skip
    legend_outside(ax)


def draw_widths(tables: Tables, *, scale: str, loss_fraction: float) -> Figure:
    """The same activations and depths at two widths, each run judged at one epoch
    (``tables["widths"]``, :func:`galu.normalization.widths.width_comparison`): (a) the
    test error, (b) the best training loss over the reference loss against the trainability
    threshold ``loss_fraction``, and (c) the mechanism the findings name, the images'
    correlation at initialization per layer (``correlations`` at the trainability width,
    ``wide_correlations`` at the second one).
    """
    runs = tables["widths"]
    widths = sorted(int(w) for w in runs["width"].unique())
    epoch = int(runs["compared_at_epoch"].max())
    fig, (error, ratio, corr) = plt.subplots(1, 3, figsize=(16, 4.4), layout="constrained")
    _per_depth(error, runs, "final_test_error", widths)
    error.set(xlabel="depth (hidden layers)", ylabel=f"test error at epoch {epoch}",
              title=f"(a) test error after {epoch} epochs")  # fmt: skip
    _per_depth(ratio, runs, "loss_ratio", widths)
    ratio.axhline(loss_fraction, color="k", ls="--", lw=1, label=f"trains below {loss_fraction}")
    ratio.set(xlabel="depth (hidden layers)", ylabel="best loss / min(initial, ln 10)",
              title=f"(b) training progress by epoch {epoch} (x: diverged)")  # fmt: skip
    legend_outside(ratio)
    _correlations(corr, tables, widths, in_order(runs["activation"]))
    scaled_title(fig, "Deep plain MLPs on CIFAR-10 at two widths", scale)
    return fig
