"""The figures' shared look: one colour per activation in every normalization figure,
visible zero-height bars, legends that list only visible curves and sit beside the data,
log axes with enough tick labels, and the Jacobian figure's honest treatment of zeros.

The drawing functions of galu/normalization/figures.py are called on tiny synthetic tables;
the plot script is run as Snakemake would (``runpy`` with a ``snakemake`` object), with
``Run.save_figure`` replaced so the test can read the figure back."""

from __future__ import annotations

import itertools
import runpy
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import pytest
from matplotlib.colors import to_hex, to_rgb

from galu.normalization import figures as norm_figures
from galu.normalization.stage import PAPER
from galu.plotting import (
    ACTIVATION_COLOURS,
    activation_colour,
    labelled_ticks,
    legend_outside,
    log_ticks,
    mark_zero_bars,
    use_style,
)
from galu.workflow.output import Run

REPO = Path(__file__).resolve().parents[1]
ACTIVATIONS = ["relu", "tilted_relu", "abs", "tanh"]


class Named(list):
    """A Snakemake Namedlist stand-in: a list whose entries are also attributes."""

    def __init__(self, **entries):
        super().__init__(entries.values())
        self.__dict__.update(entries)

    def items(self):
        return {k: v for k, v in self.__dict__.items()}.items()


class Smk:
    def __init__(self, tmp, rule, inputs, params):
        self.rule = rule
        self.input = Named(**inputs)
        self.output = Named(png=str(tmp / "out.png"))
        self.log = [str(tmp / "log.txt")]
        self.params = Named(scale="quick", **params)
        self.wildcards = Named()


@pytest.fixture
def drawn(monkeypatch):
    figures = []
    monkeypatch.setattr(
        Run,
        "save_figure",
        lambda self, fig, path, seeds=(): figures.append((fig, list(seeds), self.extra)),
    )
    yield figures
    plt.close("all")


def run_script(tmp_path, name, inputs, params, drawn):
    paths = {}
    for key, table in inputs.items():
        paths[key] = str(tmp_path / f"{key}.csv")
        table.to_csv(paths[key], index=False)
    runpy.run_path(
        str(REPO / "scripts" / name),
        init_globals={"snakemake": Smk(tmp_path, name, paths, params)},
    )
    return drawn[-1][0]


# the paper's numbers a figure draws, as galu.normalization.stage declares them
PAPER_PARAMS = {
    "training": PAPER["training"],
    "max_depth": {"paper_depths": PAPER["max_depth"]},
    "jacobian": PAPER["jacobian"],
}


def draw(figure, tables, **params):
    """A normalization figure in the house style, as the plot script draws it."""
    use_style()
    params = {**PAPER_PARAMS.get(figure, {}), **params}
    return norm_figures.DRAW[figure](tables, scale="quick", **params)


def line_colours(fig):
    """label -> colour of every labelled line (or bar) in the figure."""
    colours = {}
    for ax in fig.axes:
        for artist in [*ax.get_lines(), *ax.patches, *ax.collections]:
            label = artist.get_label()
            if label in ACTIVATIONS:
                if hasattr(artist, "get_xydata"):  # a line
                    colour = artist.get_color()
                else:  # a bar (one RGBA) or scatter points (rows of RGBA)
                    colour = np.atleast_2d(artist.get_facecolor())[0]
                colours.setdefault(label, set()).add(to_hex(colour))
    return colours


def training_table():
    rows = []
    for a in ACTIVATIONS[::-1]:  # another order than the other tables
        for depth in (2, 4):
            for epoch in range(3):
                rows.append(
                    dict(
                        activation=a,
                        width=8,
                        depth=depth,
                        seed=0,
                        epoch=epoch,
                        train_loss=2.3 / (1 + epoch),
                        train_error=0.5,
                        test_error=0.6,
                    )
                )
    return pd.DataFrame(rows)


