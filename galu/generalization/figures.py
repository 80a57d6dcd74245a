"""Figures of the GaLU generalization study (Fiat et al., arXiv 1906.05032, sec. 5).

One function per figure, ``draw_<figure>(tables, *, scale, ...) -> Figure``: ``tables``
maps the figure's table name, its dataset (declared in :mod:`galu.generalization.stage`), to
that dataset's rows (the ``accuracy.csv`` layout),
``scale`` is named in the title; nothing here trains or reads files. Points are means over
seeds, error bars one standard deviation across seeds (none with a single seed). Every model
keeps its colour in every figure. :data:`DRAW` maps each figure to its function (both image
datasets to :func:`draw_images`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

import numpy as np
import pandas as pd
from matplotlib.axes import Axes
from matplotlib.figure import Figure

# plt imported from there: it selects the Agg backend first
from galu.plotting import plt, scaled_title, use_style
from galu.reference import AUTHORS_IMAGE_DEPTH, AUTHORS_LABEL, authors_test_selected

Tables = Mapping[str, pd.DataFrame]

COLOURS = {
    "relu": "C0",
    "galu0": "C7",
    "galu": "C1",
    "galu_sigmoid_prev": "C2",
    "linear": "C3",
    "galu_exact": "C4",
}
LABELS = {
    "relu": "ReLU",
    "galu0": "GaLU0: sigmoid gates on x (paper's model)",
    "galu": "GaLU (step gates)",
    "galu_sigmoid_prev": "sigmoid gates on h, trained through (ablation, ours)",
    "linear": "linear baseline",
    "galu_exact": "GaLU, exact least squares",
}
# The authors' names of the models they trained on the images.
AUTHORS_MODELS = {"relu": "ReLU", "galu0": "GaLU0", "linear": "linear network"}
# On the image figures the step-gated GaLU is an ablation: the theory's model, not the one
# the paper's MNIST experiment trains.
IMAGE_LABELS = {**LABELS, "galu": "GaLU, step gates on h (ablation: theory's model)"}
# Ablations are drawn thinner and dashed so the paper's models stand out.
ABLATIONS = ("galu", "galu_sigmoid_prev")
TITLES = {
    "mnist": "MNIST",
    "fashion_mnist": "Fashion-MNIST",
    "clusters": "Gaussian clusters: label noise",
    "linear": "Linearly separable data",
    "parity": "Parity of s random bits",
}


def _titled(fig: Figure, dataset: str, scale: str) -> Figure:
    """The figure with the stage's title naming the dataset and the scale."""
    scaled_title(fig, f"GaLU vs ReLU generalization: {TITLES[dataset]}", scale)
    return fig


def _summary(rows: pd.DataFrame, x: str, y: str) -> pd.DataFrame:
    """Mean and standard deviation of ``y`` over seeds at each ``x`` (std 0 for one seed)."""
    stats = rows.groupby(x)[y].agg(["mean", "std"]).fillna({"std": 0.0})
    return stats.sort_index()


def _curve(ax: Axes, rows: pd.DataFrame, x: str, y: str, model: str, **style: object) -> None:
    stats = _summary(rows, x, y)
    ax.errorbar(
        stats.index,
        stats["mean"],
        yerr=stats["std"],
        color=COLOURS.get(model),
        label=style.pop("label", LABELS.get(model, model)),
        marker=style.pop("marker", "o"),
        capsize=3,
        **style,
    )


def _models(rows: pd.DataFrame, order: Sequence[str] = tuple(COLOURS)) -> list[str]:
    present = set(rows["model"])
    return [m for m in order if m in present]


def _authors_images(ax: Axes, best: pd.DataFrame) -> None:
    """The authors' test-selected test errors: hollow markers on a thin dash-dot line in
    each model's colour (their linear network too: two linear hidden layers, one point per
    width), labelled as theirs."""
    for model in _models(best):
        one = best[best["model"] == model]
        ax.plot(
            one["width"],
            one["test_error"],
            ls="-.",
            lw=0.8,
            marker="D",
            mfc="none",
            ms=7,
            color=COLOURS.get(model),
            label=f"{AUTHORS_LABEL}: {AUTHORS_MODELS.get(model, model)}, test-selected",
        )


def selections_differ(rows: pd.DataFrame) -> bool:
    """Whether picking the hyper-parameters on the test set changes a model's curve: its
    seed-mean ``test_error_test_selected`` differs from ``test_error`` at some width (where
    both selections pick the same setting the dotted curve would hide under the solid one)."""
    stats = rows.groupby("width")[["test_error", "test_error_test_selected"]].mean()
    return not np.allclose(stats["test_error"], stats["test_error_test_selected"], equal_nan=True)


