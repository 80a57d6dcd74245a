"""The GPU paths compute what the CPU paths compute.

Users with GPUs run the training jobs with ``device: cuda`` (or ``auto``); CI and most
developer machines have none, so these tests skip there, saying so, and run wherever torch
sees a CUDA device (``pytest tests/test_cuda.py``). Each trains the same small problem on
the CPU and on the GPU from the same seeds: the deep-MLP stack of the normalization stage
(Richemond & Guo), the padded ensembles of the memorization stage (Fiat et al.) and the
on-line SGD simulation of the SCM stage (Straat & Biehl). Float rounding differs between
the devices (other matmul kernels), so values agree to a tolerance, not bit for bit; the
SCM simulation draws its examples on the device, so there the runs agree in distribution.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from galu.ensembles.training import EnsembleSettings
from galu.memorization.fitting import FitOptions, Member, fit_members
from galu.normalization.cifar import TensorData
from galu.normalization.mlp import build_mlp
from galu.normalization.stacked import train_stacked
from galu.scm.simulation import simulate

pytestmark = pytest.mark.skipif(
    not torch.cuda.is_available(), reason="no CUDA device: the GPU paths are checked on one"
)


def _images(device: str) -> TensorData:
    gen = torch.Generator().manual_seed(0)
    x, y = torch.randn(640, 96, generator=gen), torch.randint(0, 10, (640,), generator=gen)
    return TensorData(
        x[:512].to(device), y[:512].to(device), x[512:].to(device), y[512:].to(device)
    )


@pytest.mark.parametrize("activation", ["relu", "tilted_relu", "relu_bn"])
def test_the_stacked_deep_mlps_train_alike_on_the_gpu(activation):
    curves = {}
    for device in ("cpu", "cuda"):
        models = [build_mlp(activation, 6, 32, seed=s, input_dim=96) for s in (0, 1)]
        models = [m.to(device) for m in models]
        tables = train_stacked(
            models, _images(device), [0.01, 0.03], [0, 1], epochs=3, batch_size=32
        )
        curves[device] = np.stack([t[["train_loss", "test_loss"]].to_numpy() for t in tables])
    assert curves["cpu"].shape == (2, 4, 2)  # two members, epochs 0-3
    assert not np.allclose(curves["cpu"][:, 0], curves["cpu"][:, -1])  # they trained
    np.testing.assert_allclose(curves["cuda"], curves["cpu"], rtol=2e-3, atol=1e-4)


def test_the_memorization_ensembles_fit_alike_on_the_gpu():
    members = [
        Member(model, 40, 6, 1, width, seed)
        for model in ("relu", "galu", "galu_exact")
        for width in (5, 12)
        for seed in (0, 1)
    ]
    settings = EnsembleSettings(steps=60, lr=0.02, batch_size=16)
    fits = {
        device: fit_members(members, FitOptions(settings, device=device, overhead=0.0))
        for device in ("cpu", "cuda")
    }
    for cpu, gpu in zip(fits["cpu"], fits["cuda"], strict=True):
        assert (cpu.diverged_step, cpu.rank) == (gpu.diverged_step, gpu.rank)
        np.testing.assert_allclose(gpu.pred, cpu.pred, rtol=1e-3, atol=1e-4)


def test_the_scm_simulation_on_the_gpu_is_another_sample_of_the_same_process():
    # The examples are drawn by the device's own generator (galu.scm.simulation): the same
    # students and teachers at alpha = 0, then other draws, so the runs agree in
    # distribution. The perceptron's R after alpha = 3 spreads by ~1/sqrt(N) between seeds.
    kwargs = dict(
        K=1,
        M=1,
        activation="relu",
        eta=0.5,
        R0=np.array([[0.0]]),
        Q0=np.array([[0.5]]),
        N=1000,
        alpha=np.array([0.0, 3.0]),
        seeds=list(range(8)),
        n_test=500,
    )
    cpu, gpu = simulate(device="cpu", **kwargs), simulate(device="cuda", **kwargs)
    np.testing.assert_allclose(gpu.R[:, 0], cpu.R[:, 0], atol=1e-12)  # same initial students
    np.testing.assert_allclose(gpu.Q[:, 0], cpu.Q[:, 0], atol=1e-12)
    r_cpu, r_gpu = cpu.R[:, -1, 0, 0], gpu.R[:, -1, 0, 0]
    assert r_cpu.mean() > 0.3  # the students learned
    assert not np.allclose(r_gpu, r_cpu)  # other examples
    spread = np.sqrt((r_cpu.var(ddof=1) + r_gpu.var(ddof=1)) / len(r_cpu))
    assert abs(r_gpu.mean() - r_cpu.mean()) <= 4 * spread
