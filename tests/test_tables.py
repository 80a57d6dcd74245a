"""The result tables' column contracts (workflow/schemas/tables/): each core contract of
docs/design.md and each other table a claim reads is there, a table that breaks one is
refused with every problem named, before it is written."""

from __future__ import annotations

import json
import math

import pandas as pd
import pytest
import torch

from galu.normalization.ablation import ablation_curves, ablation_table
from galu.normalization.cifar import TensorData
from galu.normalization.correlation import layer_correlations
from galu.normalization.isometry import isometry_tables
from galu.normalization.mean_field import depth_scale_table
from galu.normalization.mlp import build_mlp
from galu.normalization.spectra import jacobian_table
from galu.normalization.trainability import (
    max_depth_by_fraction,
    max_trainable_depth,
    run_outcomes,
)
from galu.workflow.output import Run
from galu.workflow.settings.config import load_yaml
from galu.workflow.settings.runconfig import run_config
from galu.workflow.stages import STAGE_NAMES, stages
from galu.workflow.tables import (
    CONTRACTS_DIR,
    TableContractError,
    check_table,
    contract_for,
    contracts,
)

from conftest import REPO

FOLDER = REPO / CONTRACTS_DIR

# The required columns of docs/design.md's contracts table: the repository's files must keep them.
DESIGN = {
    "memorization/underparam.csv": ["model", "m", "d", "k", "seed", "kd_over_m", "train_loss"],
    "memorization/min_width.csv": ["model", "m", "d", "out_dim", "seed", "criterion",
                                   "min_width", "kd_over_m"],
    "generalization/accuracy.csv": ["dataset", "model", "width", "seed", "n_train",
                                    "train_error", "test_error"],
    "scm/trajectories.csv": ["setting", "activation", "K", "M", "eta", "source", "eta2_term",
                             "N", "seed", "alpha", "eps_g"],
    "scm/stability.csv": ["setting", "eta", "fixed_point", "eigenvalue_real",
                          "eigenvalue_imag"],
    "normalization/coefficients.csv": ["activation", "alpha", "beta", "gamma"],
    "normalization/trainability.csv": ["activation", "width", "depth", "seed", "epoch",
                                       "train_loss", "train_error", "test_error"],
    "normalization/spectra.csv": ["activation", "depth", "layer", "stage", "index",
                                  "eigenvalue"],
    "claims.csv": ["claim_id", "paper", "statement", "expected", "measured", "tolerance",
                   "verdict"],
}  # fmt: skip
# The other tables the claims read (workflow/claims.yaml), with the columns the code writes.
READ_BY_CLAIMS = {
    "scm/schedules.csv": ["setting", "schedule", "source", "constant_eta", "alpha_exit",
                          "alpha_target", "eps_exit", "eps_target", "final_eps_g",
                          "best_constant_eta", "is_best_constant", "gain_exit", "gain_target"],
    "normalization/isometry.csv": ["activation", "variant", "n", "seed", "mp_variance",
                                   "ks_distance", "eigenvalue_mean", "eigenvalue_max",
                                   "mp_upper_edge"],
    "normalization/max_depth.csv": ["activation", "width", "max_trainable_depth",
                                    "depths_tested", "depths_trained", "loss_fraction"],
    "normalization/depth_scales.csv": ["activation", "gain", "q_star", "c_star", "chi_1",
                                       "chi_c", "xi_c"],
    "normalization/max_depth_by_fraction.csv": ["activation", "width", "max_trainable_depth",
                                                "depths_tested", "depths_trained",
                                                "loss_fraction"],
    "normalization/trainability_runs.csv": ["activation", "width", "depth", "seed",
                                            "epochs_run", "diverged", "initial_loss",
                                            "best_loss", "loss_ratio", "final_test_error",
                                            "trains"],
    "normalization/correlations.csv": ["activation", "width", "depth", "seed", "layer",
                                       "mean_abs_cos", "samples", "random_baseline"],
    "normalization/jacobian.csv": ["activation", "width", "depth", "seed", "sample", "index",
                                   "squared_singular_value"],
    "normalization/ablation.csv": ["activation", "width", "depth", "seed", "optimizer", "lr",
                                   "gain_factor", "gain", "epochs_run", "diverged",
                                   "initial_loss", "best_loss", "loss_ratio",
                                   "final_test_error", "trains", "loss_fraction"],
}  # fmt: skip


