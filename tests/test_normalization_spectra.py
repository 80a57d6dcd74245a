"""Layer and Jacobian spectra (arXiv 1905.01369, Fig. 6; dynamical isometry)."""

import subprocess
import sys

import numpy as np
import pytest
import torch

from galu.normalization.mlp import build_mlp, default_gain
from galu.normalization.spectra import (
    jacobian_squared_singular_values,
    jacobian_table,
    spectra_table,
    weight_spectra,
)

from conftest import REPO

pytestmark = pytest.mark.usefixtures("one_torch_thread")  # see conftest

X = torch.randn(6, 3072, generator=torch.Generator().manual_seed(12345))


@pytest.mark.parametrize("activation", ["tilted_relu", "abs"])
def test_tilted_relu_and_abs_jacobians_are_exactly_orthogonal_at_init(activation):
    sv2 = jacobian_squared_singular_values(build_mlp(activation, 20, 32, seed=1), X)
    assert sv2.shape == (6, 32)
    np.testing.assert_allclose(sv2, 1.0, atol=1e-4)


def test_relu_jacobian_is_not_isometric():
    sv2 = jacobian_squared_singular_values(build_mlp("relu", 20, 32, seed=1), X)
    assert sv2.max() > 5.0 and sv2.min() < 0.05  # He gain keeps the mean, not the spread
    assert np.all(np.diff(sv2, axis=1) <= 1e-9)  # index 0 is the largest


def test_jacobian_matches_the_hand_computed_product():
    model = build_mlp("tanh", 3, 8, seed=2).double()
    x = X[:2].double()
    h1 = model.linears[0](x)
    h2 = model.linears[1](torch.tanh(h1))
    # d h3 / d h1 = W2 diag(tanh'(h2)) W1 diag(tanh'(h1))
    w1, w2 = model.linears[1].weight, model.linears[2].weight
    for i in range(2):
        jac = (
            w2
            @ torch.diag(1 - torch.tanh(h2[i]) ** 2)
            @ w1
            @ torch.diag(1 - torch.tanh(h1[i]) ** 2)
        )
        expected = torch.linalg.svdvals(jac).square().detach().numpy()
        got = jacobian_squared_singular_values(model, x)[i]
        np.testing.assert_allclose(got, expected, rtol=1e-10)


def test_jacobian_with_batch_norm_uses_running_statistics():
    model = build_mlp("relu_bn", 4, 16, seed=0)
    model.train()
    single = jacobian_squared_singular_values(model, X[:1])
    batch = jacobian_squared_singular_values(model, X)
    np.testing.assert_allclose(single[0], batch[0], rtol=1e-5)
    assert model.training  # mode restored


def test_weight_spectra_at_init_are_gain_squared():
    model = build_mlp("relu", 5, 16, seed=0)
    spectra = weight_spectra(model)
    assert [s.size for s in spectra] == [16] * 5 + [10]
    np.testing.assert_allclose(spectra[0], 1.0, atol=1e-5)
    for s in spectra[1:]:
        np.testing.assert_allclose(s, default_gain("relu") ** 2, atol=1e-5)
    with torch.no_grad():
        model.linears[2].weight.mul_(torch.linspace(0.5, 2.0, 16)[:, None])
    s = weight_spectra(model)[2]
    np.testing.assert_allclose(s, np.sort(2.0 * np.linspace(0.5, 2.0, 16) ** 2)[::-1], rtol=1e-5)


def test_a_diverged_layer_has_nan_eigenvalues_and_the_others_keep_theirs():
    """A network whose training diverged (one member of the paper-cpu run at depth 80: loss
    NaN by epoch 27) used to lose the whole job in eigvalsh; its spectra are NaN instead,
    the table still meets its contract, and the healthy layers are untouched."""
    from galu.workflow.tables import CONTRACTS_DIR, contracts, table_problems

    model = build_mlp("tilted_relu", 4, 8, seed=0)
    healthy = weight_spectra(model)
    with torch.no_grad():
        model.linears[1].weight[0, 0] = float("nan")
        model.linears[2].weight.mul_(1e200)  # finite, but W W^T overflows
    spectra = weight_spectra(model)
    assert np.isnan(spectra[1]).all() and np.isnan(spectra[2]).all()
    for layer in (0, 3, 4):
        np.testing.assert_array_equal(spectra[layer], healthy[layer])
    labels = {"activation": "tilted_relu", "width": 8, "depth": 4, "seed": 0}
    table = spectra_table(model, "trained", labels)
    assert table["eigenvalue"].isna().sum() == 16
    found = contracts(REPO / CONTRACTS_DIR)
    (contract,) = [c for c in found if c.path == "normalization/spectra.csv"]
    assert table_problems(table, contract) == []


def test_tables_are_tidy():
    model = build_mlp("tilted_relu", 3, 8, seed=0)
    table = spectra_table(model, "init", {"activation": "tilted_relu", "depth": 3})
    assert list(table.columns) == ["activation", "depth", "layer", "stage", "index", "eigenvalue"]
    assert len(table) == 8 * 3 + 10 and table["layer"].max() == 4
    jac = jacobian_table(model, X[:3], {"activation": "tilted_relu", "depth": 3})
    assert len(jac) == 3 * 8 and set(jac["sample"]) == {0, 1, 2}
    with pytest.raises(ValueError, match="stage must be one of"):
        spectra_table(model, "final", {})


def test_jacobian_rows_equal_the_pullback_of_the_unit_vectors_without_importing_sympy():
    # The function pulls back sum(out * units); torch's grad_outputs=units gives the same
    # numbers bit for bit but imports sympy (about 0.5 s a job). A fresh interpreter shows
    # which modules the function itself needs.
    model = build_mlp("relu", 4, 8, seed=3)
    with torch.no_grad():
        h1 = model.linears[0](X[:2])
    copies = h1.repeat_interleave(8, dim=0).requires_grad_(True)
    out = model.hidden_stack(copies)
    units = torch.eye(8).repeat(2, 1)
    (rows,) = torch.autograd.grad(out, copies, grad_outputs=units)
    expected = torch.linalg.svdvals(rows.view(2, 8, 8).double()).square().numpy()
    np.testing.assert_array_equal(jacobian_squared_singular_values(model, X[:2]), expected)
    code = (
        "import sys, torch\n"
        "from galu.normalization.mlp import build_mlp\n"
        "from galu.normalization.spectra import jacobian_squared_singular_values\n"
        "jacobian_squared_singular_values(build_mlp('relu', 4, 8, seed=3), torch.randn(2, 3072))\n"
        "print('sympy' in sys.modules)\n"
    )
    ran = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert ran.stdout.strip() == "False"