def max_depth_tables():
    depth = pd.DataFrame(dict(activation=ACTIVATIONS, width=8, max_trainable_depth=[30, 0, 10, 30]))
    runs = pd.DataFrame(
        [
            dict(activation=a, width=8, depth=d, seed=0, loss_ratio=0.5, diverged=False)
            for a in ACTIVATIONS
            for d in (10, 30, 60)
        ]
    )
    return depth, runs


def correlation_table():
    return pd.DataFrame(
        [
            dict(activation=a, layer=layer, seed=0, mean_abs_cos=0.5, random_baseline=0.07)
            for a in ["tanh", "abs", "relu", "tilted_relu"]
            for layer in range(1, 5)
        ]
    )


def test_every_normalization_figure_draws_an_activation_in_its_one_colour():
    depth, runs = max_depth_tables()
    figures = {
        "training": draw("training", {"trainability": training_table()}),
        "max_depth": draw("max_depth", {"max_depth": depth, "runs": runs}, loss_fraction=0.8),
        "correlations": draw("correlations", {"correlations": correlation_table()}),
    }
    for name, fig in figures.items():
        colours = line_colours(fig)
        assert set(colours) >= {"relu", "tilted_relu"}, name
        for activation, seen in colours.items():
            assert seen == {activation_colour(activation).lower()}, (name, activation, seen)


def test_activation_colours_are_distinct_and_stable():
    assert len(set(ACTIVATION_COLOURS.values())) == len(ACTIVATION_COLOURS)
    assert activation_colour("relu") == ACTIVATION_COLOURS["relu"]
    # an unlisted name gets the same spare colour every time
    assert activation_colour("norm_swish") == activation_colour("norm_swish")


def _lab(colour):
    """CIELAB coordinates of a colour (D65 white)."""
    rgb = np.array(to_rgb(colour))
    rgb = np.where(rgb <= 0.04045, rgb / 12.92, ((rgb + 0.055) / 1.055) ** 2.4)
    xyz = (
        np.array([[0.4124, 0.3576, 0.1805], [0.2126, 0.7152, 0.0722], [0.0193, 0.1192, 0.9505]])
        @ rgb
        / np.array([0.95047, 1.0, 1.08883])
    )
    f = np.where(xyz > (6 / 29) ** 3, np.cbrt(xyz), xyz / (3 * (6 / 29) ** 2) + 4 / 29)
    return np.array([116 * f[1] - 16, 500 * (f[0] - f[1]), 200 * (f[1] - f[2])])


@pytest.mark.parametrize(
    ("together", "apart"),
    [
        # the trainability runs' 12 (config/paper.yaml), then the coefficients' and isometry's
        (["relu", "tilted_relu", "abs", "tanh", "relu_bn", "normalized_tanh", "elu",
          "normalized_elu", "selu", "normalized_selu", "gelu", "normalized_gelu"], 30),
        (["relu", "abs", "tanh", "sigmoid", "softplus", "elu", "selu", "gelu", "silu"], 30),
        (["relu", "tilted_relu", "abs", "tanh", "relu_bn"], 50),  # the claims' five
    ],
)  # fmt: skip
def test_activations_one_figure_shows_together_never_share_a_hue(together, apart):
    for a, b in itertools.combinations(together, 2):
        distance = np.linalg.norm(_lab(activation_colour(a)) - _lab(activation_colour(b)))
        assert distance >= apart, (a, b, distance)
    # tilted_relu and relu_bn were vermillion and orange, 33 apart: the claims' five fail that
    assert np.linalg.norm(_lab("#D55E00") - _lab("#E69F00")) < 50


