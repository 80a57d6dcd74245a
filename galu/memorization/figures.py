"""Figures of the GaLU capacity study (Fiat, Malach & Shalev-Shwartz, arXiv 1906.05032,
sec. 3) drawn from the stage's tables; nothing here trains or reads files.

One function per figure, ``draw_<figure>(tables, *, scale) -> Figure``: ``tables`` maps the
figure's table names (those its declaration in :mod:`galu.memorization.stage` lists) to
their rows, ``scale`` is named in the title so a quick-scale figure never passes for the
paper's. Every model keeps its marker, colour and legend label in every figure.

- :func:`draw_underparam`: normalized training loss against ``kd/m`` with the paper's GaLU
  law ``1 - kd/m`` and the ReLU lower bound ``max(0, 1 - 2kd/m)``;
- :func:`draw_min_width`: the minimal width against the label dimension, with the counting
  line (as many weights as label values), ``m/d`` and the authors' published minimal widths;
- :func:`draw_zero_error`: ``min_width * d / m`` against ``m`` per ``d``, the paper's claim
  being that it stays near 1.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

import numpy as np
import pandas as pd
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from galu.plotting import legend_outside, log_ticks, plt, scaled_title, use_style
from galu.reference import AUTHORS_LABEL, authors_min_width

_LABELS = {"relu": "ReLU (trained)", "galu": "GaLU (trained)", "galu_exact": "GaLU (exact)"}
_MARKERS = {"relu": "o", "galu": "s", "galu_exact": "^"}
_COLOURS = {"relu": "C0", "galu": "C1", "galu_exact": "C2"}
# The authors' models by their own description (their "GaLU" has step gates on the input).
_AUTHORS_MODELS = {"relu": "ReLU", "galu": "GaLU"}
_SIZE = (6.4, 4.6)
# The exact GaLU optimum is one point (out_dim = 1) that the trained GaLU's marker would
# cover where the two widths agree: a larger hollow marker drawn above the others rings it.
_ON_TOP = {"galu_exact": {"ms": 12, "mfc": "none", "mew": 1.8, "zorder": 4}}


def _model_style(model: str) -> dict:
    """Marker, colour and legend label of a model, the same in every figure."""
    return {
        "marker": _MARKERS.get(model, "o"),
        "color": _COLOURS.get(model, "C3"),
        "label": _LABELS.get(model, model),
    }


def draw_underparam(tables: Mapping[str, pd.DataFrame], *, scale: str) -> Figure:
    """Figure 1 of the paper: ``underparam.csv``'s loss per model, mean and standard
    deviation over seeds at each (m, d, k), against ``kd/m``."""
    rows = tables["underparam"]
    use_style()
    fig, ax = plt.subplots(figsize=_SIZE)
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
            **_model_style(model),
        )
    ax.set(xlabel="kd / m", ylabel="training MSE / label variance", ylim=(-0.03, 1.05))
    legend_outside(ax)
    scaled_title(fig, "Under-parameterized memorization: loss against kd/m", scale)
    return fig


def _counting_lines(ax: Axes, m: int, d: int, dims: pd.Series, label: bool = True) -> None:
    """The counting line ``k (d + out_dim) = m out_dim`` and ``m / d`` at (m, d)."""
    x = np.geomspace(dims.min(), dims.max(), 100)
    ax.plot(x, m * x / (d + x), "k--", lw=1, label="k (d + out_dim) = m out_dim" if label else None)
    ax.axhline(m / d, color="k", ls=":", lw=1, label="m / d" if label else None)


def _log_axes(ax: Axes, title: str) -> None:
    ax.set(
        xscale="log",
        yscale="log",
        xlabel="label dimension out_dim",
        ylabel="minimal width k",
        title=title,
    )
    log_ticks(ax, "x")
    log_ticks(ax, "y")


def _authors_points(ax: Axes, found: pd.DataFrame) -> None:
    """The authors' minimal widths: hollow markers on a thin dash-dot line, in each model's
    colour, labelled as theirs."""
    for model, part in found.groupby("model", sort=False):
        style = _model_style(model)
        ax.plot(
            part["out_dim"],
            part["min_width"],
            ls="-.",
            lw=0.8,
            marker=style["marker"],
            mfc="none",
            ms=8,
            color=style["color"],
            label=f"{AUTHORS_LABEL}: {_AUTHORS_MODELS.get(model, model)}",
        )


def draw_min_width(tables: Mapping[str, pd.DataFrame], *, scale: str) -> Figure:
    """Figure 2 of the paper: the mse searches' minimal width (mean over seeds) against the
    label dimension; a cross at the search's upper end marks a search that found none.

    With the reference table ``authors`` (their searches' probes), their minimal widths
    (:func:`galu.reference.authors_min_width` at our threshold) are drawn on our axes where
    their m and d are ours, else in a panel of their own beside ours (with the counting lines
    of their m and d), so a number is never drawn against another setting's lines."""
    rows = tables["min_width_mse"]
    use_style()
    m, d = int(rows["m"].iloc[0]), int(rows["d"].iloc[0])
    threshold = float(rows["mse_threshold"].iloc[0]) if "mse_threshold" in rows else 0.3
    theirs = authors_min_width(tables["authors"], threshold) if "authors" in tables else None
    beside = theirs is not None and not ((theirs["m"] == m) & (theirs["d"] == d)).all()
    if beside:
        fig, (ax, other) = plt.subplots(1, 2, figsize=(11.5, 4.6), layout="constrained")
    else:
        fig, ax = plt.subplots(figsize=_SIZE)
    _counting_lines(ax, m, d, rows["out_dim"])
    for model, part in rows.groupby("model", sort=False):
        found = part[part["found"]].groupby("out_dim")["min_width"].mean()
        ax.plot(found.index, found.values, **_model_style(model), **_ON_TOP.get(model, {}))
        missing = part[~part["found"]]
        ax.plot(missing["out_dim"], missing["search_hi"], ls="none", marker="x", color="C3")
    _log_axes(ax, f"m = {m}, d = {d}")
    if theirs is not None and not beside:
        _authors_points(ax, theirs)
    elif beside:
        for (am, ad), part in theirs.groupby(["m", "d"]):
            _counting_lines(other, int(am), int(ad), part["out_dim"], label=False)
            _authors_points(other, part)
        sets = ", ".join(f"m = {am}, d = {ad}" for am, ad in theirs.groupby(["m", "d"]).groups)
        _log_axes(other, f"{AUTHORS_LABEL}: {sets}")
        legend_outside(other, fontsize="small")
    legend_outside(ax, fontsize="small" if theirs is not None else None)
    scaled_title(fig, "Minimal width to fit Gaussian label vectors", scale)
    return fig


def draw_zero_error(
    tables: Mapping[str, pd.DataFrame], *, scale: str, band: float | None = None
) -> Figure:
    """Figure 3 of the paper: the zero_error searches' ``min_width * d / m`` (mean over
    seeds) against m, one line per model and d. ``band``: the half-width of the band
    ``1 +- band`` that the claim judges every search by (:func:`galu.memorization.band.
    claim_band`, passed by the stage), shaded grey."""
    rows = tables["min_width_zero_error"]
    use_style()
    fig, ax = plt.subplots(figsize=_SIZE)
    if band is not None:
        ax.axhspan(1 - band, 1 + band, color="0.5", alpha=0.15, lw=0,
                   label=f"claim's band: k d / m within 1 ± {band:g}")  # fmt: skip
    ax.axhline(1.0, color="k", ls=":", lw=1, label="k = m / d")
    styles = dict(zip(sorted(rows["d"].unique()), ["-", "--", "-.", ":"] * 4, strict=False))
    for (model, d), part in rows.groupby(["model", "d"], sort=False):
        mean = part.groupby("m")["kd_over_m"].mean()
        ax.plot(
            mean.index,
            mean.values,
            ls=styles[d],
            **{**_model_style(model), "label": f"{_LABELS.get(model, model)}, d = {d}"},
        )
    ax.set_xscale("log", base=2)
    ax.set(xlabel="examples m", ylabel="min_width * d / m")
    ax.minorticks_off()
    ax.set_xticks(sorted(rows["m"].unique()), [str(m) for m in sorted(rows["m"].unique())])
    ax.set_ylim(0, max(2.0, 1.1 * rows["kd_over_m"].max()))
    legend_outside(ax, fontsize="small")
    scaled_title(fig, "Minimal width to memorize random signs", scale)
    return fig


DRAW: dict[str, Callable[..., Figure]] = {
    "underparam": draw_underparam,
    "min_width": draw_min_width,
    "zero_error": draw_zero_error,
}
