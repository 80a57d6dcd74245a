"""Figures of the generalization study draw the numbers they are given (no training)."""

from __future__ import annotations

import re

import numpy as np
import pandas as pd

from galu.generalization.figures import (
    DRAW,
    draw_clusters,
    draw_images,
    draw_linear,
    draw_parity,
)
from galu.generalization.stage import FIGURES
from galu.plotting import plt

from conftest import REPO, functions_named


def _lines(ax) -> dict[str, np.ndarray]:
    """Label -> y data of every labelled line and error-bar curve of an axis."""
    out = {ln.get_label(): np.asarray(ln.get_ydata(), dtype=float) for ln in ax.get_lines()}
    for bars in ax.containers:
        out[bars.get_label()] = np.asarray(bars.lines[0].get_ydata(), dtype=float)
    return out


def test_images_figure_shows_means_and_the_linear_baseline():
    rows = pd.DataFrame(
        {
            "model": ["relu", "relu", "relu", "relu", "linear", "linear"],
            "width": [16, 16, 32, 32, 0, 0],
            "seed": [0, 1, 0, 1, 0, 1],
            "test_error": [0.10, 0.20, 0.05, 0.07, 0.30, 0.40],
            "test_error_test_selected": [0.09, 0.19, 0.05, 0.07, 0.30, 0.40],
        }
    )
    fig = draw_images({"mnist": rows}, scale="quick", dataset="mnist", depth=2)
    ax = fig.axes[0]
    lines = _lines(ax)
    np.testing.assert_allclose(lines["ReLU"], [0.15, 0.06])
    np.testing.assert_allclose(lines["linear baseline"], [0.35, 0.35])
    assert [t.get_text() for t in ax.get_xticklabels()] == ["16", "32"]
    plt.close(fig)


def test_images_figure_tells_the_papers_model_from_the_ablations():
    models = ["galu0", "galu", "galu_sigmoid_prev"]
    rows = pd.DataFrame(
        {
            "model": np.repeat(models, 2),
            "width": [16] * 6,
            "seed": [0, 1] * 3,
            "test_error": [0.06, 0.08, 0.14, 0.12, 0.05, 0.05],
            "test_error_test_selected": [0.05, 0.07, 0.13, 0.11, 0.04, 0.04],
        }
    )
    fig = draw_images({"mnist": rows}, scale="quick", dataset="mnist", depth=2)
    ax = fig.axes[0]
    lines = _lines(ax)
    np.testing.assert_allclose(lines["GaLU0: sigmoid gates on x (paper's model)"], [0.07])
    np.testing.assert_allclose(lines["GaLU, step gates on h (ablation: theory's model)"], [0.13])
    np.testing.assert_allclose(
        lines["sigmoid gates on h, trained through (ablation, ours)"], [0.05]
    )
    # Dotted: the test-selected means, one per model.
    dotted = [c for c in ax.containers if c.lines[0].get_linestyle() == ":"]
    means = sorted(float(c.lines[0].get_ydata()[0]) for c in dotted)
    np.testing.assert_allclose(means, [0.04, 0.06, 0.12])
    # The ablations are dashed, the paper's model solid.
    styles = {c.get_label(): c.lines[0].get_linestyle() for c in ax.containers}
    assert styles["GaLU0: sigmoid gates on x (paper's model)"] == "-"
    assert styles["GaLU, step gates on h (ablation: theory's model)"] == "--"
    plt.close(fig)


def test_clusters_figure_draws_the_noise_floors():
    sigmas = [0.0, 0.5, 1.0]
    rows = pd.DataFrame(
        {
            "task": ["regression"] * 3 + ["classification"] * 3,
            "model": ["relu"] * 6,
            "seed": [0] * 6,
            "sigma_y": sigmas * 2,
            "test_loss": [0.1, 0.4, 1.2, 0.2, 0.6, 1.0],
            "test_error": [0.0, 0.2, 0.3, 0.0, 0.3, 0.5],
        }
    )
    fig = draw_clusters({"clusters": rows}, scale="quick")
    regression_loss, _, classification_loss, classification_error = fig.axes
    np.testing.assert_allclose(_lines(regression_loss)["noise floor sigma_y^2"], [0, 0.25, 1])
    np.testing.assert_allclose(
        _lines(classification_error)["noise floor sigma_y/2"], [0, 0.25, 0.5]
    )
    np.testing.assert_allclose(_lines(classification_loss)["ReLU"], [0.2, 0.6, 1.0])
    plt.close(fig)


