"""Deep plain MLPs: orthogonal init, gains, training loop (arXiv 1905.01369, Sec. 4)."""

import math
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest
import torch

from galu.normalization.cifar import prepare_data, standardize_images
from galu.normalization.lr_sweep import choose_lr, chosen_lrs, lr_sweep
from galu.normalization.mlp import DeepMLP, build_mlp, default_gain
from galu.normalization.modules import TILTED_RELU_SCALE, reference_activation
from galu.normalization.quadrature import gaussian_expectation
from galu.normalization.training import TrainSettings, train
from galu.workflow.cifar_job import start_cifar_job
from galu.workflow.output import Run

pytestmark = pytest.mark.usefixtures("one_torch_thread")  # see conftest

ACTIVATIONS = ["relu", "tilted_relu", "abs", "tanh", "relu_bn"]


def _cifar_like(n_train: int, n_test: int, seed: int) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    image = lambda n: rng.integers(0, 256, size=(n, 32, 32, 3), dtype=np.uint8)
    label = lambda n: rng.integers(0, 10, size=n).astype(np.int64)
    return {
        "x_train": image(n_train),
        "y_train": label(n_train),
        "x_test": image(n_test),
        "y_test": label(n_test),
    }


@pytest.mark.parametrize("activation", ACTIVATIONS)
def test_orthogonal_init_gives_gain_squared_identity(activation):
    model = build_mlp(activation, depth=4, width=32, seed=0)
    g = default_gain(activation)
    eye = torch.eye(32, dtype=torch.float64)
    for linear in model.linears[1:-1]:  # square hidden layers: W^T W = g^2 I
        w = linear.weight.detach().double()
        torch.testing.assert_close(w.T @ w, g * g * eye, atol=1e-5, rtol=0)
    w_in = model.linears[0].weight.detach().double()  # 32 x 3072: orthonormal rows
    torch.testing.assert_close(w_in @ w_in.T, eye, atol=1e-5, rtol=0)
    w_out = model.linears[-1].weight.detach().double()  # 10 x 32
    torch.testing.assert_close(
        w_out @ w_out.T, g * g * torch.eye(10, dtype=torch.float64), atol=1e-5, rtol=0
    )
    assert all(torch.all(lin.bias == 0) for lin in model.linears)


def _chi_at_fixed_point(name: str, gain: float) -> float:
    """g^2 E f'(sqrt(q*) z)^2 at the variance fixed point q* = g^2 E f(sqrt(q*) z)^2."""
    act = reference_activation(name)
    moment = lambda fn, q: gaussian_expectation(lambda z: fn(math.sqrt(q) * z) ** 2)
    q = 1.0
    for _ in range(2000):
        q = gain**2 * moment(act.f, q)
    return gain**2 * moment(act.df, q)


@pytest.mark.parametrize(
    "name, tol", [("relu", 1e-12), ("abs", 1e-12), ("tilted_relu", 1e-12), ("tanh", 5e-3)]
)
def test_default_gains_are_critical(name, tol):
    assert _chi_at_fixed_point(name, default_gain(name)) == pytest.approx(1.0, abs=tol)


def test_normalized_relu_net_equals_tilted_relu_net():
    # g W f_n(h) with g = sqrt(1 - 2/pi) is W tilted(h): the same network, same seed.
    assert default_gain("normalized_relu") == pytest.approx(TILTED_RELU_SCALE, abs=1e-12)
    x = torch.randn(5, 3072, generator=torch.Generator().manual_seed(1))
    a = build_mlp("normalized_relu", 6, 16, seed=3)(x)
    b = build_mlp("tilted_relu", 6, 16, seed=3)(x)
    torch.testing.assert_close(a, b, atol=1e-5, rtol=1e-5)


def test_same_seed_same_weights_and_different_seed_different():
    a, b, c = (build_mlp("relu", 3, 16, seed=s) for s in (7, 7, 8))
    for la, lb, lc in zip(a.linears, b.linears, c.linears, strict=True):
        assert torch.equal(la.weight, lb.weight)
        assert not torch.equal(la.weight, lc.weight)


