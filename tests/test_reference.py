"""The GaLU authors' published numbers (workflow/reference/): the tables hold the source
files' values, their provenance matches their bytes, the reductions give the paper's figure
points, the figures draw them beside ours and the claims table carries them."""

from __future__ import annotations

import hashlib

import numpy as np
import pandas as pd
import pytest
import yaml

from galu.generalization.figures import draw_images
from galu.generalization.sentences import SENTENCES as GEN_SENTENCES
from galu.generalization.stage import STAGE as GEN_STAGE
from galu.memorization.figures import draw_min_width
from galu.memorization.sentences import min_width_against_authors
from galu.memorization.stage import STAGE as MEM_STAGE
from galu.plotting import plt
from galu.reference import (
    AUTHORS_IMAGES,
    AUTHORS_LABEL,
    AUTHORS_MIN_WIDTH,
    authors_min_width,
    authors_test_selected,
)
from galu.workflow.claim_spec import parse_claims
from galu.workflow.claims import evaluate
from galu.workflow.claims_text import markdown_table
from galu.workflow.settings.config import load_yaml
from galu.workflow.settings.runconfig import run_config

from conftest import REPO

PROVENANCE = REPO / "workflow/reference/galu_authors.yaml"
# plots/minimal_k.tex at the recorded commit: the paper's points (out_dim -> minimal k).
TEX_MIN_K = {
    "relu": [16, 93, 160, 232, 317, 370, 406],
    "galu": [22, 102, 160, 226, 308, 356, 390],
}
TEX_OUT_DIMS = [1, 8, 16, 32, 64, 96, 128]
# plots/datasets.tex: 1 - test accuracy at k = 16, 32, ..., 96.
TEX_IMAGES = {
    ("mnist", "relu"): [0.0408, 0.0353, 0.0324, 0.0267, 0.0238, 0.0218],
    ("mnist", "galu0"): [0.0567, 0.0421, 0.0351, 0.0322, 0.0308, 0.0281],
    ("mnist", "linear"): [0.0828, 0.083, 0.083, 0.0832, 0.0834, 0.0834],
    ("fashion_mnist", "relu"): [0.139, 0.13, 0.129, 0.128, 0.126, 0.127],
    ("fashion_mnist", "galu0"): [0.149, 0.136, 0.13, 0.128, 0.123, 0.123],
}


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    plt.close("all")


def _probes() -> pd.DataFrame:
    return pd.read_csv(REPO / AUTHORS_MIN_WIDTH)


def _images() -> pd.DataFrame:
    return pd.read_csv(REPO / AUTHORS_IMAGES)


def test_each_table_matches_the_sha256_its_provenance_records():
    record = yaml.safe_load(PROVENANCE.read_text())
    assert record["repository"] == "https://github.com/keyboardAnt/Decoupling-Gating-From-Linearity"
    assert len(record["commit"]) == 40
    assert set(record["tables"]) == {"galu_authors_minimal_k.csv", "galu_authors_images.csv"}
    for name, entry in record["tables"].items():
        data = (PROVENANCE.parent / name).read_bytes()
        assert hashlib.sha256(data).hexdigest() == entry["sha256"], name
        assert len(entry["source_sha256"]) == 64 and entry["source_url"].endswith(
            f"{record['commit']}/{entry['source_path']}"
        )
        # every column of the table is described
        assert list(pd.read_csv(PROVENANCE.parent / name).columns) == list(entry["columns"])


def test_the_tables_hold_the_source_files_records():
    probes = _probes()
    # results/minimal_k.txt: 7 out_dims x 2 networks x 9 bisection probes
    assert len(probes) == 126
    assert set(probes[["m", "d", "lr", "layers"]].itertuples(index=False)) == {(1024, 32, 1e-3, 1)}
    one = probes[(probes["model"] == "relu") & (probes["out_dim"] == 16)]
    # "network_type=relu, T=1, m=1024, d=32, k=152, d_=16, ..." -> "loss=3.00e-01"
    assert one.set_index("width")["train_mse"][152] == 0.3
    assert one.set_index("width")["train_mse"][148] == 0.312
    galu = probes[(probes["authors_model"] == "galu0") & (probes["out_dim"] == 1)]
    assert galu["width"].tolist() == [256, 128, 64, 32, 16, 24, 20, 22, 21]
    assert galu.set_index("width")["train_mse"][22] == 0.291
    images = _images()
    # results/datasets.txt: 2 datasets x 6 widths x (3 + 18 + 3) settings
    assert len(images) == 288
    row = images[
        (images["dataset"] == "fashion_mnist")
        & (images["authors_model"] == "galu0s")
        & (images["width"] == 96)
        & (images["gate_scale"] == 10.0)
        & (images["lr"] == 1e-4)
    ]
    assert len(row) == 1
    assert images.loc[(images["dataset"] == "mnist") & (images["model"] == "relu")].iloc[0][
        ["width", "lr", "train_loss", "train_error", "test_loss", "test_error"]
    ].tolist() == [16, 1e-3, 0.094, 0.0289, 0.136, 0.0408]
    assert images.loc[images["model"] != "galu0", "gate_scale"].isna().all()


