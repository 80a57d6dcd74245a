"""The memorization figures draw the numbers of their tables (galu.memorization.figures):
seed means at the right x, the paper's reference laws, titles that name the scale."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from galu.memorization import figures
from galu.memorization.figures import draw_min_width, draw_underparam, draw_zero_error
from galu.memorization.stage import STAGE as MEM_STAGE
from galu.plotting import plt
from galu.workflow.settings.runconfig import run_config

from conftest import REPO


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    plt.close("all")


def _lines(ax) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """Label -> (x, y) of every labelled line and error-bar curve of an axis."""
    out = {
        ln.get_label(): (np.asarray(ln.get_xdata(), float), np.asarray(ln.get_ydata(), float))
        for ln in ax.get_lines()
        if not ln.get_label().startswith("_")
    }
    for bars in ax.containers:
        line = bars.lines[0]
        out[bars.get_label()] = (
            np.asarray(line.get_xdata(), float),
            np.asarray(line.get_ydata(), float),
        )
    return out


def test_underparam_draws_seed_means_and_spreads_with_the_papers_laws():
    rows = pd.DataFrame(
        {
            "model": ["galu"] * 4 + ["galu_exact"] * 2,
            "m": [40] * 6,
            "d": [4] * 6,
            "k": [2, 2, 5, 5, 5, 5],
            "seed": [0, 1, 0, 1, 0, 1],
            "kd_over_m": [0.2, 0.2, 0.5, 0.5, 0.5, 0.5],
            "train_loss": [0.7, 0.9, 0.4, 0.6, 0.5, 0.5],
        }
    )
    fig = draw_underparam({"underparam": rows}, scale="quick")
    ax = fig.axes[0]
    lines = _lines(ax)
    x, y = lines["GaLU (trained)"]
    np.testing.assert_allclose(x, [0.2, 0.5])
    np.testing.assert_allclose(y, [0.8, 0.5])
    np.testing.assert_allclose(lines["GaLU (exact)"][1], [0.5])
    # error bars: one standard deviation over seeds (0.1414 at both points)
    bars = next(c for c in ax.containers if c.get_label() == "GaLU (trained)")
    segments = bars.lines[2][0].get_segments()
    np.testing.assert_allclose(
        [s[1, 1] - s[0, 1] for s in segments], [2 * np.std([0.7, 0.9], ddof=1)] * 2
    )
    law_x, law_y = lines["1 - kd/m (GaLU law)"]
    assert law_x[0] == 0.0 and law_x[-1] == pytest.approx(0.5)
    np.testing.assert_allclose(law_y, 1 - law_x)
    np.testing.assert_allclose(lines["max(0, 1 - 2kd/m)"][1], np.clip(1 - 2 * law_x, 0, None))
    assert ax.get_xlabel() == "kd / m"
    assert ax.get_ylabel() == "training MSE / label variance"
    title = "Under-parameterized memorization: loss against kd/m (quick scale)"
    assert fig._suptitle.get_text() == title


def test_min_width_draws_the_found_widths_and_marks_failed_searches():
    rows = pd.DataFrame(
        {
            "model": ["relu"] * 4 + ["galu"] * 2,
            "m": [64] * 6,
            "d": [8] * 6,
            "out_dim": [1, 1, 4, 4, 1, 4],
            "seed": [0, 1, 0, 1, 0, 0],
            "min_width": [6.0, 10.0, 20.0, 24.0, 9.0, np.nan],
            "found": [True, True, True, True, True, False],
            "search_hi": [256] * 6,
        }
    )
    fig = draw_min_width({"min_width_mse": rows}, scale="paper")
    ax = fig.axes[0]
    lines = _lines(ax)
    np.testing.assert_allclose(lines["ReLU (trained)"][0], [1, 4])
    np.testing.assert_allclose(lines["ReLU (trained)"][1], [8, 22])  # seed means
    np.testing.assert_allclose(lines["GaLU (trained)"][1], [9])  # the failed search left out
    crosses = [ln for ln in ax.get_lines() if ln.get_marker() == "x" and len(ln.get_xdata())]
    assert len(crosses) == 1
    np.testing.assert_allclose(crosses[0].get_xydata(), [[4, 256]])
    np.testing.assert_allclose(lines["m / d"][1], [8, 8])
    dims, counting = lines["k (d + out_dim) = m out_dim"]
    np.testing.assert_allclose(counting, 64 * dims / (8 + dims))
    assert (dims[0], dims[-1]) == pytest.approx((1, 4))
    assert ax.get_title() == "m = 64, d = 8"
    assert (ax.get_xscale(), ax.get_yscale()) == ("log", "log")
    assert ax.get_xlabel() == "label dimension out_dim" and ax.get_ylabel() == "minimal width k"
    assert fig._suptitle.get_text() == "Minimal width to fit Gaussian label vectors (paper scale)"


def test_zero_error_draws_one_line_per_model_and_d_against_m():
    rows = pd.DataFrame(
        {
            "model": ["relu"] * 6,
            "m": [16, 16, 32, 32, 16, 32],
            "d": [4, 4, 4, 4, 8, 8],
            "seed": [0, 1, 0, 1, 0, 0],
            "kd_over_m": [1.0, 1.5, 2.0, 3.0, 1.0, 2.5],
        }
    )
    fig = draw_zero_error({"min_width_zero_error": rows}, scale="quick")
    ax = fig.axes[0]
    lines = _lines(ax)
    np.testing.assert_allclose(lines["ReLU (trained), d = 4"][0], [16, 32])
    np.testing.assert_allclose(lines["ReLU (trained), d = 4"][1], [1.25, 2.5])
    np.testing.assert_allclose(lines["ReLU (trained), d = 8"][1], [1.0, 2.5])
    styles = {label: ln.get_linestyle() for ln in ax.get_lines() if (label := ln.get_label())}
    assert (styles["ReLU (trained), d = 4"], styles["ReLU (trained), d = 8"]) == ("-", "--")
    np.testing.assert_allclose(lines["k = m / d"][1], [1, 1])
    assert [t.get_text() for t in ax.get_xticklabels()] == ["16", "32"]
    assert ax.get_ylim() == pytest.approx((0, 3.3))  # 1.1 times the largest value
    assert ax.get_xlabel() == "examples m" and ax.get_ylabel() == "min_width * d / m"
    assert fig._suptitle.get_text() == "Minimal width to memorize random signs (quick scale)"


def test_a_model_keeps_its_marker_and_colour_in_every_figure():
    under = pd.DataFrame(
        {
            "model": ["relu", "galu"],
            "m": 8,
            "d": 2,
            "k": 1,
            "seed": 0,
            "kd_over_m": 0.25,
            "train_loss": [0.8, 0.75],
        }  # fmt: skip
    )
    zero = pd.DataFrame(
        {"model": ["relu", "galu"], "m": 8, "d": 2, "seed": 0, "kd_over_m": [1.0, 1.5]}
    )
    first = draw_underparam({"underparam": under}, scale="quick").axes[0]
    second = draw_zero_error({"min_width_zero_error": zero}, scale="quick").axes[0]
    looks = {
        c.get_label(): (c.lines[0].get_marker(), c.lines[0].get_color()) for c in first.containers
    }
    for ln in second.get_lines():
        model = ln.get_label().split(",")[0]
        if model in looks:
            assert (ln.get_marker(), ln.get_color()) == looks[model]
    assert looks["ReLU (trained)"] != looks["GaLU (trained)"]


def test_the_figure_table_names_functions_that_exist():
    """The stage's declaration (galu/memorization/stage.py) names each figure's drawing
    function by the figure's name; each caption names it."""
    names = [f.name for f in MEM_STAGE.figures(run_config(REPO))]
    assert names == ["underparam", "min_width", "zero_error"] == list(figures.DRAW)
    assert all(figures.DRAW[name] is getattr(figures, f"draw_{name}") for name in names)
    for name in names:
        caption = (REPO / f"workflow/report/memorization_{name}.rst").read_text()
        assert f"``galu.memorization.figures.draw_{name}``" in caption