def test_a_zero_height_bar_gets_a_marker_and_a_label(tmp_path, drawn):
    depth, runs = max_depth_tables()
    fig = run_script(
        tmp_path,
        "plot.py",
        {"max_depth": depth, "runs": runs},
        {
            "figure": "max_depth",
            "module": "galu.normalization.figures",
            "draw": {"loss_fraction": 0.8, "paper_depths": {"relu": 30}},
            "seeds": None,
        },  # fmt: skip
        drawn,
    )
    # the sidecar records the seeds of the runs drawn and the drawing function
    assert drawn[-1][1] == [0]
    assert drawn[-1][2]["drawn_by"] == "galu.normalization.training_figures.draw_max_depth"
    bars = fig.axes[0]
    # tilted_relu's depth 0, only, and the paper's depth for relu
    assert [t.get_text() for t in bars.texts] == ["0", "paper: 30"]
    use_style()
    fig, ax = plt.subplots()
    ax.bar([0, 1, 2], [3, 0, np.nan])
    assert mark_zero_bars(ax, [0, 1, 2], [3, 0, np.nan], "C0") == 1


def test_legend_lists_only_visible_curves_and_sits_outside_the_axes():
    use_style()
    fig, ax = plt.subplots()
    ax.plot([1, 2], [1, 2], label="shown")
    ax.plot([1, 2], [50, 60], label="off the axes")
    ax.set_ylim(0, 3)
    legend = legend_outside(ax)
    assert [t.get_text() for t in legend.get_texts()] == ["shown"]
    fig.canvas.draw()
    box = legend.get_window_extent()
    assert box.x0 >= ax.get_window_extent().x1  # right of the data, not over it


@pytest.mark.parametrize("limits", [(0.3, 2.0), (1e-3, 1e3), (2.0, 9.0), (1.25, 3.3), (0.9, 1.1)])
def test_log_axes_carry_at_least_three_tick_labels(limits):
    use_style()
    fig, ax = plt.subplots()
    ax.plot([1, 2], limits)
    ax.set(yscale="log", ylim=limits)
    log_ticks(ax, "y")
    assert labelled_ticks(ax, "y") >= 3


def test_isometry_panels_have_y_labels_and_the_KS_distances_in_their_titles():
    rng = np.random.default_rng(0)
    summary, eigen = [], []
    for a in ("relu", "tanh"):
        for variant, ks in (("raw", 0.3), ("normalized", 0.01)):
            summary.append(
                dict(activation=a, variant=variant, n=50, seed=0, mp_variance=1.0, ks_distance=ks)
            )
            for value in rng.uniform(0, 4, 50):
                eigen.append(dict(activation=a, variant=variant, seed=0, eigenvalue=value))
    tables = {"isometry": pd.DataFrame(summary), "eigenvalues": pd.DataFrame(eigen)}
    fig = draw("isometry", tables, bins=12)
    panels = [ax for ax in fig.axes if ax.get_title()]
    assert len(panels) == 2
    for ax in panels:
        assert ax.get_ylabel() == "density"
        assert "raw KS 0.300" in ax.get_title() and "normalized KS 0.010" in ax.get_title()
        assert ax.get_legend() is None  # one figure legend instead, below the panels


def test_jacobian_figure_states_the_fraction_of_zeros_instead_of_a_hidden_floor():
    values = np.r_[np.zeros(6), np.geomspace(1e-3, 10, 4)]
    rows = [
        dict(activation="relu", width=8, depth=3, seed=0, squared_singular_value=v) for v in values
    ]
    rows += [
        dict(activation="tilted_relu", width=8, depth=3, seed=0, squared_singular_value=1.0)
        for _ in values
    ]
    fig = draw("jacobian", {"jacobian": pd.DataFrame(rows)})
    relu = fig.axes[0]
    labels = [t.get_text() for t in relu.get_legend().get_texts()]
    assert labels == ["depth 3: 60 % < 1e-12, not drawn"]
    step = relu.get_lines()[0]
    assert step.get_xdata().min() == pytest.approx(1e-3)  # nothing drawn at a floor
    assert step.get_ydata()[0] == pytest.approx(0.7)  # starts above the 60 % of zeros
    tilted = [t.get_text() for t in fig.axes[1].get_legend().get_texts()]
    assert tilted == ["depth 3"]


