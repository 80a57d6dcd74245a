"""The captions' "what the data show" sentences follow the data: a falling series reads
"falls", a growing one "grows", outliers are named, zeros are counted."""

from __future__ import annotations

import jinja2
import numpy as np
import pandas as pd
import pytest
from docutils.core import publish_parts

from galu.memorization.sentences import zero_error
from galu.normalization.jacobian_summary import jacobian_stats
from galu.scm.sentences import perceptron, scm_settings
from galu.sentences import path, trend
from galu.workflow.observations import (
    OBSERVATIONS,
    observation_sources,
    observations,
    observations_rst,
)

from conftest import REPO


def test_trend_reads_the_direction_of_the_data():
    assert trend(0.233, 0.042) == "falls from 0.233 to 0.042"
    assert trend(0.042, 0.233) == "grows from 0.042 to 0.233"
    assert trend(1.0, 1.01) == "stays at about 1"


def test_path_names_an_interior_turn():
    assert path([0, 1, 2, 3], [1.0, 0.5, 0.1, 0.8]) == (
        "falls from 1 to a minimum of 0.1 at alpha = 2, then grows to 0.8"
    )
    assert path([0, 1, 2], [1.0, 0.5, 0.1]) == "falls from 1 to 0.1"
    assert path([0, 1, 2], [0.1, 0.9, 0.5], "layer").startswith("grows from 0.1 to a maximum")


def trajectories(series):
    """A trajectories.csv of the perceptron with one ODE eps_g series per eta."""
    rows = []
    for eta, eps in series.items():
        for alpha, value in enumerate(eps):
            rows.append(
                dict(
                    setting="perceptron",
                    source="ode",
                    eta=eta,
                    eta2_term=True,
                    alpha=float(alpha),
                    eps_g=value,
                    R_1_1=0.5,
                    Q_1_1=0.6,
                    seed=np.nan,
                )
            )
    return pd.DataFrame(rows)


def stability(top):
    return pd.DataFrame(
        [dict(setting="perceptron", eta=eta, eigenvalue_real=v, index=0) for eta, v in top.items()]
    )


@pytest.mark.parametrize(
    ("eps", "word"), [([0.233, 0.1, 0.042], "falls"), ([0.042, 0.1, 0.233], "grows")]
)
def test_perceptron_sentence_says_what_eta_2_1_does(eps, word):
    tables = {
        "results/scm/trajectories.csv": trajectories({0.5: [0.3, 0.01, 1e-4], 2.1: eps}),
        "results/scm/stability.csv": stability({1.0: -0.5, 1.9: -0.1, 2.1: 0.1}),
    }
    first, signs = perceptron(tables)
    assert "eta = 0.5: falls from 0.3 to 0.0001" in first
    assert f"eta = 2.1: {word} from" in first
    assert signs == (
        "The largest Jacobian eigenvalue at R = Q = 1 is negative up to eta = 1.9 and "
        "positive from eta = 2.1 on (eta from 1 to 2.1)."
    )


def test_settings_sentence_lists_final_order_parameters_and_simulations():
    table = trajectories({0.5: [0.3, 0.2, 0.1]}).assign(setting="relu_k2m3", R_1_2=0.25)
    sim = table.assign(source="sim", seed=0.0, eps_g=0.15)
    (line,) = scm_settings(["relu_k2m3"])({"results/scm/trajectories.csv": pd.concat([table, sim])})
    assert line == (
        "relu_k2m3 (eta = 0.5, ODE exact in eta): eps_g falls from 0.3 to 0.1 by alpha = 2, "
        "where R11 = 0.5, R12 = 0.25, Q11 = 0.6. Simulations (mean of 1 seeds) reach "
        "eps_g = 0.15 at alpha = 2."
    )