def test_the_reductions_give_the_papers_figure_points():
    found = authors_min_width(_probes(), 0.3)
    for model, widths in TEX_MIN_K.items():
        one = found[found["model"] == model]
        assert one["out_dim"].tolist() == TEX_OUT_DIMS
        assert one["min_width"].tolist() == widths
    np.testing.assert_allclose(found["kd_over_m"], found["min_width"] * 32 / 1024)
    # a stricter threshold needs wider networks
    assert (authors_min_width(_probes(), 0.25)["min_width"].to_numpy() >= 0).all()
    strict = authors_min_width(_probes(), 0.25).set_index(["model", "out_dim"])["min_width"]
    assert strict[("relu", 1)] == 32 and strict[("galu", 128)] == 448
    for (dataset, model), errors in TEX_IMAGES.items():
        best = authors_test_selected(_images(), dataset)
        one = best[best["model"] == model]
        assert one["width"].tolist() == [16, 32, 48, 64, 80, 96]
        np.testing.assert_allclose(one["test_error"], errors)


def _ours_min_width(m: int, d: int) -> pd.DataFrame:
    return pd.DataFrame(
        {
            "model": ["relu", "galu"] * 2,
            "m": [m] * 4,
            "d": [d] * 4,
            "out_dim": [1, 1, 8, 8],
            "seed": [0] * 4,
            "min_width": [20, 24, 90, 100],
            "found": [True] * 4,
            "search_hi": [512] * 4,
            "mse_threshold": [0.3] * 4,
        }
    )


def _labelled(ax) -> dict[str, tuple[list[float], list[float]]]:
    return {
        ln.get_label(): (list(ln.get_xdata()), list(ln.get_ydata()))
        for ln in ax.get_lines()
        if not ln.get_label().startswith("_")
    }


def test_min_width_draws_the_authors_points_on_our_axes_where_m_and_d_match():
    fig = draw_min_width({"min_width_mse": _ours_min_width(1024, 32), "authors": _probes()},
                         scale="paper")  # fmt: skip
    assert len(fig.axes) == 1
    lines = _labelled(fig.axes[0])
    assert lines[f"{AUTHORS_LABEL}: GaLU"] == (TEX_OUT_DIMS, TEX_MIN_K["galu"])
    assert lines[f"{AUTHORS_LABEL}: ReLU"] == (TEX_OUT_DIMS, TEX_MIN_K["relu"])
    assert lines["ReLU (trained)"] == ([1, 8], [20, 90])


def test_min_width_puts_the_authors_points_in_their_own_panel_where_m_and_d_differ():
    fig = draw_min_width({"min_width_mse": _ours_min_width(256, 16), "authors": _probes()},
                         scale="quick")  # fmt: skip
    ours, theirs = fig.axes[0], fig.axes[1]
    assert not any(AUTHORS_LABEL in label for label in _labelled(ours))
    assert _labelled(theirs)[f"{AUTHORS_LABEL}: ReLU"] == (TEX_OUT_DIMS, TEX_MIN_K["relu"])
    assert "m = 1024, d = 32" in theirs.get_title()
    # their own counting line: m out_dim / (d + out_dim) at m = 1024, d = 32
    dashed = [ln for ln in theirs.get_lines() if ln.get_linestyle() == "--"][0]
    x, y = np.asarray(dashed.get_xdata()), np.asarray(dashed.get_ydata())
    np.testing.assert_allclose(y, 1024 * x / (32 + x))
    # without the reference table: one panel, as before
    assert len(draw_min_width({"min_width_mse": _ours_min_width(256, 16)}, scale="q").axes) == 1


def _ours_images() -> pd.DataFrame:
    return pd.DataFrame(
        {
            "model": ["relu", "galu0", "linear"],
            "width": [16, 16, 0],
            "seed": [0, 0, 0],
            "test_error": [0.05, 0.06, 0.1],
            "test_error_test_selected": [0.045, 0.055, 0.1],
        }
    )