def test_zero_error_shades_the_claims_band_and_the_stage_passes_it():
    from galu.memorization.band import claim_band

    rows = pd.DataFrame(
        {"model": ["galu"] * 2, "m": [16, 32], "d": 4, "seed": 0, "kd_over_m": [1.0, 1.5]}
    )
    fig = draw_zero_error({"min_width_zero_error": rows}, scale="quick", band=0.3)
    ax = fig.axes[0]
    (span,) = [p for p in ax.patches if p.get_label().startswith("claim's band")]
    # a Rectangle in y data coordinates (axhspan), across the whole width
    assert (span.get_y(), span.get_y() + span.get_height()) == pytest.approx((0.7, 1.3))
    assert span.get_label() == "claim's band: k d / m within 1 ± 0.3"
    assert "claim's band: k d / m within 1 ± 0.3" in [
        t.get_text() for t in ax.get_legend().get_texts()
    ]
    # without a band (a caller that passes none) nothing is shaded
    bare = draw_zero_error({"min_width_zero_error": rows}, scale="quick").axes[0]
    assert not bare.patches
    # the plot rule's draw params carry the claim's band, read from workflow/claims.yaml
    config = run_config(REPO)
    (figure,) = [f for f in MEM_STAGE.figures(config) if f.name == "zero_error"]
    assert figure.draw == {"band": claim_band()} and claim_band() == 0.25


def test_min_width_draws_the_exact_galu_point_above_and_around_the_trained_one():
    rows = pd.DataFrame(
        {
            "model": ["galu", "galu", "galu_exact"],
            "m": 64,
            "d": 8,
            "out_dim": [1, 4, 1],
            "seed": 0,
            "min_width": [12.0, 30.0, 12.0],
            "found": True,
            "search_hi": 256,
        }
    )
    ax = draw_min_width({"min_width_mse": rows}, scale="quick").axes[0]
    lines = {ln.get_label(): ln for ln in ax.get_lines()}
    exact, trained = lines["GaLU (exact)"], lines["GaLU (trained)"]
    np.testing.assert_allclose(exact.get_xydata(), [[1, 12]])  # the same point as GaLU's
    assert exact.get_zorder() > trained.get_zorder()
    assert exact.get_markersize() > 1.5 * trained.get_markersize()
    assert exact.get_markerfacecolor() == "none"  # hollow: the trained marker shows inside
