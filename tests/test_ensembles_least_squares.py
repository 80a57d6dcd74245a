"""The exact least-squares GaLU solver (galu.ensembles.least_squares) against theory and
against SGD."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import galu.ensembles.least_squares as exact
from galu.ensembles.least_squares import galu_features, load_exact, min_norm_lstsq, solve_galu
from galu.ensembles.networks import GaLUNet
from galu.ensembles.training import EnsembleSettings, mse_loss, train_ensemble

F64 = torch.float64


def _gaussian(shape: tuple[int, ...], seed: int) -> torch.Tensor:
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed), dtype=F64)


def _normalized_loss(fitted: torch.Tensor, y: torch.Tensor) -> np.ndarray:
    return ((fitted - y).square().mean(dim=(1, 2)) / y.square().mean(dim=(1, 2))).numpy()


def test_features_on_a_tiny_input() -> None:
    x = torch.tensor([[1.0, 2.0], [-1.0, 3.0]], dtype=F64)
    gates = torch.tensor([[[1.0, 0.0], [0.0, -1.0]]], dtype=F64)  # unit 0: x1 >= 0, 1: x2 <= 0
    phi = galu_features(x, gates)
    assert phi.tolist() == [[[1.0, 2.0, 0.0, 0.0], [0.0, 0.0, 0.0, 0.0]]]
    masked = galu_features(x, gates, mask=torch.tensor([[0.0, 1.0]]))
    assert torch.count_nonzero(masked) == 0


@pytest.mark.parametrize("driver", ["auto", "gelsd", "svd"])
def test_min_norm_lstsq_matches_numpy_on_a_rank_deficient_problem(driver: str) -> None:
    base = _gaussian((2, 9, 3), seed=1)
    # Columns 3..5 repeat columns 0..2 in another combination: rank 3 of 6.
    a = torch.cat([base, base @ _gaussian((2, 3, 3), seed=2)], dim=2)
    b = _gaussian((2, 9, 2), seed=3)
    solution = min_norm_lstsq(a, b, driver=driver)
    assert solution.rank.tolist() == [3, 3]
    for e in range(2):
        expected = np.linalg.lstsq(a[e].numpy(), b[e].numpy(), rcond=None)[0]
        np.testing.assert_allclose(solution.coef[e].numpy(), expected, atol=1e-10)
        np.testing.assert_allclose(solution.fitted[e].numpy(), a[e].numpy() @ expected, atol=1e-10)


@pytest.mark.parametrize("kd_over_m", [0.125, 0.25, 0.5, 0.75])
def test_expected_normalized_loss_is_one_minus_kd_over_m(kd_over_m: float) -> None:
    # Gaussian labels independent of x: E loss = 1 - rank/m exactly; rank = kd here.
    m, d, seeds = 96, 6, 300
    k = round(kd_over_m * m / d)
    x, y = _gaussian((seeds, m, d), seed=k), _gaussian((seeds, m, 1), seed=100 + k)
    solution = solve_galu(GaLUNet(d, [k] * seeds, range(seeds), dtype=F64), x, y)
    assert (solution.rank == k * d).float().mean() > 0.95
    loss = _normalized_loss(solution.fitted, y)
    stderr = loss.std(ddof=1) / np.sqrt(seeds)
    assert abs(loss.mean() - (1 - kd_over_m)) < 3 * stderr
    # The exact identity behind it: loss = 1 - |P y|^2/|y|^2 has mean 1 - rank/m.
    expected = 1 - solution.rank.double().mean().item() / m
    assert abs(loss.mean() - expected) < 3 * stderr


@pytest.mark.parametrize("k", [16, 24, 40])
def test_loss_is_zero_once_kd_reaches_m(k: int) -> None:
    m, d, seeds = 64, 4, 20
    x, y = _gaussian((seeds, m, d), seed=7), _gaussian((seeds, m, 1), seed=8)
    solution = solve_galu(GaLUNet(d, [k] * seeds, range(seeds), dtype=F64), x, y)
    full = (solution.rank == m).numpy()
    loss = _normalized_loss(solution.fitted, y)
    # At kd = m exactly, coinciding gate patterns (likely in d = 4) can cost a few ranks;
    # with room to spare every member interpolates.
    assert full.mean() >= (0.5 if k * d == m else 1.0)
    assert np.all(loss[full] < 1e-8)
    assert np.all(loss[~full] > 1e-6)  # a lost dimension leaves a visible residual


def test_exact_loss_equals_a_long_converged_training_run() -> None:
    m, d, k = 24, 3, 4
    x, y = _gaussian((m, d), seed=11), _gaussian((m, 1), seed=12)
    solution = solve_galu(GaLUNet(d, [k], [5], dtype=F64), x, y)
    exact_loss = (solution.fitted[0] - y).square().mean().item()
    net = GaLUNet(d, [k], [5], dtype=F64)  # same seed: same gates
    settings = EnsembleSettings(steps=3000, lr=0.03, optimizer="adam")
    trained = train_ensemble(net, mse_loss, x, y, [5], settings).final_loss[0]
    assert exact_loss > 0.1  # a genuinely under-parameterized problem (kd = m/2)
    assert trained >= exact_loss - 1e-9  # nothing beats the least-squares optimum
    assert abs(trained - exact_loss) < 1e-3


def test_loaded_solution_reproduces_the_fitted_values_with_bias() -> None:
    m, d = 30, 3
    x = _gaussian((m, d), seed=1)
    y = 5.0 + _gaussian((m, 1), seed=2)  # an offset only a bias can fit without cost
    net = GaLUNet(d, [2, 5], [0, 1], bias=True, dtype=F64)
    solution = solve_galu(net, x, y)
    # Rank of the explicit design [1{(x,1).u_j >= 0} (x, 1)]_j plus the constant column.
    xa = np.hstack([x.numpy(), np.ones((m, 1))])
    for e, k in enumerate([2, 5]):
        on = xa @ net.gates[e, :k].numpy().T >= 0
        design = np.hstack([*(on[:, [j]] * xa for j in range(k)), np.ones((m, 1))])
        assert solution.rank[e] == np.linalg.matrix_rank(design)
    load_exact(net, solution)
    torch.testing.assert_close(net(x), solution.fitted)
    # A constant label is fitted exactly.
    constant = solve_galu(net, x, torch.full((m, 1), 3.0, dtype=F64))
    torch.testing.assert_close(constant.fitted, torch.full((2, m, 1), 3.0, dtype=F64))


def test_padded_members_and_chunking_do_not_change_the_solution(monkeypatch) -> None:
    x, y = _gaussian((3, 40, 4), seed=5), _gaussian((3, 40, 1), seed=6)
    together = solve_galu(GaLUNet(4, [2, 6, 3], [0, 1, 2], dtype=F64), x, y)
    monkeypatch.setattr(exact, "_MAX_ELEMENTS", 1)  # one member per chunk
    for e, (k, s) in enumerate([(2, 0), (6, 1), (3, 2)]):
        alone = solve_galu(GaLUNet(4, [k], [s], dtype=F64), x[e : e + 1], y[e : e + 1])
        assert together.rank[e] == alone.rank[0] == k * 4
        torch.testing.assert_close(together.fitted[e], alone.fitted[0])
        torch.testing.assert_close(together.weight[e, :k], alone.weight[0])
        assert torch.count_nonzero(together.weight[e, k:]) == 0


def test_vector_outputs_are_solved_column_by_column_but_cannot_be_loaded() -> None:
    x, y = _gaussian((20, 3), seed=0), _gaussian((20, 2), seed=1)
    net = GaLUNet(3, [2], [0], out_dim=2, dtype=F64)
    both = solve_galu(net, x, y)
    for c in range(2):
        one = solve_galu(GaLUNet(3, [2], [0], dtype=F64), x, y[:, c : c + 1])
        torch.testing.assert_close(both.fitted[..., c], one.fitted[..., 0])
    with pytest.raises(ValueError, match="load_exact needs out_dim = 1, got out_dim = 2"):
        load_exact(net, both)


def test_bad_inputs_raise() -> None:
    net = GaLUNet(3, [2], [0], dtype=F64)
    x = _gaussian((10, 3), seed=0)
    with pytest.raises(ValueError, match=r"y must be \(m, 1\)"):
        solve_galu(net, x, _gaussian((10, 2), seed=0))
    with pytest.raises(ValueError, match="model must be a GaLUNet"):
        solve_galu(torch.nn.Linear(3, 1), x, x[:, :1])
    with pytest.raises(ValueError, match="model must be a GaLUNet"):
        exact.exact_fits(torch.nn.Linear(3, 1), x, x[:, :1])
    with pytest.raises(ValueError, match="driver must be one of"):
        min_norm_lstsq(x[None], x[None, :, :1], driver="gelsy")
    with pytest.raises(ValueError, match=r"rcond must be in \[0, 1\)"):
        min_norm_lstsq(x[None], x[None, :, :1], rcond=2.0)


@pytest.mark.parametrize("bias", [False, True])
def test_the_kernel_is_phi_phi_transposed(bias: bool) -> None:
    # Widths 3 and 5 (the narrower one masked), per-member inputs.
    net = GaLUNet(4, [3, 5], [0, 1], bias=bias, dtype=F64)
    x = _gaussian((2, 7, 4), seed=4)
    members = torch.arange(2)
    phi = exact._design(net, x, members)
    kernel = exact.galu_kernel(net, x, members)
    torch.testing.assert_close(kernel, phi @ phi.transpose(1, 2), rtol=1e-13, atol=1e-13)


def _fit_both(net: GaLUNet, x: torch.Tensor, y: torch.Tensor) -> tuple:
    return exact.exact_fits(net, x, y), solve_galu(net, x, y)


def test_exact_fits_skip_the_solve_only_where_full_row_rank_is_certified(monkeypatch) -> None:
    # m = 40 samples, d = 4: width 24 has 96 features (full row rank, certified), width 6
    # has 24 (fewer than m: solved); member 2 has width 24 but two equal samples, so its
    # kernel is singular: not certified, solved, rank 39 as the solver finds it.
    m, d = 40, 4
    net = GaLUNet(d, [24, 6, 24], [0, 1, 2], dtype=F64)
    x, y = _gaussian((3, m, d), seed=5), _gaussian((3, m, 1), seed=6)
    x[2, 1] = x[2, 0]
    calls = []
    solver = exact.min_norm_lstsq
    monkeypatch.setattr(
        exact, "min_norm_lstsq", lambda a, *rest: calls.append(a) or solver(a, *rest)
    )
    fits = exact.exact_fits(net, x, y)
    assert [a.shape[0] for a in calls] == [2]  # members 1 and 2, in one solve
    monkeypatch.setattr(exact, "min_norm_lstsq", solver)
    reference = solve_galu(net, x, y)
    assert fits.rank.tolist() == reference.rank.tolist() == [m, 6 * d, m - 1]
    assert torch.equal(fits.fitted[0], y[0])  # certified: the fit is the labels themselves
    torch.testing.assert_close(fits.fitted[0], reference.fitted[0], rtol=0, atol=1e-10)
    assert torch.equal(fits.fitted[1:], reference.fitted[1:])  # the same solves
    # A model whose members are all certified makes no solve at all.
    calls.clear()
    monkeypatch.setattr(exact, "min_norm_lstsq", lambda a, *rest: calls.append(a))
    alone = exact.exact_fits(GaLUNet(d, [24], [0], dtype=F64), x[:1], y[:1])
    assert calls == [] and alone.rank.tolist() == [m] and torch.equal(alone.fitted, y[:1])


def test_exact_fits_match_the_solver_across_the_interpolation_threshold() -> None:
    # Shared inputs, widths from k d = m / 2 to 4 m: ranks equal the solver's everywhere,
    # and the fits agree to rounding (zero loss from k d = m on).
    m, d = 48, 6
    widths = [4, 7, 8, 9, 12, 32]
    net = GaLUNet(d, widths, list(range(len(widths))), dtype=F64)
    x, y = _gaussian((m, d), seed=7), _gaussian((m, 1), seed=8)
    fits, reference = _fit_both(net, x, y)
    assert fits.rank.tolist() == reference.rank.tolist()
    assert fits.rank.tolist()[-2:] == [m, m]
    torch.testing.assert_close(fits.fitted, reference.fitted, rtol=0, atol=1e-9)


def test_a_coarse_rcond_turns_the_certificate_off() -> None:
    # The certificate guarantees sigma_min / sigma_max > 1e-4 only: a cutoff above that
    # must go through the solver.
    net = GaLUNet(4, [24], [0], dtype=F64)
    x, y = _gaussian((1, 40, 4), seed=9), _gaussian((1, 40, 1), seed=10)
    fits = exact.exact_fits(net, x, y, rcond=0.5)
    reference = solve_galu(net, x, y, rcond=0.5)
    assert fits.rank.tolist() == reference.rank.tolist()
    assert torch.equal(fits.fitted, reference.fitted)
