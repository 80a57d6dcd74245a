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


def _accuracy(**columns):
    return {"results/generalization/accuracy.csv": pd.DataFrame(columns)}


def test_linear_sentences_name_every_size_the_lowest_model_and_the_gap():
    from galu.generalization.sentences import linear

    tables = _accuracy(
        dataset="linear",
        model=["relu"] * 4 + ["galu"] * 4,
        seed=[0, 1] * 4,
        n_train=[30, 30, 300, 300] * 2,
        test_error=[0.3, 0.4, 0.1, 0.1, 0.4, 0.4, 0.2, 0.1],
    )
    assert linear(tables) == [
        "Test error (mean over seeds) from n = 30 to 300 training examples: ReLU falls from "
        "0.35 to 0.1; GaLU (step gates) falls from 0.4 to 0.15.",
        "Lowest at every training-set size: ReLU.",
        "GaLU's test error minus ReLU's: 0.05, 0.05 at n = 30, 300 (mean 0.05).",
    ]


def test_parity_sentences_give_the_distance_from_chance_and_the_training_error():
    from galu.generalization.sentences import parity

    tables = _accuracy(
        dataset="parity",
        model=["relu", "relu", "galu", "galu"],
        seed=0,
        subset_size=[2, 8, 2, 8],
        test_error=[0.0, 0.45, 0.1, 0.52],
        train_error=[0.0, 0.0, 0.0, 0.2],
    )
    assert parity(tables) == [
        "Test error (mean over seeds) at s = 2, 8: ReLU 0, 0.45; GaLU (step gates) 0.1, 0.52; "
        "at s = 8 at most 0.05 from chance (0.5).",
        "Training error (mean over seeds) at most 0.2 (largest at s = 8, GaLU (step gates)).",
    ]


def test_clusters_sentences_follow_the_noise_and_name_the_largest_gap():
    from galu.generalization.sentences import clusters

    tables = _accuracy(
        dataset="clusters",
        task="regression",
        model=["relu"] * 3 + ["galu"] * 3,
        seed=0,
        sigma_y=[0.0, 0.5, 1.0] * 2,
        test_error=[0.0, 0.2, 0.3, 0.01, 0.25, 0.3],
    )
    assert clusters(tables) == [
        "regression: test error (mean over seeds) from sigma_y = 0 to 1: ReLU grows from 0 to "
        "0.3; GaLU (step gates) grows from 0.01 to 0.3; largest gap between GaLU and ReLU "
        "0.05 at sigma_y = 0.5 (GaLU higher)."
    ]


@pytest.mark.parametrize("differ", [False, True])
def test_image_sentences_say_whether_the_test_set_picks_other_settings(differ):
    from galu.generalization.sentences import images

    picked = [0.1, 0.06, 0.08 if differ else 0.09, 0.3]
    tables = _accuracy(
        dataset="mnist",
        model=["relu", "relu", "galu0", "linear"],
        width=[16, 32, 16, 0],
        seed=0,
        test_error=[0.1, 0.06, 0.09, 0.3],
        test_error_test_selected=picked,
    )
    first, second = images(tables, "mnist")
    assert first == (
        "Test error with hyper-parameters picked on the validation split (mean over seeds) at "
        "widths 16, 32: ReLU 0.1, 0.06; GaLU0 0.09; linear baseline 0.3."
    )
    if differ:
        assert second == (
            "Picked on the test set instead (dotted), the error differs at 1 of 3 (model, "
            "width) points (GaLU0 at 16: 0.08)."
        )
    else:
        assert second.endswith("the same error at all 3 (model, width) points, so no dotted "
                               "line is drawn.")  # fmt: skip


def _schedule_tables():
    summary = pd.DataFrame(
        dict(
            setting="relu_k2m2",
            schedule=["constant", "constant", "greedy_floor", "constant", "greedy_floor"],
            source=["ode", "ode", "ode", "sim", "sim"],
            constant_eta=[0.5, 1.0, np.nan, 0.5, np.nan],
            alpha_exit=[50.0, np.inf, 45.0, 40.0, 30.0],
            alpha_target=[70.0, np.inf, 60.0, 66.0, 44.0],
            eps_exit=0.02,
            eps_target=0.001,
            final_eps_g=[0.0, np.nan, 0.0, 1e-5, 1e-7],
            best_constant_eta=0.5,
            is_best_constant=[True, False, False, True, False],
            gain_exit=[0, np.nan, 0.1, 0, 0.25],
            gain_target=[0, np.nan, 1 / 7, 0, 1 / 3],
        )
    )
    alpha = [1.0, 10.0, 100.0, 200.0]
    runs = pd.concat(
        [
            pd.DataFrame(dict(setting="relu_k2m2", schedule="constant", source="ode",
                              constant_eta=1.0, alpha=alpha, eps_g=[0.5, 9.0, np.inf, np.inf],
                              eta=[1.0, 1.0, np.nan, np.nan])),
            pd.DataFrame(dict(setting="relu_k2m2", schedule="greedy_floor", source="ode",
                              constant_eta=np.nan, alpha=alpha, eps_g=[0.5, 1e-3, 1e-11, 0.0],
                              eta=[1.2, 0.5, 0.5, 1.5])),
        ]
    )  # fmt: skip
    return {"results/scm/schedules.csv": summary, "results/scm/schedule_runs.csv": runs}