def test_the_image_figures_draw_the_authors_test_selected_errors_at_their_depth():
    tables = {"mnist": _ours_images(), "authors": _images()}
    lines = _labelled(draw_images(tables, scale="quick", dataset="mnist", depth=2).axes[0])
    x, y = lines[f"{AUTHORS_LABEL}: GaLU0, test-selected"]
    assert x == [16, 32, 48, 64, 80, 96]
    np.testing.assert_allclose(y, TEX_IMAGES[("mnist", "galu0")])
    np.testing.assert_allclose(lines[f"{AUTHORS_LABEL}: ReLU, test-selected"][1],
                               TEX_IMAGES[("mnist", "relu")])  # fmt: skip
    deeper = _labelled(draw_images(tables, scale="quick", dataset="mnist", depth=3).axes[0])
    assert not any(AUTHORS_LABEL in label for label in deeper)


def test_the_figures_declare_the_reference_tables_as_inputs():
    config = run_config(REPO)
    mem = {f.name: f for f in MEM_STAGE.figures(config)}
    assert dict(mem["min_width"].references) == {"authors": AUTHORS_MIN_WIDTH}
    assert not mem["zero_error"].references and not mem["underparam"].references
    gen = {f.name: f for f in GEN_STAGE.figures(config)}
    assert dict(gen["mnist"].references) == {"authors": AUTHORS_IMAGES}
    assert dict(gen["fashion_mnist"].references) == {"authors": AUTHORS_IMAGES}
    assert not gen["clusters"].references
    for path in (AUTHORS_MIN_WIDTH, AUTHORS_IMAGES):
        assert (REPO / path).is_file()


def test_the_captions_compare_their_numbers_with_ours():
    ours = _ours_min_width(256, 16).assign(criterion="mse")
    lines = min_width_against_authors(
        {"results/memorization/min_width.csv": ours, AUTHORS_MIN_WIDTH: _probes()}
    )
    assert "relu 16, 93, 160, 232, 317, 370, 406" in lines[0]
    assert "panel of their own" in lines[0]
    # GaLU / ReLU: theirs 308/317 = 0.972 ... 22/16 = 1.375; ours 100/90 = 1.11 to 24/20 = 1.2
    assert "theirs 0.961 to 1.38, ours 1.11 to 1.2" in lines[1]
    accuracy = _ours_images().assign(dataset="mnist")
    sources, describe = GEN_SENTENCES["figures/generalization/mnist.png"]
    text = " ".join(describe({sources[0]: accuracy, sources[1]: _images()}))
    assert "ReLU 0.0408 / 0.045; GaLU0 0.0567 / 0.055" in text
    assert "theirs 0.0159, ours 0.01" in text


def test_the_claims_table_carries_what_the_paper_says(tmp_path):
    claims = parse_claims(load_yaml(REPO / "workflow/claims.yaml"), "quick")
    table = evaluate(claims, tmp_path, "quick")
    says = table.set_index("claim_id")["paper_says"]
    filled = {c for c, text in says.items() if text}
    authors = {
        "gen_galu0_close_to_relu_mnist",
        "gen_galu0_close_to_relu_fashion",
        "gen_relu_slightly_ahead_mnist",
        "mem_min_width_galu_about_relu",
        "mem_min_width_grows_with_out_dim",
        "mem_min_width_grows_sublinearly",
    }
    # Where the paper's text states the number, it is the claim's expected value.
    stated = {
        "scm_perceptron_eta_c",
        "scm_k2m2_plateau_R",
        "scm_k2m2_plateau_one_unstable_direction",
        "scm_k2m2_plateau_count_positive",
        "norm_relu_trains_to_about_30_layers",
        "norm_tilted_relu_trains_to_60_layers",
    }
    assert filled == authors | stated
    expected = table.set_index("claim_id")["expected"]
    for claim in stated:
        number = says[claim].removeprefix("about ").split()[0].rstrip(",")
        assert float(number) == expected[claim], claim
    # the numbers are the reference tables' reductions
    best = authors_test_selected(_images(), "mnist").pivot(
        index="width", columns="model", values="test_error"
    )
    gap = (best["galu0"] - best["relu"]).mean()
    assert says["gen_galu0_close_to_relu_mnist"].startswith(f"{gap:.2g} (authors' results")
    found = authors_min_width(_probes(), 0.3).pivot(
        index="out_dim", columns="model", values="min_width"
    )
    assert says["mem_min_width_galu_about_relu"].startswith(
        f"{(found['galu'] / found['relu'] - 1).abs().max():.2f} "
    )
    growth = found.loc[64] / found.loc[1]
    assert says["mem_min_width_grows_with_out_dim"].startswith(f"{growth.min():.1f} ")
    assert says["mem_min_width_grows_sublinearly"].startswith(f"{growth.max():.1f} ")
    text = markdown_table(table)
    assert "| paper says |" in text
    assert f"| {says['mem_min_width_grows_sublinearly']} |" in text
