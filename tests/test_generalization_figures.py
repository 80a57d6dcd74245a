"""Figures of the generalization study draw the numbers they are given (no training)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from galu.generalization.figures import (
    clusters_figure,
    linear_figure,
    parity_figure,
    width_figure,
)
from galu.plotting import plt


def _lines(ax) -> dict[str, np.ndarray]:
    """Label -> y data of every labelled line and error-bar curve of an axis."""
    out = {ln.get_label(): np.asarray(ln.get_ydata(), dtype=float) for ln in ax.get_lines()}
    for bars in ax.containers:
        out[bars.get_label()] = np.asarray(bars.lines[0].get_ydata(), dtype=float)
    return out


def test_width_figure_shows_means_and_the_linear_baseline():
    rows = pd.DataFrame(
        {
            "model": ["relu", "relu", "relu", "relu", "linear", "linear"],
            "width": [16, 16, 32, 32, 0, 0],
            "seed": [0, 1, 0, 1, 0, 1],
            "test_error": [0.10, 0.20, 0.05, 0.07, 0.30, 0.40],
            "test_error_test_selected": [0.09, 0.19, 0.05, 0.07, 0.30, 0.40],
        }
    )
    fig = width_figure(rows, "t")
    ax = fig.axes[0]
    lines = _lines(ax)
    np.testing.assert_allclose(lines["ReLU"], [0.15, 0.06])
    np.testing.assert_allclose(lines["linear baseline"], [0.35, 0.35])
    assert [t.get_text() for t in ax.get_xticklabels()] == ["16", "32"]
    plt.close(fig)


def test_width_figure_tells_the_papers_model_from_the_ablations():
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
    fig = width_figure(rows, "t")
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
    fig = clusters_figure(rows)
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
    fig = linear_figure(rows)
    np.testing.assert_allclose(_lines(fig.axes[0])["GaLU (step gates)"], [0.3, 0.5])
    plt.close(fig)
    fig = parity_figure(rows)
    lines = _lines(fig.axes[0])
    np.testing.assert_allclose(lines["chance (0.5)"], [0.5, 0.5])
    hollow = [ln for ln in fig.axes[0].get_lines() if ln.get_markerfacecolor() == "none"]
    np.testing.assert_allclose(hollow[0].get_ydata(), [0.0, 0.2])
    plt.close(fig)