def test_schedule_sentences_time_the_schedules_and_explain_divergence_and_the_eta_jump():
    from galu.scm.sentences import schedules

    (line,) = schedules(_schedule_tables())
    assert line == (
        "relu_k2m2 (ODE): eps_g first reaches eps_target = 0.001 with the best constant eta "
        "(0.5) at alpha = 70; constant eta = 1 never (it diverges), greedy_floor at alpha = 60. "
        "Simulations: greedy_floor reaches eps_target = 0.001 at alpha = 44 against 66 for the "
        "best constant (gain 0.333). In the ODEs, constant eta = 1 diverges (eps_g infinite "
        "from alpha = 100); greedy_floor's eta moves from 0.5 to 1.5 at alpha = 200, after "
        "eps_g fell below 1e-10 at alpha = 100: there every eta leaves eps_g at the floor, and "
        "the greedy choice follows finite-difference noise (dotted)."
    )


def test_activation_sentences_check_relu_and_name_the_centred_and_extreme_activations():
    from galu.normalization.sentences import activations

    relu = (0.5, 1 / np.sqrt(2 * np.pi), np.sqrt(0.25 - 1 / (2 * np.pi)))
    rows = pd.DataFrame(
        dict(
            activation=["relu", "tanh", "sigmoid"],
            alpha=[relu[0], 0.6057, 0.2066],
            beta=[relu[1], 0.0, 0.5],
            gamma=[relu[2], 0.1656, 0.0262],
        )
    )
    lines = activations({"results/normalization/coefficients.csv": rows})
    assert lines == [
        "alpha, beta, gamma: relu 0.5, 0.399, 0.301; tanh 0.606, 0, 0.166; sigmoid 0.207, "
        "0.5, 0.0262.",
        "relu against its closed forms 1/2, 1/sqrt(2 pi), sqrt(1/4 - 1/(2 pi)): largest "
        "difference 0 (to 1e-06), so normalized ReLU is (|x| - sqrt(2/pi)) / 0.603.",
        "No offset needed (beta = 0 to 1e-06): tanh.",
        "Smallest gamma sigmoid 0.0262: the most nearly linear under N(0, 1), so its "
        "normalized form is stretched most (by 1/gamma = 38.2); largest relu 0.301.",
    ]
    wrong = rows.assign(beta=[0.45, 0.0, 0.5])
    assert (
        "largest difference 0.0511"
        in activations({"results/normalization/coefficients.csv": wrong})[1]
    )


def test_the_zero_error_band_is_the_claims():
    from galu.memorization.band import band_of, claim_band

    assert claim_band() == 0.25  # workflow/claims.yaml: abs(kd_over_m - 1) <= 0.25
    assert band_of("found & (abs(kd_over_m - 1) <= 0.4)") == 0.4
    with pytest.raises(ValueError, match="no 'abs"):
        band_of("kd_over_m <= 1.25")
    rows = pd.DataFrame(
        dict(criterion="zero_error", model="galu", m=64, d=8, seed=0, found=True,
             kd_over_m=[1.0, 1.3])
    )  # fmt: skip
    tables = {"results/memorization/min_width.csv": rows}
    assert zero_error(tables)[1].startswith("1 of 2 searches lie outside 1 ± 0.25")
    assert zero_error(tables, band=0.5)[1] == "All 2 searches lie within 1 ± 0.5."


def test_every_figure_of_every_stage_has_sentences():
    from galu.workflow.settings.runconfig import run_config
    from galu.workflow.stages import STAGES

    config = run_config(REPO)
    drawn = {f"figures/{s.name}/{f.file}.png" for s in STAGES for f in s.figures(config)}
    assert len(drawn) >= 20 and drawn <= set(OBSERVATIONS)


def test_ablation_sentences_count_the_settings_that_train_and_name_the_best():
    from galu.normalization.sentences import ablation

    rows = pd.DataFrame(
        dict(
            activation=["relu"] * 3 + ["tilted_relu"] * 2, depth=30, optimizer="sgd",
            lr=[0.01, 0.1, 0.01, 0.01, 0.1], gain_factor=[1, 1, 1.25, 1, 1],
            diverged=[False, True, False, False, False], trains=[True, False, False, True, True],
            final_test_error=[0.6, np.nan, 0.7, 0.55, 0.5], loss_fraction=0.5,
        )
    )  # fmt: skip
    (line,) = ablation({"results/normalization/ablation.csv": rows})
    assert line == (
        "At depth 30, settings in which the network trains (best loss below 0.5 of its"
        " reference): relu with sgd trains in 1 of 3 (1 diverged), best final test error 0.6"
        " (lr 0.01, gain factor 1); tilted_relu with sgd trains in 2 of 2, best final test"
        " error 0.5 (lr 0.1, gain factor 1)."
    )
    assert ablation({"results/normalization/ablation.csv": rows.iloc[:0]}) == []


def test_depth_scale_sentences_put_xi_c_beside_the_errors():
    from galu.normalization.sentences import depth_scales

    runs = pd.DataFrame(
        dict(
            activation=["tanh"] * 4 + ["relu"] * 2, width=[64, 64, 64, 128, 64, 64],
            depth=[10, 10, 60, 10, 10, 60], seed=[0, 1, 0, 0, 0, 0],
            final_test_error=[0.5, 0.6, 0.7, 0.1, 0.6, 0.9],
        )
    )  # fmt: skip
    scales = pd.DataFrame(dict(activation=["tanh", "relu"], xi_c=[12.5, np.inf]))
    (line,) = depth_scales(
        {
            "results/normalization/trainability_runs.csv": runs,
            "results/normalization/depth_scales.csv": scales,
        }
    )
    # the narrowest width only (64), seeds averaged; 6 xi_c where xi_c is finite
    assert line == (
        "Mean final test error, shallowest and deepest depth: tanh (xi_c 12.5, 6 xi_c = 75):"
        " 0.55 at depth 10, 0.7 at depth 60; relu (xi_c infinite): 0.6 at depth 10, 0.9 at"
        " depth 60."
    )
