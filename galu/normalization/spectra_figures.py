"""Figures of the deep plain MLPs' spectra (Richemond & Guo, arXiv 1905.01369, Fig. 6): how
far training moves each layer's W W^T eigenvalues from their flat start, and the input-output
Jacobian's singular values at initialization. The drawing conventions are
:mod:`galu.normalization.figures`'s, which lists every figure in ``DRAW``.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import pandas as pd
from matplotlib import cm, colors
from matplotlib.figure import Figure

from galu.normalization.jacobian_summary import JACOBIAN_FLOOR, jacobian_stats
from galu.plotting import (
    activation_colour,
    in_order,
    legend_outside,
    log_ticks,
    panel_note,
    plt,  # imported from there: it selects the Agg backend first
    scaled_title,
)

Tables = Mapping[str, pd.DataFrame]


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
    activations = in_order(drift["activation"])
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
    activations = in_order(jac["activation"])
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
