"""The static-normalization figures draw the numbers of the tables they are given, with the
labels and titles the paper's reader needs (no training, no files)."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml
from matplotlib.colors import to_hex

from galu.normalization import figures
from galu.normalization.correlation_map import correlation_map
from galu.normalization.isometry import mp_density
from galu.normalization.stage import FIGURES as NORMALIZATION_FIGURES
from galu.normalization.stage import PAPER, WIDE_FIGURE
from galu.normalization.stage import figures as stage_figures
from galu.plotting import activation_colour, plt

SQRT_2PI = math.sqrt(2 * math.pi)
ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    plt.close("all")


def _labelled(ax) -> dict[str, object]:
    """Label -> line of every labelled line of an axis."""
    return {ln.get_label(): ln for ln in ax.get_lines() if not ln.get_label().startswith("_")}


def test_every_figure_of_the_stage_has_a_drawing_function_and_its_seeds():
    drawn = {*NORMALIZATION_FIGURES, WIDE_FIGURE[0]}
    assert set(figures.DRAW) == drawn == set(figures.SHOWN_SEEDS)
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
             train_loss=(2.0 + s) / (1 + e) / w, train_error=0.5,
             test_error=0.9 - 0.1 * e + (0.01 if a == "tilted_relu" else 0.0), diverged=False)
        for a in ("tanh", "tilted_relu", "relu") for w in widths for d in (2, 4) for s in (3, 4)
        for e in range(3)
    ]  # fmt: skip
    return pd.DataFrame(rows)


def _draw_training(table: pd.DataFrame, epoch: int = 2):
    return figures.draw_training(
        {"trainability": table}, scale="quick", epoch=epoch, margin=0.02,
        pair=["tilted_relu", "tanh"],
    )  # fmt: skip


def test_training_figure_shows_the_claims_depth_and_marks_its_epoch_and_bound():
    table = _training_table()
    fig = _draw_training(table)
    error, loss = fig.axes
    # only the shallowest depth, the claim's; the claim's two activations first and bold
    assert error.get_title() == "test error, depth 2" and loss.get_yscale() == "log"
    runs = [ln for ln in error.get_lines() if len(ln.get_xdata()) == 3]
    assert len(runs) == 6  # three activations, two seeds
    first = table.query("depth == 2 and activation == 'tilted_relu' and seed == 3")
    np.testing.assert_allclose(runs[0].get_ydata(), first["test_error"])
    assert runs[0].get_linewidth() > runs[-1].get_linewidth()  # tilted_relu bold, relu not
    lines = _labelled(error)
    bound = lines["claim: tilted_relu at epoch 2\nat most tanh + 0.02 = 0.720"]
    np.testing.assert_allclose(bound.get_ydata(), [0.72, 0.72])
    star = lines["tilted_relu at epoch 2: 0.710"]
    np.testing.assert_allclose(star.get_xydata(), [[2, 0.71]])
    assert [ln.get_xdata()[0] for ln in error.get_lines() if ln.get_linestyle() == ":"] == [2]
    legend = [t.get_text() for t in error.get_legend().get_texts()]
    assert legend[:3] == ["tilted_relu", "tanh", "relu"]
    assert figures.SHOWN_SEEDS["training"]({"trainability": table}) == [3, 4]


def test_training_figure_says_when_the_claims_epoch_is_not_reached_and_marks_divergence():
    table = _training_table()
    gone = (table["activation"] == "relu") & (table["seed"] == 3)
    table.loc[gone, "diverged"] = True
    table = table[~(gone & (table["epoch"] == 2))]  # a diverged run stops at epoch 1
    fig = _draw_training(table, epoch=25)
    error = fig.axes[0]
    texts = [t.get_text() for t in error.texts]
    assert "this run trains 2 epochs:\nthe claim reads epoch 25, not reached" in texts
    assert "diverged after epoch 1" in texts
    crosses = [ln for ln in error.get_lines() if ln.get_marker() == "x"]
    np.testing.assert_allclose(crosses[0].get_xydata(), [[1, 0.8]])
    assert not [ln for ln in error.get_lines() if ln.get_linestyle() == ":"]


def test_training_figure_names_the_line_style_of_each_width():
    fig = _draw_training(_training_table((8, 16)))
    legend = fig.axes[0].get_legend()
    assert legend.get_title().get_text() == "w=8: -, w=16: --"
    styles = {ln.get_linestyle() for ln in fig.axes[1].get_lines() if len(ln.get_xdata()) == 3}
    assert styles == {"-", "--"}


def _max_depth_tables():
    depth = pd.DataFrame(
        dict(activation=["relu", "tilted_relu"], width=8, max_trainable_depth=[10, 30])
    )
    runs = pd.DataFrame(
        dict(activation=["relu"] * 4 + ["tilted_relu"] * 4, width=8, depth=[10, 10, 30, 30] * 2,
             seed=[0, 1] * 4, loss_ratio=[0.2, 0.4, 1.5, 0.9, 0.1, 0.3, 0.5, 0.7],
             diverged=[False, False, True, False] + [False] * 4)
    )  # fmt: skip
    return {"max_depth": depth, "runs": runs}


def test_max_depth_figure_draws_each_activations_depth_and_mean_loss_ratio():
    tables = _max_depth_tables()
    fig = figures.draw_max_depth(
        tables, scale="quick", loss_fraction=0.8, paper_depths={"relu": 30, "tilted_relu": 60}
    )
    bars, ratios = fig.axes
    assert [p.get_height() for p in bars.patches] == [10, 30]
    # the diverged run is counted in words under its activation's name
    names = [t.get_text() for t in bars.get_xticklabels()]
    assert names == ["relu\n1 of 4\nruns diverged", "tilted_relu"]
    assert list(bars.get_yticks()) == [0, 10, 30, 60]
    lines = _labelled(ratios)
    np.testing.assert_allclose(lines["relu"].get_ydata(), [0.3, 1.2])
    np.testing.assert_allclose(lines["tilted_relu"].get_ydata(), [0.2, 0.6])
    np.testing.assert_allclose(lines["trains below 0.8"].get_ydata(), [0.8, 0.8])
    # Every run a dot, the diverged one also a cross.
    crosses = ratios.collections[1]
    np.testing.assert_allclose(crosses.get_offsets(), [[30, 1.5]])
    assert figures.SHOWN_SEEDS["max_depth"](tables) == [0, 1]


def test_max_depth_figure_marks_the_papers_depth_over_each_activations_bars():
    fig = figures.draw_max_depth(
        _max_depth_tables(), scale="quick", loss_fraction=0.8,
        paper_depths={"relu": 30, "tilted_relu": 60},
    )  # fmt: skip
    bars = fig.axes[0]
    paper = [ln for ln in bars.get_lines() if ln.get_linestyle() == "--"]
    # over bar 0 (relu) at 30, over bar 1 (tilted_relu) at 60
    np.testing.assert_allclose([ln.get_ydata() for ln in paper], [[30, 30], [60, 60]])
    np.testing.assert_allclose([np.mean(ln.get_xdata()) for ln in paper], [0, 1])
    assert [t.get_text() for t in bars.texts] == ["paper: 30", "paper: 60"]
    assert paper[0].get_label() == "the paper's depth"
    assert bars.get_ylim()[1] >= 60


def test_the_normalization_figures_mark_the_numbers_of_their_claims():
    """The paper's numbers the figures draw (galu.normalization.stage.PAPER) are those of
    the claims the figures show (workflow/claims.yaml)."""
    entries = yaml.safe_load((ROOT / "workflow/claims.yaml").read_text())
    claims = {c["id"]: c for c in entries}
    for activation, depth in PAPER["max_depth"].items():
        (claim,) = [c for c in entries if c["figure"].endswith("max_depth.png")
                    and c.get("where") == f"activation == '{activation}'"]  # fmt: skip
        assert claim["expected"] == depth
    tanh_level = claims["norm_tilted_relu_tanh_level_in_25_epochs"]
    assert tanh_level["figure"].endswith("training_curves.png")
    assert f"epoch == {PAPER['training']['epoch']}" in tanh_level["where"]
    assert tanh_level["expected"] == PAPER["training"]["margin"]
    assert tanh_level["expression"] == " - ".join(PAPER["training"]["pair"])
    flat = claims["norm_deep_layer_spectra_stay_flat"]
    assert flat["expected"] == PAPER["layer_spectra"]["drift_bound"]
    jacobian = claims["norm_tilted_relu_jacobian_isometric"]["expression"]
    assert float(jacobian.split(">")[1]) == PAPER["jacobian"]["band"]
    beats = claims["norm_tilted_relu_beats_relu_deep"]
    assert beats["figure"].endswith("depth_scales.png")
    assert beats["expression"] == " - ".join(PAPER["depth_scales"]["pair"])
    runs_fail = claims["norm_relu_runs_fail_tilted_train"]
    low, high = PAPER["ablation"]["claim_depths"]
    assert runs_fail["figure"].endswith("ablation.png")
    assert f"depth >= {low} and depth <= {high}" in runs_fail["where"]
    assert runs_fail["expected"] == PAPER["ablation"]["margin"]


def test_every_normalization_figure_is_the_figure_of_a_claim():
    entries = yaml.safe_load((ROOT / "workflow/claims.yaml").read_text())
    shown = {c["figure"] for c in entries}
    for name, (file, _, _) in NORMALIZATION_FIGURES.items():
        assert f"figures/normalization/{file}.png" in shown, name


def _spectra_table(diverged_depth: int | None = None) -> pd.DataFrame:
    rows = []
    for activation in ("relu", "tilted_relu"):
        for depth in (3, 4):
            for seed in (0, 1):
                for layer in range(1, depth + 2):  # layer 1 maps the inputs, depth + 1 reads out
                    for stage in ("init", "trained"):
                        drift = 0.02 * layer if activation == "relu" else 0.001 * layer
                        level = 2.0 if stage == "init" else 2.0 * (1 + drift)
                        if (
                            stage == "trained"
                            and activation == "tilted_relu"
                            and depth == diverged_depth
                        ):
                            level = math.nan
                        rows += [dict(activation=activation, depth=depth, width=8, seed=seed,
                                      layer=layer, stage=stage, index=i, eigenvalue=level)
                                 for i in range(3)]  # fmt: skip
    return pd.DataFrame(rows)


def test_layer_drift_is_the_claims_quantity_per_square_hidden_layer():
    drift = figures.layer_drift(_spectra_table())
    relu = drift.query("activation == 'relu' and depth == 4 and seed == 0")
    assert list(relu["layer"]) == [2, 3, 4]  # square hidden layers only
    np.testing.assert_allclose(relu["drift"], [0.04, 0.06, 0.08])
    assert list(relu["deep"]) == [False, True, True]


def test_layer_spectra_figure_draws_the_deep_drift_against_the_claims_bound():
    table = _spectra_table(diverged_depth=4)
    fig = figures.draw_layer_spectra({"spectra": table}, scale="quick", drift_bound=0.01)
    summary, relu, tilted = fig.axes[:3]
    lines = _labelled(summary)
    # deeper half: depth 3 -> layers 2, 3 (> 1.5); depth 4 -> 3, 4; relu drift 0.02 * layer
    np.testing.assert_allclose(lines["relu"].get_xydata(), [[3, 0.05], [4, 0.07]])
    np.testing.assert_allclose(lines["tilted_relu"].get_xydata(), [[3, 0.0025]])
    np.testing.assert_allclose(lines["claim: at most 0.01"].get_ydata(), [0.01, 0.01])
    crossed = lines["tilted_relu diverged:\nno spectrum at depth 4"]
    assert list(crossed.get_xdata()) == [4] and crossed.get_marker() == "x"
    assert summary.get_yscale() == "log" and summary.get_ylim()[0] < 0.0025
    assert tilted.get_title() == "tilted_relu\ndiverged, no trained spectrum: depth 4"
    assert relu.get_title() == "relu" and len(relu.get_lines()) == 3  # two depths + bound
    assert figures.SHOWN_SEEDS["layer_spectra"]({"spectra": table}) == [0, 1]


def test_jacobian_figure_draws_the_cdf_of_the_smallest_width_and_the_claims_fraction():
    values = [0.5, 1.0, 2.0, 4.0]
    rows = [dict(activation=a, width=w, depth=d, seed=s, squared_singular_value=v)
            for a in ("relu", "tilted_relu") for w, s in ((8, 0), (16, 5)) for d in (2, 5)
            for v in (values if a == "relu" else [1.0, 1.0 + 1e-6])]  # fmt: skip
    tables = {"jacobian": pd.DataFrame(rows)}
    fig = figures.draw_jacobian(tables, scale="quick", band=1e-4)
    relu, tilted = fig.axes
    steps = [ln for ln in relu.get_lines() if ln.get_label().startswith("depth")]
    assert [ln.get_label() for ln in steps] == ["depth 2", "depth 5"]
    np.testing.assert_allclose(steps[0].get_xdata(), values)
    np.testing.assert_allclose(steps[0].get_ydata(), [0.25, 0.5, 0.75, 1.0])
    assert relu.get_title() == "relu: 75 % of the values further than 0.0001 from 1"
    assert tilted.get_title() == "tilted_relu: 0 % of the values further than 0.0001 from 1"
    assert any("its steps overlap" in t.get_text() for t in tilted.texts)
    assert relu.get_xscale() == "log" and relu.get_ylabel() == "fraction of values"
    # one panel per row, legends beside the panels: no legend below a panel
    assert all(ax.get_legend().get_bbox_to_anchor().y0 >= ax.bbox.y0 for ax in fig.axes)
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


def _grid_runs() -> pd.DataFrame:
    """Depth-grid runs: at depths 30 and 60 relu trains in 1 of 4, tilted_relu in 3 of 4."""
    return pd.DataFrame(
        dict(activation=["relu"] * 5 + ["tilted_relu"] * 5, width=8,
             depth=[10, 30, 30, 60, 60] * 2, seed=[0, 0, 1, 0, 1] * 2,
             trains=[True, True, False, False, False, True, True, True, True, False],
             final_test_error=[0.5, 0.6, 0.7, 0.8, 0.9, 0.5, 0.5, 0.6, 0.6, 0.7])
    )  # fmt: skip


def test_ablation_figure_draws_each_setting_against_its_gain():
    rows = [
        dict(activation=act, optimizer=opt, lr=lr, gain_factor=g, depth=30, width=8, seed=0,
             loss_ratio=base + lr + g / 10, final_test_error=0.5 + base, diverged=False,
             trains=act == "relu")
        for act, base in (("relu", 0.1), ("tilted_relu", 0.4))
        for opt, lrs in (("sgd", [0.1, 0.01]), ("adam", [0.001]))
        for lr in lrs
        for g in (1.0, 0.8)
    ]  # fmt: skip
    rows[0]["loss_ratio"] = 14.0  # relu, sgd, lr 0.1, gain 1: blown up
    rows[3]["diverged"] = True  # relu, sgd, lr 0.01, gain 0.8: diverged (its ratio: no value)
    tables = {"ablation": pd.DataFrame(rows), "runs": _grid_runs()}
    fig = figures.draw_ablation(
        tables, scale="quick", loss_fraction=0.5, claim_depths=[30, 60], margin=0.3
    )
    sgd_ratio, adam_ratio, fractions, sgd_error, adam_error = fig.axes
    # titles name the optimizer only; the line styles are in the legend, drawn
    assert (sgd_ratio.get_title(), adam_ratio.get_title()) == ("SGD with momentum", "Adam")
    box = sgd_error.get_legend()
    legend = dict(zip([t.get_text() for t in box.get_texts()], box.legend_handles, strict=True))
    assert set(legend) == {"relu", "tilted_relu", "lr 0.01", "lr 0.1"}
    assert legend["lr 0.01"].get_linestyle() == "-" and legend["lr 0.1"].get_linestyle() == "--"
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
    assert "depth 30" in fig._suptitle.get_text()
    # the claim's panel: grid fractions at depths 30-60 (solid) beside the ablation's (hatched)
    heights = [p.get_height() for p in fractions.patches if p.get_width() > 0]
    np.testing.assert_allclose(heights, [0.25, 1.0, 0.75, 0.0])
    bound = _labelled(fractions)["claim: tilted_relu at least\nrelu + 0.3"]
    np.testing.assert_allclose(bound.get_ydata(), [0.55, 0.55])
    assert np.mean(bound.get_xdata()) > 0.5  # over the tilted ReLU's bars
    assert "0.75\n(3/4)" in [t.get_text() for t in fractions.texts]
    assert figures.SHOWN_SEEDS["ablation"](tables) == [0, 1]


def test_depth_scale_figure_draws_errors_against_depth_and_marks_six_xi():
    runs = pd.DataFrame(
        dict(activation=["tanh"] * 4 + ["relu_bn"] * 2 + ["relu", "tilted_relu"] * 2, width=8,
             depth=[10, 10, 60, 60, 10, 60, 10, 10, 60, 60],
             seed=[0, 1, 0, 1, 0, 0, 0, 0, 0, 0],
             final_test_error=[0.5, 0.7, 0.6, 0.8, 0.4, 0.9, 0.5, 0.5, 0.7, 0.6])
    )  # fmt: skip
    scales = pd.DataFrame(
        dict(activation=["tanh", "relu", "tilted_relu"], xi_c=[5.0, math.inf, 100.0])
    )
    tables = {"runs": runs, "depth_scales": scales}
    fig = figures.draw_depth_scales(tables, scale="quick", pair=["tilted_relu", "relu"])
    (ax,) = fig.axes
    lines = _labelled(ax)
    assert set(lines) == {
        "tanh, xi_c = 5: 6 xi_c = 30 (dotted)",
        "relu_bn (no mean-field scale)",
        "relu, xi_c = inf (critical: no depth limit)",
        "tilted_relu, xi_c = 100: 6 xi_c = 600 (beyond depth 60)",
    }
    np.testing.assert_allclose(
        lines["tanh, xi_c = 5: 6 xi_c = 30 (dotted)"].get_ydata(), [0.6, 0.7]
    )
    vertical = [ln for ln in ax.get_lines() if ln.get_label().startswith("_")]
    assert [ln.get_xdata()[0] for ln in vertical] == [30.0]  # 6 xi_c = 30, within 10..60
    # the claim at the deepest depth: tilted_relu 0.6 against relu 0.7, below by 0.10
    arrow, text = ax.texts
    assert (arrow.xy, arrow.xyann) == ((60.0, 0.6), (60.0, 0.7))
    assert text.get_text() == "claim: tilted_relu below relu\nhere below, by 0.10"
    assert figures.SHOWN_SEEDS["depth_scales"](tables) == [0, 1]


def _width_tables() -> dict[str, pd.DataFrame]:
    runs = pd.DataFrame(
        dict(activation=["relu"] * 3 + ["tilted_relu"] * 3, width=[8, 8, 64] * 2,
             depth=[3, 3, 3] * 2, seed=[0, 1, 0] * 2, compared_at_epoch=4,
             diverged=[False, False, False, False, True, False],
             loss_ratio=[0.2, 0.4, 0.1, 0.9, 1.0, 0.3],
             final_test_error=[0.5, 0.7, 0.4, 0.8, 0.9, 0.6])
    )  # fmt: skip
    narrow = pd.DataFrame(
        dict(activation=["relu", "relu", "tilted_relu", "tilted_relu", "tanh", "tanh"],
             width=8, layer=[1, 2] * 3, seed=2, mean_abs_cos=[0.5, 0.6, 0.2, 0.1, 0.7, 0.7],
             random_baseline=0.3)
    )  # fmt: skip
    wide = narrow[narrow["activation"] != "tanh"].assign(width=64, random_baseline=0.1, seed=3)
    return {"widths": runs, "correlations": narrow, "wide_correlations": wide}


def test_widths_figure_draws_both_widths_side_by_side_with_their_correlations():
    tables = _width_tables()
    fig = figures.draw_widths(tables, scale="paper-cpu", loss_fraction=0.5)
    error, ratio, corr = fig.axes
    lines = _labelled(error)
    assert sorted(lines) == ["relu, w = 64", "relu, w = 8", "tilted_relu, w = 64",
                             "tilted_relu, w = 8"]  # fmt: skip
    np.testing.assert_allclose(lines["relu, w = 8"].get_ydata(), [0.6])  # mean over seeds
    np.testing.assert_allclose(lines["tilted_relu, w = 64"].get_ydata(), [0.6])
    assert lines["relu, w = 8"].get_linestyle() == "-"
    assert lines["relu, w = 64"].get_linestyle() == "--"
    assert error.get_ylabel() == "test error at epoch 4"
    assert to_hex(lines["tilted_relu, w = 8"].get_color()) == to_hex(
        activation_colour("tilted_relu")
    )
    ratios = _labelled(ratio)
    np.testing.assert_allclose(ratios["tilted_relu, w = 8"].get_ydata(), [0.95])
    np.testing.assert_allclose(ratios["trains below 0.5"].get_ydata(), [0.5, 0.5])
    crosses = [c for c in ratio.collections if c.get_offsets().shape[0] == 1]
    assert any(np.allclose(c.get_offsets(), [[3, 1.0]]) for c in crosses)  # the diverged run
    corrs = _labelled(corr)
    assert "tanh, w = 8" not in corrs  # only the activations compared at both widths
    np.testing.assert_allclose(corrs["tilted_relu, w = 64"].get_ydata(), [0.2, 0.1])
    np.testing.assert_allclose(corrs["random vectors, w = 64"].get_ydata(), [0.1, 0.1])
    np.testing.assert_allclose(corrs["random vectors, w = 8"].get_ydata(), [0.3, 0.3])
    assert fig._suptitle.get_text() == (
        "Deep plain MLPs on CIFAR-10 at two widths (paper-cpu scale)"
    )
    assert figures.SHOWN_SEEDS["widths"](tables) == [0, 1, 2, 3]


def test_the_widths_figure_is_drawn_only_where_a_second_width_is_trained():
    config = yaml.safe_load((ROOT / "config/config.yaml").read_text())
    names = [f.name for f in stage_figures(config)]
    assert "widths" not in names and names == list(NORMALIZATION_FIGURES)
    config["normalization"]["wide"]["activations"] = ["relu"]
    widths = [f for f in stage_figures(config) if f.name == "widths"]
    assert [list(f.tables) for f in widths] == [list(WIDE_FIGURE[2])]
    assert widths[0].draw == {
        "loss_fraction": config["normalization"]["trainability"]["loss_fraction"]
    }