def test_reference_lines_in_axes_coordinates_stay_in_the_legend():
    use_style()
    fig, ax = plt.subplots()
    ax.plot([256, 1024], [1.0, 2.0], label="data")
    ax.axhline(1.0, ls=":", label="k = m / d")  # x in axes coordinates (0..1)
    ax.axvline(5000.0, label="beyond the x range")
    ax.set(xscale="log", xlim=(200, 1200))
    legend = legend_outside(ax)
    assert [t.get_text() for t in legend.get_texts()] == ["data", "k = m / d"]


def test_the_schedules_figure_gives_each_paper_scale_curve_its_own_colour():
    """The paper scale compares 7 constant learning rates and 2 greedy schedules per setting:
    more curves than the style's cycle has colours (this crashed the paper-scale smoke run)."""
    from galu.plotting import distinct_colours
    from galu.scm.figures import draw_schedules

    etas = [0.25, 0.5, 0.625, 0.75, 0.875, 1.0, 1.25]
    curves = [("constant", e) for e in etas] + [("greedy", np.nan), ("greedy_floor", np.nan)]
    alpha = np.array([0.1, 1.0, 10.0])
    runs = pd.concat(
        pd.DataFrame(
            {
                "setting": "relu_k2m2",
                "schedule": s,
                "constant_eta": e,
                "source": "ode",
                "alpha": alpha,
                "eps_g": 0.1 / alpha,
                "eta": 0.5,
            }
        )  # fmt: skip
        for s, e in curves
    )
    summary = pd.DataFrame({"setting": ["relu_k2m2"], "best_constant_eta": [0.5],
                            "eps_target": [1e-3], "eps_exit": [0.02]})  # fmt: skip
    fig = draw_schedules({"schedules": summary, "schedule_runs": runs}, scale="paper")
    drawn = [line.get_color() for line in fig.axes[1].get_lines()]
    assert len(drawn) == 9 and len(set(drawn)) == 9
    assert len(set(distinct_colours(15))) == 15
    with pytest.raises(ValueError, match="distinct colours"):
        distinct_colours(100)


def test_the_scm_and_generalization_plot_scripts_record_the_drawing_function_and_seeds(
    tmp_path, drawn
):
    """One plot script per stage dispatches through its DRAW table; tables of seed means
    (the schedules') take their seeds from the rule, others from their seed column."""
    runs = pd.DataFrame({"setting": "relu_k2m2", "schedule": "constant", "constant_eta": 0.5,
                         "source": "ode", "alpha": [1.0, 10.0], "eps_g": [0.1, 0.01],
                         "eta": 0.5})  # fmt: skip
    summary = pd.DataFrame({"setting": ["relu_k2m2"], "best_constant_eta": [0.5],
                            "eps_target": [1e-3], "eps_exit": [0.02]})  # fmt: skip
    run_script(
        tmp_path,
        "plot.py",
        {"schedules": summary, "schedule_runs": runs},
        {"figure": "schedules", "module": "galu.scm.figures", "draw": {}, "seeds": [3, 4]},
        drawn,
    )
    assert drawn[-1][1] == [3, 4]
    assert drawn[-1][2]["drawn_by"] == "galu.scm.figures.draw_schedules"
    rows = pd.DataFrame({"model": "relu", "seed": [0, 2], "n_train": [10, 100],
                         "test_error": [0.3, 0.1]})  # fmt: skip
    params = {"figure": "linear", "module": "galu.generalization.figures", "draw": {},
              "seeds": None}  # fmt: skip
    fig = run_script(tmp_path, "plot.py", {"linear": rows}, params, drawn)
    assert drawn[-1][1] == [0, 2]
    assert drawn[-1][2]["drawn_by"] == "galu.generalization.figures.draw_linear"
    assert fig._suptitle.get_text().endswith("Linearly separable data (quick scale)")