def test_linear_and_parity_figures_plot_seed_means():
    rows = pd.DataFrame(
        {
            "model": ["galu"] * 4,
            "seed": [0, 1, 0, 1],
            "n_train": [10, 10, 100, 100],
            "subset_size": [2, 2, 8, 8],
            "train_error": [0.0, 0.0, 0.1, 0.3],
            "test_error": [0.4, 0.2, 0.5, 0.5],
        }
    )
    fig = draw_linear({"linear": rows}, scale="quick")
    np.testing.assert_allclose(_lines(fig.axes[0])["GaLU (step gates)"], [0.3, 0.5])
    plt.close(fig)
    fig = draw_parity({"parity": rows}, scale="quick")
    lines = _lines(fig.axes[0])
    np.testing.assert_allclose(lines["chance (0.5)"], [0.5, 0.5])
    hollow = [ln for ln in fig.axes[0].get_lines() if ln.get_markerfacecolor() == "none"]
    np.testing.assert_allclose(hollow[0].get_ydata(), [0.0, 0.2])
    plt.close(fig)


def test_the_titles_name_the_dataset_the_depth_and_the_scale():
    rows = pd.DataFrame(
        {"model": ["relu"], "width": [16], "seed": [0], "test_error": [0.1],
         "test_error_test_selected": [0.1]}
    )  # fmt: skip
    fig = draw_images({"fashion_mnist": rows}, scale="paper", dataset="fashion_mnist", depth=3)
    assert fig._suptitle.get_text() == "GaLU vs ReLU generalization: Fashion-MNIST (paper scale)"
    assert fig.axes[0].get_title() == "3 hidden layers, PCA-64 inputs"
    plt.close(fig)


def test_the_figure_table_names_functions_that_exist():
    """Every figure the stage declares (galu/generalization/stage.py) has a drawing
    function, and the functions the captions name (their last sentence) all exist."""
    assert set(DRAW) == set(FIGURES) == {"mnist", "fashion_mnist", "clusters", "linear", "parity"}
    for caption in ("images", "clusters", "linear", "parity"):
        text = (REPO / f"workflow/report/generalization_{caption}.rst").read_text()
        drawn = re.findall(r"Drawn by ``(galu[\w.]+)``", text)
        figure = "mnist" if caption == "images" else caption
        assert drawn == [f"{DRAW[figure].__module__}.{DRAW[figure].__name__}"]
        assert len(functions_named(text)) >= 2


def test_images_figure_draws_dotted_lines_only_where_the_selections_differ():
    rows = pd.DataFrame(
        {
            "model": ["relu", "relu", "galu0", "galu0"],
            "width": [16, 32, 16, 32],
            "seed": 0,
            "test_error": [0.10, 0.06, 0.09, 0.05],
            "test_error_test_selected": [0.10, 0.06, 0.08, 0.05],
        }
    )
    legend = "dotted: hyper-parameters picked on the test set"
    fig = draw_images({"mnist": rows}, scale="quick", dataset="mnist", depth=2)
    ax = fig.axes[0]
    dotted = [c for c in ax.containers if c.lines[0].get_linestyle() == ":"]
    assert len(dotted) == 1  # galu0's; relu's would hide under its solid line
    np.testing.assert_allclose(np.asarray(dotted[0].lines[0].get_ydata(), float), [0.08, 0.05])
    assert legend in [t.get_text() for t in ax.get_legend().get_texts()]
    plt.close(fig)
    same = rows.assign(test_error_test_selected=rows["test_error"])
    fig = draw_images({"mnist": same}, scale="quick", dataset="mnist", depth=2)
    ax = fig.axes[0]
    assert not [c for c in ax.containers if c.lines[0].get_linestyle() == ":"]
    assert legend not in [t.get_text() for t in ax.get_legend().get_texts()]
    plt.close(fig)


def test_linear_figure_labels_every_training_set_size():
    rows = pd.DataFrame(
        {
            "model": ["relu"] * 4,
            "seed": 0,
            "n_train": [30, 100, 300, 1000],
            "test_error": [0.3, 0.2, 0.1, 0.05],
        }
    )
    ax = draw_linear({"linear": rows}, scale="quick").axes[0]
    np.testing.assert_allclose(ax.get_xticks(), [30, 100, 300, 1000])
    assert [t.get_text() for t in ax.get_xticklabels()] == ["30", "100", "300", "1000"]
    assert not ax.get_xticks(minor=True).size
    plt.close("all")