def test_zero_error_names_the_outlier_a_mean_would_hide():
    rows = pd.DataFrame(
        dict(
            criterion="zero_error",
            model=["relu", "relu", "galu", "galu"],
            m=[64, 128, 64, 128],
            d=8,
            seed=0,
            found=True,
            kd_over_m=[1.0, 0.9, 0.8, 2.13],
        )
    )
    lines = zero_error({"results/memorization/min_width.csv": rows})
    assert np.mean(rows["kd_over_m"]) == pytest.approx(1.2075)  # a mean within 1 ± 0.25
    assert lines[0].startswith("min_width * d / m: relu from 0.9 to 1 (median 0.95, 2 searches)")
    assert (
        lines[1] == "1 of 4 searches lie outside 1 ± 0.25 (galu at m = 128, d = 8, seed 0: 2.13)."
    )


def test_jacobian_stats_count_numerical_zeros():
    stats = jacobian_stats(np.r_[np.zeros(3), 1e-13, [0.1, 1.0, 10.0, 1.0]])
    assert stats.at_floor == pytest.approx(0.5)
    assert stats.median == pytest.approx(1.0)
    assert 1.0 < stats.decades < 2.0


def test_caption_paragraph_renders_and_sources_cover_every_figure(tmp_path):
    (tmp_path / "results/normalization").mkdir(parents=True)
    pd.DataFrame(
        dict(
            activation=["relu", "abs"],
            layer=[1, 1],
            mean_abs_cos=[0.3, 0.07],
            random_baseline=0.07,
            seed=0,
        )
    ).to_csv(tmp_path / "results/normalization/correlations.csv", index=False)
    figure = "figures/normalization/correlations.png"
    lines = observations(figure, tmp_path)
    assert lines[0] == (
        "Theory, the fraction of a small correlation one layer keeps (slope at 0): relu 0.733; "
        "tilted_relu 0."
    )
    assert lines[1].startswith("Mean |cos| from layer 1 to layer 1")
    text = observations_rst(figure, tmp_path)
    html = publish_parts(jinja2.Template(text).render(), writer="html")["body"]
    assert "system-message" not in html and "Mean |cos|" in html
    # the paragraph names the module that wrote its sentences
    assert "by ``galu/normalization/sentences.py``" in text
    assert observations_rst("figures/none.png", tmp_path) == ""
    assert observation_sources([figure, "figures/none.png"]) == [
        "results/normalization/correlations.csv"
    ]
    # a run's tables, or committed reference tables (the authors' numbers) that exist
    sources = {source for s, _ in OBSERVATIONS.values() for source in s}
    assert all(s.startswith("results/") or (REPO / s).is_file() for s in sources)
    assert {s for s in sources if not s.startswith("results/")} == {
        "workflow/reference/galu_authors_minimal_k.csv",
        "workflow/reference/galu_authors_images.csv",
    }


def test_noise_below_the_floor_never_reads_as_growth():
    # ODE eps_g hits the integrator's floor and jitters there: it "falls to below 1e-10"
    eps = [0.233, 1e-5, 0.0, 3e-12, 4e-12]
    assert path(range(5), eps, floor=1e-10) == "falls from 0.233 to below 1e-10"
    assert path(range(5), eps).startswith("falls from 0.233 to a minimum of 0")  # no floor


def test_eigenvalue_sign_change_reports_the_zero_at_the_critical_eta():
    from galu.scm.sentences import sign_change

    text = sign_change(stability({1.9: -0.1, 2.0: 3e-9, 2.1: 0.1})[["eta", "eigenvalue_real"]])
    assert text == (
        "The largest Jacobian eigenvalue at R = Q = 1 is negative up to eta = 1.9, 0 at "
        "eta = 2 and positive from eta = 2.1 on (eta from 1.9 to 2.1)."
    )
    assert "negative for every eta" in sign_change(stability({0.5: -0.2, 1.0: -0.4}))


def test_min_width_sentence_per_model_direction_and_single_points():
    from galu.memorization.sentences import min_width

    rows = pd.DataFrame(
        dict(
            criterion="mse",
            found=True,
            model=["relu", "relu", "relu", "galu_exact"],
            out_dim=[1, 4, 16, 1],
            min_width=[9, 30, 60, 12],
        )
    )
    assert min_width({"results/memorization/min_width.csv": rows}) == [
        "relu: the minimal width grows from 9 to 60 as out_dim goes from 1 to 16.",
        "galu_exact: minimal width 12 (out_dim = 1 only).",
    ]
