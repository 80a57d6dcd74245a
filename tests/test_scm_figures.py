"""The SCM figures draw the numbers of their tables (galu.scm.figures): ODE lines at the
table's alphas, simulation markers at the seed means, the plateau and the eigenvalues of
stability.csv, titles that name the setting, eta and the scale."""

from __future__ import annotations

import re

import numpy as np
import pandas as pd
import pytest

from galu.plotting import plt
from galu.scm import figures
from galu.scm.figures import draw_committee, draw_perceptron, draw_schedules
from galu.scm.stage import STAGE as SCM_STAGE
from galu.workflow.settings.runconfig import run_config

from conftest import REPO, functions_named

ALPHA = np.array([0.0, 1.0, 10.0])


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    plt.close("all")


def _ode(setting: str, eta: float, exact: bool, R: list[float]) -> pd.DataFrame:
    return pd.DataFrame(
        {
            "setting": setting,
            "source": "ode",
            "eta": eta,
            "eta2_term": exact,
            "seed": np.nan,
            "alpha": ALPHA,
            "R_1_1": R,
            "Q_1_1": [0.2, 0.5, 1.0],
            "eps_g": [0.5, 0.1, 0.01],
        }
    )


def _sim(setting: str, eta: float) -> pd.DataFrame:
    """Two seeds at alpha 1 and 10: R 0.4 and 0.6, then 0.9 and 1.1 (means 0.5, 1.0)."""
    return pd.DataFrame(
        {
            "setting": setting,
            "source": "sim",
            "eta": eta,
            "eta2_term": np.nan,
            "seed": [0, 1, 0, 1],
            "alpha": [1.0, 1.0, 10.0, 10.0],
            "R_1_1": [0.4, 0.6, 0.9, 1.1],
            "Q_1_1": [0.5, 0.5, 1.0, 1.0],
            "eps_g": [0.1, 0.1, 0.01, 0.01],
        }
    )


def _stability() -> pd.DataFrame:
    plateau = {
        "setting": "relu_k2m2",
        "eta": 0.5,
        "eta2_term": False,
        "fp_R_1_1": 0.52,
        "index": 0,
        "eigenvalue_real": 0.01,
    }
    perceptron = [
        {
            "setting": "perceptron",
            "eta": eta,
            "eta2_term": True,
            "fp_R_1_1": 1.0,
            "index": index,
            "eigenvalue_real": value,
        }
        for eta in (0.5, 1.0)
        for index, value in enumerate((-eta / 2, eta**2 / 2 - eta))
    ]
    return pd.DataFrame([plateau, *perceptron])


def _labelled(ax) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """Label -> (x, y) of every labelled line of an axis."""
    return {
        ln.get_label(): (np.asarray(ln.get_xdata(), float), np.asarray(ln.get_ydata(), float))
        for ln in ax.get_lines()
        if not ln.get_label().startswith("_")
    }


def test_the_committee_figure_draws_the_first_eta_with_seed_means_and_the_plateau():
    tables = {
        "relu_k2m2_ode": pd.concat(
            [
                _ode("relu_k2m2", 0.5, True, [0.1, 0.5, 0.9]),
                _ode("relu_k2m2", 0.5, False, [0.1, 0.4, 0.8]),
                _ode("relu_k2m2", 2.0, True, [0.1, 0.7, 0.7]),
            ]
        ),
        "relu_k2m2_sim": _sim("relu_k2m2", 0.5),
        "stability": _stability(),
    }
    fig = draw_committee(tables, scale="quick", settings=["relu_k2m2"])
    ax_r, ax_q, ax_eps = fig.axes[:3]
    assert ax_r.get_title() == "ReLU, K = M = 2, $\\eta$=0.5: R"
    assert fig._suptitle.get_text() == "On-line learning in soft committee machines (quick scale)"
    # Log alpha: the alpha = 0 row is left out; solid the exact form, dashed the small-eta one.
    lines = [ln for ln in ax_r.get_lines() if ln.get_linestyle() in ("-", "--")]
    drawn = {ln.get_linestyle(): ln.get_ydata().tolist() for ln in lines}
    assert drawn == {"-": [0.5, 0.9], "--": [0.4, 0.8]}  # eta = 2 is not drawn
    np.testing.assert_allclose(lines[0].get_xdata(), [1.0, 10.0])
    np.testing.assert_allclose(
        np.asarray(ax_r.containers[0].lines[0].get_ydata(), float), [0.5, 1.0]
    )
    np.testing.assert_allclose(_labelled(ax_r)["plateau fixed point"][1], [0.52, 0.52])
    assert ax_eps.get_yscale() == "log"