def test_relu_bn_has_batch_norm_and_others_do_not():
    assert (
        sum(isinstance(m, torch.nn.BatchNorm1d) for m in build_mlp("relu_bn", 3, 8, 0).modules())
        == 3
    )
    assert not any(
        isinstance(m, torch.nn.BatchNorm1d) for m in build_mlp("relu", 3, 8, 0).modules()
    )


def test_standardize_images_per_channel_with_training_statistics():
    data = _cifar_like(50, 20, 0)
    train_x, test_x = standardize_images(data["x_train"], data["x_test"])
    assert train_x.shape == (50, 3072) and test_x.shape == (20, 3072)
    per_channel = train_x.reshape(50, 32, 32, 3)
    np.testing.assert_allclose(per_channel.mean(axis=(0, 1, 2)), 0.0, atol=1e-5)
    np.testing.assert_allclose(per_channel.std(axis=(0, 1, 2)), 1.0, atol=1e-4)
    # the test split uses the training mean/std, so it is not exactly standardized
    assert np.abs(test_x.reshape(20, 32, 32, 3).mean(axis=(0, 1, 2))).max() > 1e-4


def test_standardize_uint8_fast_path_equals_float64_arithmetic_per_pixel():
    # The histogram moments and the 256-entry table must give the bits of the plain
    # per-pixel float64 computation (mean exactly; the std to float64 rounding).
    rng = np.random.default_rng(5)
    train = rng.integers(0, 256, size=(300, 8, 8, 3), dtype=np.uint8)
    test = rng.integers(0, 256, size=(40, 8, 8, 3), dtype=np.uint8)
    train_f = train.astype(np.float32)
    mean = train_f.mean(axis=(0, 1, 2), dtype=np.float64)
    std = train_f.std(axis=(0, 1, 2), dtype=np.float64)
    scale = lambda x: ((x.astype(np.float32) - mean) / std).astype(np.float32).reshape(len(x), -1)
    fast_train, fast_test = standardize_images(train, test)
    np.testing.assert_array_equal(fast_train, scale(train))
    np.testing.assert_array_equal(fast_test, scale(test))
    # float input takes the float path and agrees to float32 rounding
    slow_train, _ = standardize_images(train.astype(np.float32), test.astype(np.float32))
    np.testing.assert_allclose(slow_train, fast_train, rtol=0, atol=1e-6)


def test_two_layer_net_overfits_100_random_cifar_like_images():
    data = prepare_data(_cifar_like(100, 20, 1), None, None, seed=0)
    model = build_mlp("relu", depth=1, width=256, seed=0)
    curve = train(model, data, TrainSettings(lr=0.01, epochs=10, batch_size=20), seed=0)
    assert curve["train_error"].iloc[0] > 0.7  # random labels: chance at init
    assert curve["train_error"].iloc[-1] == 0.0
    assert curve["train_loss"].iloc[-1] < 0.05 * curve["train_loss"].iloc[0]
    assert not curve["diverged"].any()
    assert list(curve["epoch"]) == list(range(11))


def test_training_is_reproducible_and_divergence_is_reported():
    data = prepare_data(_cifar_like(64, 16, 2), None, None, seed=0)
    runs = [train(build_mlp("tanh", 3, 16, 4), data, TrainSettings(0.05, 3, 16), 4) for _ in "ab"]
    pd.testing.assert_frame_equal(runs[0], runs[1])
    blown = train(build_mlp("relu", 3, 16, 4), data, TrainSettings(1e6, 3, 16), 4)
    assert blown["diverged"].all()
    assert np.isfinite(blown["train_loss"]).all() and len(blown) < 4


