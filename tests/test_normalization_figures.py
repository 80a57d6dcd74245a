"""The static-normalization figures draw the numbers of the tables they are given, with the
labels and titles the paper's reader needs (no training, no files)."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from matplotlib.colors import to_hex

from galu.normalization import figures
from galu.normalization.correlation_map import correlation_map
from galu.normalization.isometry import mp_density
from galu.normalization.stage import FIGURES as NORMALIZATION_FIGURES
from galu.plotting import activation_colour, plt

SQRT_2PI = math.sqrt(2 * math.pi)


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    plt.close("all")


def _labelled(ax) -> dict[str, object]:
    """Label -> line of every labelled line of an axis."""
    return {ln.get_label(): ln for ln in ax.get_lines() if not ln.get_label().startswith("_")}


def test_every_figure_of_the_stage_has_a_drawing_function_and_its_seeds():
    assert set(figures.DRAW) == set(NORMALIZATION_FIGURES) == set(figures.SHOWN_SEEDS)
    for name, draw in figures.DRAW.items():
        assert draw.__name__ == f"draw_{name}"


def test_coefficients_figure_draws_each_activation_and_its_normalization():
    gamma = math.sqrt(0.25 - 1 / (2 * math.pi))  # ReLU's (Eq. 3)
    table = pd.DataFrame(
        {"activation": ["relu", "abs"], "alpha": [0.5, 0.0],
         "beta": [1 / SQRT_2PI, 2 / SQRT_2PI], "gamma": [gamma, 0.6]}
    )  # fmt: skip
    fig = figures.draw_coefficients({"coefficients": table}, scale="quick", x_max=3.0)
    raw, norm = fig.axes[:2]
    relu = _labelled(raw)["relu"]
    x = relu.get_xdata()
    assert (x[0], x[-1], len(x)) == (-3.0, 3.0, 801)
    np.testing.assert_allclose(relu.get_ydata(), np.maximum(x, 0))
    normalized = norm.get_lines()
    np.testing.assert_allclose(
        normalized[0].get_ydata(), (np.maximum(x, 0) - 0.5 * x - 1 / SQRT_2PI) / gamma
    )
    np.testing.assert_allclose(normalized[1].get_ydata(), (np.abs(x) - 2 / SQRT_2PI) / 0.6)
    assert to_hex(normalized[1].get_color()) == activation_colour("abs").lower()
    assert (raw.get_title(), norm.get_title()) == ("raw", "normalized")
    assert norm.get_ylabel() == "(f(x) - alpha x - beta) / gamma"
    assert [t.get_text() for t in norm.get_legend().get_texts()] == ["relu", "abs"]
    assert fig._suptitle.get_text() == "Activations and their static normalization (quick scale)"


def _isometry_tables(eigenvalues: dict[str, list[float]]) -> dict[str, pd.DataFrame]:
    summary, eigen = [], []
    for activation, values in eigenvalues.items():
        for variant, ks in (("raw", 0.25), ("normalized", 0.02)):
            for seed in (0, 1):
                summary.append(dict(activation=activation, variant=variant, n=40, seed=seed,
                                    mp_variance=2.0, ks_distance=ks + 0.01 * seed))  # fmt: skip
                eigen += [dict(activation=activation, variant=variant, seed=seed,
                               eigenvalue=v + seed) for v in values]  # fmt: skip
    return {"isometry": pd.DataFrame(summary), "eigenvalues": pd.DataFrame(eigen)}


def test_isometry_figure_compares_the_first_seeds_scaled_spectrum_with_marchenko_pastur():
    # Divided by the MP variance 2: 0.5, 1.5 and two values beyond the axis (> 6).
    tables = _isometry_tables({"relu": [1.0, 3.0, 13.0, 20.0], "tanh": [1.0, 3.0, 5.0, 7.0]})
    fig = figures.draw_isometry(tables, scale="quick", bins=6)
    panels = [ax for ax in fig.axes if ax.axison]
    assert len(panels) == 2 and len(fig.axes) == 2
    relu = panels[0]
    # KS distances: the mean over both seeds; eigenvalues beyond the axis are counted.
    assert relu.get_title() == "relu\nraw KS 0.255, 2 > 6; normalized KS 0.025, 2 > 6"
    assert panels[1].get_title() == "tanh\nraw KS 0.255; normalized KS 0.025"
    mp = _labelled(relu)["Marchenko-Pastur"]
    np.testing.assert_allclose(mp.get_ydata(), mp_density(mp.get_xdata()))
    # The step histogram of seed 0 only: 1/4 of the mass in each of [0, 1) and [1, 2), the
    # two clipped values in the last bin [5, 6] (density: count / (4 * bin width 1)).
    heights = relu.patches[0].get_path().vertices[1::2, 1][:6]
    np.testing.assert_allclose(heights, [0.25, 0.25, 0, 0, 0, 0.5])
    assert fig._suptitle.get_text() == (
        "Static isometry: spectra of (1/n) F F^T, n = 40 (quick scale)"
    )
    assert figures.SHOWN_SEEDS["isometry"](tables) == [0]


def _training_table(widths=(8,)) -> pd.DataFrame:
    rows = [
        dict(activation=a, width=w, depth=d, seed=s, epoch=e,
             train_loss=(2.0 + s) / (1 + e) / w, train_error=0.5, test_error=0.9 - 0.1 * e)
        for a in ("tilted_relu", "relu") for w in widths for d in (2, 4) for s in (3, 4)
        for e in range(3)
    ]  # fmt: skip
    return pd.DataFrame(rows)


def test_training_figure_draws_one_line_per_run_in_its_depths_column():
    table = _training_table()
    fig = figures.draw_training({"trainability": table}, scale="quick")
    axes = np.array(fig.axes).reshape(2, 2)
    assert [ax.get_title() for ax in axes[0]] == ["depth 2", "depth 4"]
    loss, error = axes[0, 1].get_lines(), axes[1, 1].get_lines()
    assert len(loss) == len(error) == 4  # two activations, two seeds
    first = table.query("depth == 4 and activation == 'tilted_relu' and seed == 3")
    np.testing.assert_allclose(loss[0].get_ydata(), first["train_loss"])
    np.testing.assert_allclose(error[0].get_ydata(), first["test_error"])
    assert axes[0, 0].get_yscale() == "log"
    assert (axes[0, 0].get_ylabel(), axes[1, 0].get_ylabel()) == ("training loss", "test error")
    legend = axes[0, 1].get_legend()
    assert [t.get_text() for t in legend.get_texts()] == ["tilted_relu", "relu"]
    assert legend.get_title().get_text() == ""
    assert figures.SHOWN_SEEDS["training"]({"trainability": table}) == [3, 4]


def test_training_figure_names_the_line_style_of_each_width():
    fig = figures.draw_training({"trainability": _training_table((8, 16))}, scale="quick")
    legend = fig.axes[1].get_legend()
    assert legend.get_title().get_text() == "w=8: -, w=16: --"
    styles = {ln.get_linestyle() for ln in fig.axes[1].get_lines()}
    assert styles == {"-", "--"}


def test_max_depth_figure_draws_each_activations_depth_and_mean_loss_ratio():
    depth = pd.DataFrame(
        dict(activation=["relu", "tilted_relu"], width=8, max_trainable_depth=[10, 30])
    )
    runs = pd.DataFrame(
        dict(activation=["relu"] * 4 + ["tilted_relu"] * 4, width=8, depth=[10, 10, 30, 30] * 2,
             seed=[0, 1] * 4, loss_ratio=[0.2, 0.4, 1.5, 0.9, 0.1, 0.3, 0.5, 0.7],
             diverged=[False, False, True, False] + [False] * 4)
    )  # fmt: skip
    tables = {"max_depth": depth, "runs": runs}
    fig = figures.draw_max_depth(tables, scale="quick", loss_fraction=0.8)
    bars, ratios = fig.axes
    assert [p.get_height() for p in bars.patches] == [10, 30]
    assert [t.get_text() for t in bars.get_xticklabels()] == ["relu", "tilted_relu"]
    assert list(bars.get_yticks()) == [0, 10, 30]
    lines = _labelled(ratios)
    np.testing.assert_allclose(lines["relu"].get_ydata(), [0.3, 1.2])
    np.testing.assert_allclose(lines["tilted_relu"].get_ydata(), [0.2, 0.6])
    np.testing.assert_allclose(lines["trains below 0.8"].get_ydata(), [0.8, 0.8])
    # Every run a dot, the diverged one also a cross.
    crosses = ratios.collections[1]
    np.testing.assert_allclose(crosses.get_offsets(), [[30, 1.5]])
    assert figures.SHOWN_SEEDS["max_depth"](tables) == [0, 1]


def _spectra_table() -> pd.DataFrame:
    rows = []
    for seed in (0, 1):
        for width in (4, 8):
            for layer in (1, 2, 3, 4):  # depth 3: layer 1 is the input map, 4 the readout
                for stage, level in (("init", 1.0), ("trained", float(layer))):
                    rows += [dict(activation="relu", depth=3, width=width, seed=seed,
                                  layer=layer, stage=stage, index=i,
                                  eigenvalue=level * (i + 1) + seed + width)
                             for i in range(4)]  # fmt: skip
    return pd.DataFrame(rows)


def test_layer_spectra_figure_draws_the_first_networks_square_hidden_layers():
    table = _spectra_table()
    fig = figures.draw_layer_spectra({"spectra": table}, scale="quick")
    panel = fig.axes[0]
    trained = [ln for ln in panel.get_lines() if ln.get_linestyle() == "-"]
    assert len(trained) == 2  # layers 2 and 3 of seed 0, width 4
    np.testing.assert_allclose(trained[0].get_xdata(), [0, 1 / 3, 2 / 3, 1])
    np.testing.assert_allclose(trained[0].get_ydata(), [2 * (i + 1) + 4 for i in range(4)])
    np.testing.assert_allclose(trained[1].get_ydata(), [3 * (i + 1) + 4 for i in range(4)])
    # the init level: mean of layers 2 and 3's init eigenvalues, 1..4 + 4
    assert panel.get_title() == "relu, depth 3\n(dashed: init, 6.50)"
    assert panel.get_yscale() == "log" and panel.get_ylabel() == "eigenvalue of W W^T"
    assert figures.SHOWN_SEEDS["layer_spectra"]({"spectra": table}) == [0]


def test_jacobian_figure_draws_the_cdf_of_the_smallest_width():
    values = [0.5, 1.0, 2.0, 4.0]
    rows = [dict(activation="tilted_relu", width=w, depth=d, seed=s, squared_singular_value=v)
            for w, s in ((8, 0), (16, 5)) for d in (2, 5) for v in values]  # fmt: skip
    tables = {"jacobian": pd.DataFrame(rows)}
    fig = figures.draw_jacobian(tables, scale="quick")
    ax = fig.axes[0]
    steps = [ln for ln in ax.get_lines() if ln.get_label().startswith("depth")]
    assert [ln.get_label() for ln in steps] == ["depth 2", "depth 5"]
    np.testing.assert_allclose(steps[0].get_xdata(), values)
    np.testing.assert_allclose(steps[0].get_ydata(), [0.25, 0.5, 0.75, 1.0])
    assert ax.get_title() == "tilted_relu" and ax.get_xscale() == "log"
    assert ax.get_ylabel() == "fraction of singular values"
    assert figures.SHOWN_SEEDS["jacobian"](tables) == [0]


def test_correlations_figure_draws_the_theory_and_the_measured_layers():
    table = pd.DataFrame(
        dict(activation=["abs"] * 3 + ["relu"] * 3, layer=[3, 1, 2] * 2, seed=7,
             mean_abs_cos=[0.3, 0.9, 0.5, 0.8, 0.85, 0.82], random_baseline=0.05)
    )  # fmt: skip
    fig = figures.draw_correlations({"correlations": table}, scale="quick")
    theory, measured = fig.axes
    lines = _labelled(theory)
    rho = lines["identity"].get_xdata()
    np.testing.assert_allclose(lines["relu"].get_ydata(), correlation_map("relu", rho))
    np.testing.assert_allclose(
        lines["tilted_relu (= abs)"].get_ydata(), correlation_map("tilted_relu", rho)
    )
    lines = _labelled(measured)
    np.testing.assert_allclose(lines["abs"].get_xdata(), [1, 2, 3])  # sorted by layer
    np.testing.assert_allclose(lines["abs"].get_ydata(), [0.9, 0.5, 0.3])
    np.testing.assert_allclose(lines["independent random vectors"].get_ydata(), [0.05, 0.05])
    assert measured.get_ylim() == (0, 1)
    assert fig._suptitle.get_text() == "Correlation propagation in deep plain MLPs (quick scale)"
    assert figures.SHOWN_SEEDS["correlations"]({"correlations": table}) == [7]


def test_ablation_figure_draws_each_setting_against_its_gain():
    rows = [
        dict(activation=act, optimizer=opt, lr=lr, gain_factor=g, depth=30, width=8, seed=0,
             loss_ratio=base + lr + g / 10, final_test_error=0.5 + base, diverged=False)
        for act, base in (("relu", 0.1), ("tilted_relu", 0.4))
        for opt, lrs in (("sgd", [0.1, 0.01]), ("adam", [0.001]))
        for lr in lrs
        for g in (1.0, 0.8)
    ]  # fmt: skip
    rows[0]["loss_ratio"] = 14.0  # relu, sgd, lr 0.1, gain 1: blown up
    rows[3]["diverged"] = True  # relu, sgd, lr 0.01, gain 0.8: diverged (its ratio: no value)
    tables = {"ablation": pd.DataFrame(rows)}
    fig = figures.draw_ablation(tables, scale="quick", loss_fraction=0.5)
    sgd_ratio, adam_ratio, sgd_error, adam_error = fig.axes
    assert sgd_ratio.get_title().startswith("SGD with momentum\nlr: 0.01 -, 0.1 --")
    assert adam_ratio.get_title().startswith("Adam")
    # one line per activation and learning rate, its points in order of the gain factor
    *sgd_lines, threshold = sgd_ratio.get_lines()
    assert len(sgd_lines) == 4
    np.testing.assert_allclose(threshold.get_ydata(), [0.5, 0.5])
    relu_slow, relu_fast = sgd_lines[:2]  # lr 0.01 first
    np.testing.assert_allclose(relu_slow.get_xdata(), [0.8, 1.0])
    np.testing.assert_allclose(relu_slow.get_ydata(), [figures.RATIO_TOP, 0.1 + 0.01 + 0.1])
    assert relu_slow.get_linestyle() != relu_fast.get_linestyle()
    # the blown-up ratio is drawn at the axis' top, as a triangle
    np.testing.assert_allclose(relu_fast.get_ydata(), [0.1 + 0.1 + 0.08, figures.RATIO_TOP])
    tops = [c.get_offsets().tolist() for c in sgd_ratio.collections]
    assert tops == [[[0.8, 1.5]], [[1.0, 1.5]]]  # the diverged run, then the blown-up one
    assert _labelled(sgd_ratio).keys() == {"relu", "tilted_relu"}
    np.testing.assert_allclose(sgd_error.get_lines()[2].get_ydata(), [0.9, 0.9])  # tilted
    assert len(adam_ratio.get_lines()) == 3 and "depth 30" in fig._suptitle.get_text()
    assert figures.SHOWN_SEEDS["ablation"](tables) == [0]


def test_depth_scale_figure_draws_errors_against_depth_and_marks_six_xi():
    runs = pd.DataFrame(
        dict(activation=["tanh"] * 4 + ["relu_bn"] * 2, width=8, depth=[10, 10, 60, 60, 10, 60],
             seed=[0, 1, 0, 1, 0, 0], final_test_error=[0.5, 0.7, 0.6, 0.8, 0.4, 0.9])
    )  # fmt: skip
    scales = pd.DataFrame(dict(activation=["tanh", "relu"], xi_c=[5.0, math.inf]))
    tables = {"runs": runs, "depth_scales": scales}
    fig = figures.draw_depth_scales(tables, scale="quick")
    (ax,) = fig.axes
    lines = _labelled(ax)
    assert set(lines) == {"tanh, xi_c = 5", "relu_bn (no mean-field scale)"}
    np.testing.assert_allclose(lines["tanh, xi_c = 5"].get_ydata(), [0.6, 0.7])  # seed means
    vertical = [ln for ln in ax.get_lines() if ln.get_label().startswith("_")]
    assert [ln.get_xdata()[0] for ln in vertical] == [30.0]  # 6 xi_c = 30, within 10..60
    assert figures.SHOWN_SEEDS["depth_scales"](tables) == [0, 1]
