"""The result tables' column contracts (workflow/schemas/tables/): each DESIGN contract is
there, a table that breaks one is refused with every problem named, before it is written."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from galu.provenance import Run
from galu.tables import CONTRACTS_DIR, TableContractError, check_table, contract_for, contracts

from conftest import REPO

FOLDER = REPO / CONTRACTS_DIR

# The required columns of DESIGN.md's contracts table: the repository's files must keep them.
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


def test_every_design_contract_is_a_file_with_its_columns():
    found = {c.path: c for c in contracts(FOLDER)}
    assert set(found) == set(DESIGN)
    for path, columns in DESIGN.items():
        assert list(found[path].columns)[: len(columns)] == columns, path


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
