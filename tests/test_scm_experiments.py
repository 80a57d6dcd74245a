"""The SCM stage's tables: contracted columns (docs/design.md), values and the stability rows."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from galu.scm.experiments import (
    combine,
    ode_table,
    pack_many,
    perceptron_stability,
    simulation_table,
    symmetrize,
)
from galu.scm.odes import pack

ODE = {"method": "LSODA", "rtol": 1e-8, "atol": 1e-10, "points": 30, "alpha_min": 0.1}
SIM = {"N": 100, "seeds": 2, "n_test": 200, "points": 5, "block": 64, "dtype": "float64"}
K2M3 = {
    "activation": "relu",
    "etas": [0.5],
    "forms": ["small_eta", "exact"],
    "R0": [[0.001, 0.0, 0.0], [0.0, 0.0, 0.0]],
    "Q0": [[0.2, 0.0], [0.0, 0.2]],
    "alpha_max": 20.0,
    "sim_etas": [0.5],
    "sim_alpha_max": 2.0,
}
CONTRACT = ["setting", "activation", "K", "M", "eta", "source", "eta2_term", "N", "seed"]


def test_tables_follow_the_trajectories_contract() -> None:
    ode = ode_table("relu_k2m3", K2M3, ODE)
    sim = simulation_table("relu_k2m3", K2M3, SIM, seed=4, device="cpu")
    table = combine([ode, sim])
    assert list(table.columns[:9]) == CONTRACT
    assert list(table.columns[9:12]) == ["alpha", "eps_g", "eps_g_measured"]
    assert list(table.columns[12:18]) == ["R_1_1", "R_1_2", "R_1_3", "R_2_1", "R_2_2", "R_2_3"]
    assert list(table.columns[18:]) == ["Q_1_1", "Q_1_2", "Q_2_2"]
    assert len(ode) == 2 * 30 and set(ode["eta2_term"]) == {True, False}
    assert ode["N"].isna().all() and ode["seed"].isna().all()
    assert sorted(sim["seed"].unique()) == [4, 5] and (sim["N"] == 100).all()
    assert sim["eta2_term"].isna().all()
    first = ode[ode["alpha"] == 0].iloc[0]
    assert first["R_1_1"] == pytest.approx(0.001) and first["Q_2_2"] == pytest.approx(0.2)
    assert (table["eps_g"] >= 0).all() and np.all(np.diff(ode["alpha"].to_numpy()[:30]) > 0)


def test_mismatched_start_is_rejected() -> None:
    bad = dict(K2M3, Q0=[[0.2, 0.0, 0.0], [0.0, 0.2, 0.0], [0.0, 0.0, 0.2]])
    with pytest.raises(ValueError, match="R0 must be K x M and Q0 K x K"):
        ode_table("relu_k2m3", bad, ODE)
    with pytest.raises(ValueError, match="forms must be among"):
        ode_table("relu_k2m3", dict(K2M3, forms=["euler"]), ODE)


def test_perceptron_stability_rows() -> None:
    table = perceptron_stability(np.array([0.5, 2.5]))
    assert list(table.columns[:5]) == [
        "setting", "eta", "fixed_point", "eigenvalue_real", "eigenvalue_imag",
    ]  # fmt: skip
    values = table.pivot(index="eta", columns="index", values="eigenvalue_real")
    np.testing.assert_allclose(values.loc[0.5], [-0.25, -0.375], atol=1e-6)
    np.testing.assert_allclose(values.loc[2.5], [0.625, -1.25], atol=1e-6)
    assert (table["fixed_point"] == "R=Q=1").all() and (table["eigenvalue_imag"] == 0).all()


def test_symmetrize_and_pack_many() -> None:
    R = np.array([[0.5, 0.3], [0.2, 0.6]])
    Q = np.array([[0.7, 0.1], [0.1, 0.9]])
    np.testing.assert_allclose(symmetrize(pack(R, Q), 2, 2), [0.4] * 4 + [0.8, 0.1, 0.8])
    stacked = pack_many(np.stack([R, 2 * R]), np.stack([Q, 2 * Q]))
    np.testing.assert_array_equal(stacked, [pack(R, Q), pack(2 * R, 2 * Q)])
    assert isinstance(combine([pd.DataFrame(), ode_table("x", K2M3, ODE)]), pd.DataFrame)