def test_prepare_data_subsamples_with_the_seed():
    arrays = _cifar_like(40, 30, 3)
    a = prepare_data(arrays, 10, 5, seed=1)
    b = prepare_data(arrays, 10, 5, seed=1)
    assert a.x_train.shape == (10, 3072) and a.y_test.shape == (5,)
    assert torch.equal(a.x_train, b.x_train) and torch.equal(a.y_train, b.y_train)
    with pytest.raises(ValueError, match=r"n_train must be in \[1, 40\]"):
        prepare_data(arrays, 41, 5, seed=1)


def test_lr_sweep_picks_the_lowest_final_loss_among_finite_runs():
    data = prepare_data(_cifar_like(64, 16, 4), None, None, seed=0)
    sweep = lr_sweep(
        "relu", data, [1e-4, 1e-2, 1e6], depth=2, width=16, epochs=3, seed=0, batch_size=16
    )
    assert sweep["diverged"].tolist() == [False, False, True]
    ok = sweep[~sweep["diverged"]]
    assert sweep.loc[sweep["chosen"], "lr"].item() == ok.loc[ok["final_train_loss"].idxmin(), "lr"]
    assert sweep["chosen"].sum() == 1
    with pytest.raises(ValueError, match="every learning rate .* diverged"):
        choose_lr(sweep.assign(diverged=True))


@pytest.mark.parametrize(
    "call, match",
    [
        (lambda: build_mlp("relu_tilted", 2, 8, 0), "unknown activation 'relu_tilted'"),
        (lambda: build_mlp("relu", 0, 8, 0), "depth .* must be >= 1, got 0"),
        (lambda: DeepMLP(3072, 0, 2, 10, "relu"), "width must be >= 1, got 0"),
        (lambda: TrainSettings(lr=0.0, epochs=1), "lr must be > 0"),
        (lambda: TrainSettings(lr=0.1, epochs=1, batch_size=1), "batch_size must be >= 2"),
        (lambda: TrainSettings(lr=0.1, epochs=1, momentum=1.0), r"momentum must be in \[0, 1\)"),
    ],
)
def test_bad_input_raises(call, match):
    with pytest.raises(ValueError, match=match):
        call()


def test_chosen_lrs_per_width_and_errors():
    sweep = pd.DataFrame(
        {"width": [8, 8, 16, 16], "lr": [0.1, 0.01, 0.1, 0.01], "chosen": [0, 1, 1, 0]}
    )
    assert chosen_lrs(sweep) == {8: 0.01, 16: 0.1}
    with pytest.raises(ValueError, match="exactly one chosen lr per width"):
        chosen_lrs(sweep.assign(chosen=1))


def test_start_cifar_job_opens_the_run_and_prepares_the_data(tmp_path):
    arrays = _cifar_like(20, 10, 6)
    path = tmp_path / "cifar10.npz"
    np.savez(path, **arrays)
    Run("prepare", extra={"data_substitute": True}).stamp(path)  # the job refuses one without

    class Inputs(list):  # a Snakemake Namedlist: iterable paths with named entries
        npz = str(path)

    smk = SimpleNamespace(
        rule="r", log=[], threads=2, wildcards={}, params={"seed": 3}, input=Inputs([str(path)])
    )
    run, data = start_cifar_job(smk, 8, 4, seed=3)
    assert torch.get_num_threads() == 2
    # the substitute flag is the input's sidecar's (Run.from_snakemake reads it)
    assert run.rule == "r" and run.device == "cpu" and run.extra == {"data_substitute": True}
    assert run.inputs == [str(path)]
    expected = prepare_data(arrays, 8, 4, seed=3)
    assert torch.equal(data.x_train, expected.x_train) and torch.equal(data.y_test, expected.y_test)
    with pytest.raises(ValueError, match="device must be one of"):
        start_cifar_job(smk, 8, 4, seed=3, device="tpu")
    Run("prepare", extra={"data_substitute": False}).stamp(path)
    assert start_cifar_job(smk, 8, 4, seed=3)[0].extra == {"data_substitute": False}