def test_every_contract_is_a_file_with_its_columns():
    found = {c.path: c for c in contracts(FOLDER)}
    assert set(DESIGN) | set(READ_BY_CLAIMS) <= set(found)
    # each other contract is a declared stage's table (workflow/schemas/tables/<stage>_<table>
    # .yaml for results/<stage>/<table>.csv), read by a claim or by a figure
    read = claim_sources() | {t.path for s in stages() for f in s.figures(run_config(REPO))
                              for t in f.tables.values()}  # fmt: skip
    for path, contract in found.items():
        assert contract.source.name == path.removesuffix(".csv").replace("/", "_") + ".yaml"
        if path not in DESIGN and path not in READ_BY_CLAIMS:
            assert path.split("/")[0] in STAGE_NAMES and f"results/{path}" in read, path
    for path, columns in DESIGN.items():
        assert list(found[path].columns)[: len(columns)] == columns, path
    for path, columns in READ_BY_CLAIMS.items():
        assert list(found[path].columns) == columns, path


def claim_sources() -> set[str]:
    """The tables the claims read (workflow/claims.yaml), their findings' values included."""
    claims = load_yaml(REPO / "workflow/claims.yaml")
    return {c["source"] for c in claims} | {
        v["source"] for c in claims for v in c.get("finding_values", {}).values()
    }


def test_every_table_a_claim_reads_has_a_contract():
    sources = claim_sources()
    assert sources and not [s for s in sources if contract_for(s, FOLDER) is None]


def test_the_normalization_tables_as_made_keep_their_contracts():
    summary, _ = isometry_tables(["relu", "tanh"], 20, [0, 1])
    check_table(summary, "results/normalization/isometry.csv", FOLDER)
    curves = pd.DataFrame(
        {"activation": "relu", "width": 8, "depth": [3] * 3 + [6] * 3, "seed": 0,
         "epoch": [0, 1, 2] * 2, "train_loss": [2.3, 1.0, 0.5, 2.3, None, None],
         "train_error": 0.5, "test_error": [0.6, 0.5, 0.4, 0.9, None, None],
         "diverged": [False] * 3 + [False, True, True]}
    )  # fmt: skip
    runs = run_outcomes(curves, 0.5)
    check_table(runs, "results/normalization/trainability_runs.csv", FOLDER)
    check_table(max_trainable_depth(runs, 0.5), "results/normalization/max_depth.csv", FOLDER)
    scales = depth_scale_table(["relu", "tanh", "relu_bn"])
    check_table(scales, "results/normalization/depth_scales.csv", FOLDER)
    by_fraction = max_depth_by_fraction(curves)
    check_table(by_fraction, "results/normalization/max_depth_by_fraction.csv", FOLDER)
    model = build_mlp("relu", 3, 6, seed=0, input_dim=12)
    x = torch.randn(4, 12, generator=torch.Generator().manual_seed(0))
    labels = {"activation": "relu", "width": 6, "depth": 3, "seed": 0}
    check_table(jacobian_table(model, x[:2], labels), "results/normalization/jacobian.csv", FOLDER)
    table = layer_correlations(model, x).assign(**labels, samples=4, random_baseline=0.3)
    check_table(table, "results/normalization/correlations.csv", FOLDER)
    data = TensorData(x, torch.arange(4) % 2, x, torch.arange(4) % 2)
    ablation = ablation_curves("tilted_relu", data, 2, 6, {"sgd": [0.01], "adam": [0.001]},
                               [1.0, 1.25], epochs=1, seed=0, batch_size=2)  # fmt: skip
    check_table(ablation_table(ablation, 0.5), "results/normalization/ablation.csv", FOLDER)