def test_the_committee_figure_has_one_row_per_setting_in_order():
    tables = {}
    for name in ("relu_k3m2", "erf_k3m2"):
        tables[f"{name}_ode"] = _ode(name, 1.0, True, [0.1, 0.5, 0.9])
        tables[f"{name}_sim"] = _sim(name, 1.0).iloc[:0]
    tables["stability"] = _stability()
    fig = draw_committee(tables, scale="paper", settings=["relu_k3m2", "erf_k3m2"])
    titles = [ax.get_title() for ax in fig.axes if ax.get_title().endswith(": R")]
    assert titles == ["ReLU, K = 3, M = 2, $\\eta$=1: R", "erf, K = 3, M = 2, $\\eta$=1: R"]
    assert not any(ln.get_label() == "plateau fixed point" for ln in fig.axes[0].get_lines())


def test_the_perceptron_figure_draws_every_eta_and_the_jacobian_eigenvalues():
    tables = {
        "perceptron_ode": pd.concat(
            [
                _ode("perceptron", 0.5, True, [0.1, 0.5, 0.9]),
                _ode("perceptron", 1.0, True, [0.1, 0.6, 1.0]),
            ]
        ),
        "perceptron_sim": _sim("perceptron", 1.0),
        "stability": _stability(),
    }
    fig = draw_perceptron(tables, scale="quick")
    ax_rq, ax_eps, ax_eig = fig.axes[:3]
    assert ax_rq.get_title() == "$\\eta$ = 1"  # the simulated eta
    np.testing.assert_allclose(_labelled(ax_rq)["$R_{11}$"][1], [0.1, 0.6, 1.0])
    eps = _labelled(ax_eps)
    np.testing.assert_allclose(eps["$\\eta$=0.5"][1], [0.5, 0.1, 0.01])
    np.testing.assert_allclose(eps["$\\eta$=1"][1], [0.5, 0.1, 0.01])
    eig = _labelled(ax_eig)
    np.testing.assert_allclose(eig["Jacobian eigenvalue 1"][1], [-0.25, -0.5])
    np.testing.assert_allclose(eig["Jacobian eigenvalue 2"][1], [-0.375, -0.5])
    np.testing.assert_allclose(eig["paper: $-\\eta/2$"][1], [-0.25, -0.5])
    # the paper's curves lie over the measured eigenvalues (open rings), never under them
    lines = {ln.get_label(): ln for ln in ax_eig.get_lines()}
    rings = [lines["Jacobian eigenvalue 1"], lines["Jacobian eigenvalue 2"]]
    paper = [lines["paper: $-\\eta/2$"], lines["paper: $\\eta^2/2-\\eta$"]]
    assert min(ln.get_zorder() for ln in paper) > max(ln.get_zorder() for ln in rings)
    assert all(ln.get_markerfacecolor() == "none" for ln in rings)
    assert fig._suptitle.get_text().endswith("(quick scale)")


def _schedule_runs(setting: str, alpha: list[float], *curves: tuple) -> pd.DataFrame:
    """schedule_runs.csv rows of ODE curves ``(schedule, constant_eta, eps_g, eta)``."""
    return pd.concat(
        pd.DataFrame(
            {
                "setting": setting,
                "schedule": schedule,
                "constant_eta": eta,
                "source": "ode",
                "alpha": np.asarray(alpha),
                "eps_g": eps,
                "eta": rate,
            }
        )  # fmt: skip
        for schedule, eta, eps, rate in curves
    )