def draw_images(tables: Tables, *, scale: str, dataset: str, depth: int) -> Figure:
    """Test error against width on an image dataset (table ``dataset``, networks of ``depth``
    hidden layers), validation-selected (solid; dashed for the ablations) and test-selected
    (dotted, for a model whose test-selected curve differs from its validation-selected one,
    :func:`selections_differ`; the legend names the dotted lines only when one is drawn).

    The legend says which curve is the paper's model (GaLU0, ReLU) and which are our
    ablations (step gates, sigmoid gates on the previous layer). The linear baseline
    (``width`` 0) is a horizontal line with a one-std band. With the reference table
    ``authors`` and the authors' depth (2 hidden layers), their published test errors
    (:func:`galu.reference.authors_test_selected`: picked on the test set, like our dotted
    curves) are drawn as hollow diamonds.
    """
    rows = tables[dataset]
    use_style()
    fig, ax = plt.subplots(figsize=(7.2, 4.8))
    dotted = False
    for model in _models(rows):
        one = rows[rows["model"] == model]
        if model == "linear":
            mean, std = one["test_error"].mean(), one["test_error"].std()
            std = 0.0 if np.isnan(std) else std
            ax.axhline(mean, color=COLOURS[model], lw=1.5, label=LABELS[model])
            ax.axhspan(mean - std, mean + std, color=COLOURS[model], alpha=0.15, lw=0)
            continue
        style = dict(ls="--", lw=1.2, marker="s", ms=4) if model in ABLATIONS else {}
        _curve(ax, one, "width", "test_error", model, label=IMAGE_LABELS[model], **style)
        if selections_differ(one):
            _curve(ax, one, "width", "test_error_test_selected", model, ls=":", marker=".",
                   label=None)  # fmt: skip
            dotted = True
    if dotted:
        ax.plot([], [], "k:", label="dotted: hyper-parameters picked on the test set")
    if "authors" in tables and depth == AUTHORS_IMAGE_DEPTH:
        _authors_images(ax, authors_test_selected(tables["authors"], dataset))
    ax.set(
        xlabel="hidden-layer width k",
        ylabel="test error (validation-selected)",
        title=f"{depth} hidden layers, PCA-64 inputs",
    )
    ax.set_xticks(sorted(rows.loc[rows["width"] > 0, "width"].unique()))
    ax.legend(fontsize="small")
    return _titled(fig, dataset, scale)


def draw_clusters(tables: Tables, *, scale: str) -> Figure:
    """Test loss (left) and test error (right) against ``sigma_y``, one row per task.

    Dashed black: the noise floor, ``sigma_y^2`` (squared loss of the true centre labels)
    for regression and ``sigma_y / 2`` (the flip rate) for the classification error.
    """
    rows = tables["clusters"]
    use_style()
    tasks = [t for t in ("regression", "classification") if t in set(rows["task"])]
    fig, axes = plt.subplots(
        len(tasks), 2, figsize=(10, 3.8 * len(tasks)), squeeze=False, layout="constrained"
    )
    sigmas = np.sort(rows["sigma_y"].unique())
    for (loss_ax, error_ax), task in zip(axes, tasks, strict=True):
        part = rows[rows["task"] == task]
        for model in _models(part):
            one = part[part["model"] == model]
            _curve(loss_ax, one, "sigma_y", "test_loss", model)
            _curve(error_ax, one, "sigma_y", "test_error", model)
        loss_name = "squared loss" if task == "regression" else "hinge loss"
        if task == "regression":
            loss_ax.plot(sigmas, sigmas**2, "k--", lw=1, label="noise floor sigma_y^2")
            loss_ax.set_yscale("symlog", linthresh=1e-2)
        else:
            error_ax.plot(sigmas, sigmas / 2, "k--", lw=1, label="noise floor sigma_y/2")
        error_name = "sign error" if task == "regression" else "test error"
        loss_ax.set(xlabel="label noise sigma_y", ylabel=f"test {loss_name}", title=task)
        error_ax.set(xlabel="label noise sigma_y", ylabel=error_name, title=task)
        loss_ax.legend(fontsize="small")
        error_ax.legend(fontsize="small")
    return _titled(fig, "clusters", scale)


def draw_linear(tables: Tables, *, scale: str) -> Figure:
    """Test error against the training-set size on linearly separable data (log x, a tick
    labelled at every size trained)."""
    rows = tables["linear"]
    use_style()
    fig, ax = plt.subplots(figsize=(6.4, 4.4))
    for model in _models(rows):
        _curve(ax, rows[rows["model"] == model], "n_train", "test_error", model)
    ax.set_xscale("log")
    sizes = sorted(int(n) for n in rows["n_train"].dropna().unique())
    ax.set_xticks(sizes, [str(n) for n in sizes])
    ax.minorticks_off()
    ax.set(xlabel="training examples", ylabel="test error", title="y = sign(w* . x)")
    ax.legend()
    return _titled(fig, "linear", scale)


def draw_parity(tables: Tables, *, scale: str) -> Figure:
    """Test error (filled) and training error (hollow) against the parity size ``s``."""
    rows = tables["parity"]
    use_style()
    fig, ax = plt.subplots(figsize=(6.4, 4.4))
    for model in _models(rows):
        one = rows[rows["model"] == model]
        _curve(ax, one, "subset_size", "test_error", model)
        train = _summary(one, "subset_size", "train_error")
        hollow = dict(ls="none", marker="o", mfc="none", ms=9, color=COLOURS.get(model))
        ax.plot(train.index, train["mean"], **hollow)
    ax.axhline(0.5, color="k", ls="--", lw=1, label="chance (0.5)")
    ax.plot([], [], "ko", mfc="none", ls="none", label="hollow: training error")
    ax.set_xticks(sorted(rows["subset_size"].dropna().unique()))
    ax.set(xlabel="bits in the parity s", ylabel="error", title="y = product of s of the bits")
    ax.set_ylim(-0.03, 0.6)
    ax.legend()
    return _titled(fig, "parity", scale)


DRAW: dict[str, Callable[..., Figure]] = {
    "mnist": draw_images,
    "fashion_mnist": draw_images,
    "clusters": draw_clusters,
    "linear": draw_linear,
    "parity": draw_parity,
}