def test_a_schedule_that_never_reaches_its_target_keeps_the_contract():
    row = {"setting": "s", "source": "ode", "alpha_target": 3.0, "eps_exit": 0.01,
           "eps_target": 0.001, "final_eps_g": 0.1, "best_constant_eta": 1.0}  # fmt: skip
    table = pd.DataFrame(
        [{**row, "schedule": "constant", "constant_eta": 1.0, "alpha_exit": 2.0},
         {**row, "schedule": "greedy", "constant_eta": None, "alpha_exit": math.inf}]
    )  # fmt: skip
    table["is_best_constant"] = table["schedule"] == "constant"
    table["gain_exit"] = 1.0 - table["alpha_exit"] / 2.0
    table["gain_target"] = float("nan")
    check_table(table, "results/scm/schedules.csv", FOLDER)


@pytest.mark.parametrize(
    "path",
    ["results/memorization/underparam.csv", "results/paper-cpu/memorization/underparam.csv",
     "memorization/underparam.csv"],
)  # fmt: skip
def test_a_contract_matches_its_table_under_any_scale_root(path):
    assert contract_for(path, FOLDER).path == "memorization/underparam.csv"


def test_unrelated_tables_have_no_contract():
    assert contract_for("results/memorization/runs/underparam_x.csv", FOLDER) is None
    assert contract_for("results/memorization/underparam.csv.bak", FOLDER) is None


def _underparam(**changes) -> pd.DataFrame:
    rows = {"model": ["relu", "galu"], "m": [256, 256], "d": [8, 8], "k": [8, 8],
            "seed": [0, 0], "kd_over_m": [0.25, 0.25], "train_loss": [0.1, 0.2]}  # fmt: skip
    rows.update(changes)
    return pd.DataFrame(rows)


def test_a_valid_table_passes():
    check_table(_underparam(), "results/memorization/underparam.csv", FOLDER)


@pytest.mark.parametrize(
    ("changes", "drop", "message"),
    [
        ({}, "train_loss", "missing column(s) train_loss"),
        ({"train_loss": [0.1, -0.5]}, None, "column train_loss has -0.5 < 0"),
        ({"m": [256.5, 256]}, None, "column m not integer: 256.5"),
        ({"m": ["many", 256]}, None, "column m not integer: 'many'"),
        ({"model": ["relu", 3]}, None, "column model not string: 3"),
        ({"kd_over_m": [0.25, None]}, None, "column kd_over_m has 1 empty value(s)"),
        ({"model": ["relu", "relu"]}, None, "1 row(s) repeat a key (model, m, d, k, seed)"),
    ],
)
def test_each_kind_of_break_is_named(changes, drop, message):
    df = _underparam(**changes)
    if drop:
        df = df.drop(columns=drop)
    with pytest.raises(TableContractError, match="breaks its contract") as caught:
        check_table(df, "results/memorization/underparam.csv", FOLDER)
    assert message in str(caught.value)


def test_allowed_values_and_nullable_columns():
    path = "results/normalization/spectra.csv"
    row = {"activation": ["relu"], "depth": [3], "layer": [1], "index": [0], "eigenvalue": [1.0]}
    check_table(pd.DataFrame({**row, "stage": ["init"]}), path, FOLDER)
    with pytest.raises(TableContractError, match=r"stage has \['final'\], allowed"):
        check_table(pd.DataFrame({**row, "stage": ["final"]}), path, FOLDER)
    # empty seeds are allowed where the contract says so (ODE rows of the SCM trajectories)
    contract = contract_for("results/scm/trajectories.csv", FOLDER)
    assert contract.columns["seed"]["nullable"] and not contract.columns["alpha"].get("nullable")


def test_write_csv_refuses_a_broken_table_and_keeps_the_previous_output(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "workflow/schemas").mkdir(parents=True)
    (tmp_path / CONTRACTS_DIR).symlink_to(FOLDER)
    out = tmp_path / "results/memorization/underparam.csv"
    run = Run("t", params={})
    run.write_csv(_underparam(), out)
    before = out.read_bytes(), (tmp_path / f"{out}.meta.json").read_bytes()
    with pytest.raises(TableContractError, match="train_loss has -1.0 < 0"):
        run.write_csv(_underparam(train_loss=[0.1, -1.0]), out)
    assert (out.read_bytes(), (tmp_path / f"{out}.meta.json").read_bytes()) == before
    assert json.loads(before[1])["output"]["path"].endswith("underparam.csv")