def test_the_schedules_figure_draws_the_ode_curves_and_the_schedules_rates():
    runs = _schedule_runs(
        "relu_k2m2",
        [1.0, 10.0],
        ("constant", 0.5, [0.1, 0.01], [0.5, 0.5]),
        ("greedy", np.nan, [0.2, 0.001], [0.8, 0.3]),
    )
    summary = pd.DataFrame(
        {
            "setting": ["relu_k2m2"],
            "best_constant_eta": [0.5],
            "eps_target": [1e-3],
            "eps_exit": [0.02],
        }
    )
    fig = draw_schedules({"schedules": summary, "schedule_runs": runs}, scale="quick")
    ax_eps, ax_eta = fig.axes
    eps = _labelled(ax_eps)
    np.testing.assert_allclose(eps["constant $\\eta$=0.5 (best)"][1], [0.1, 0.01])
    np.testing.assert_allclose(eps["greedy"][1], [0.2, 0.001])
    np.testing.assert_allclose(_labelled(ax_eta)["greedy"][1], [0.8, 0.3])
    assert ax_eps.get_title() == "relu_k2m2: generalization error"
    assert fig._suptitle.get_text() == (
        "Learning-rate schedules from the exact-eta ODEs (quick scale)"
    )
    # the reference levels are labelled lines at the summary's values
    np.testing.assert_allclose(eps["$\\epsilon_{exit}$ = 0.02: plateau left"][1], [0.02, 0.02])
    np.testing.assert_allclose(eps["$\\epsilon_{target}$ = 0.001: speed measured"][1], [1e-3, 1e-3])
    legend = [t.get_text() for t in ax_eps.get_legend().get_texts()]
    assert "$\\epsilon_{exit}$ = 0.02: plateau left" in legend
    assert "diverged: run stops" not in legend  # nothing diverged here


def test_the_schedules_figure_marks_divergence_and_dots_the_greedy_eta_at_the_floor():
    runs = _schedule_runs(
        "relu_k3m2",
        [1.0, 10.0, 100.0, 200.0],
        ("constant", 1.0, [0.5, 30.0, np.inf, np.inf], [1.0, 1.0, np.nan, np.nan]),
        ("greedy_floor", np.nan, [0.5, 1e-3, 1e-11, 0.0], [1.2, 0.5, 0.5, 1.5]),
    )
    summary = pd.DataFrame(
        {"setting": ["relu_k3m2"], "best_constant_eta": [0.5], "eps_target": [1e-3],
         "eps_exit": [0.02]}
    )  # fmt: skip
    fig = draw_schedules({"schedules": summary, "schedule_runs": runs}, scale="quick")
    ax_eps, ax_eta = fig.axes
    # the diverged run ends with a cross at its last finite point (eps_g clipped to the top)
    for ax in (ax_eta, ax_eps):
        crosses = [ln for ln in ax.get_lines() if ln.get_marker() == "x" and len(ln.get_xdata())]
        np.testing.assert_allclose(crosses[0].get_xydata(), [[10.0, 1.0]])
    # greedy_floor's eta: solid up to the first point at the floor, dotted from there on
    eta = _labelled(ax_eta)
    np.testing.assert_allclose(eta["greedy_floor"][1], [1.2, 0.5, 0.5])
    dotted = [ln for ln in ax_eta.get_lines() if ln.get_linestyle() == ":" and len(ln.get_xdata())]
    np.testing.assert_allclose(dotted[0].get_xydata(), [[100.0, 0.5], [200.0, 1.5]])
    legend = [t.get_text() for t in ax_eta.get_legend().get_texts()]
    assert "diverged: run stops" in legend
    assert any(text.startswith("greedy $\\eta$ once") for text in legend)
    np.testing.assert_array_equal(
        figures.floor_reached(pd.Series([0.5, 1e-11, 1e-9, 0.0])), [False, True, True, True]
    )


def test_every_figure_has_a_drawing_function_and_names_functions_that_exist():
    """The figures the stage declares (galu/scm/stage.py) each have a drawing function in
    DRAW, in the same order; each caption names its figure's drawing function and the
    functions that computed its tables, which exist."""
    names = [f.name for f in SCM_STAGE.figures(run_config(REPO))]
    assert names == list(figures.DRAW)
    for name in names:
        caption = (REPO / f"workflow/report/scm_{name}.rst").read_text()
        draw = figures.DRAW[name]
        assert re.findall(r"Drawn by ``(galu[\w.]+)``", caption) == [
            f"{draw.__module__}.{draw.__name__}"
        ]
        assert len(functions_named(caption)) >= 2
