"""Throughput of the deep-MLP training loops (static-normalization stage).

Trains ``--members`` deep plain MLPs of one shape (a learning-rate sweep: one network per
rate, as the workflow's sweep jobs do) on a synthetic CIFAR-shaped tensor (nothing to
download, fits in a 64 MiB working tree) and prints, for one epoch each:

- samples/s and achieved FLOP/s of the stacked trainer
  (:mod:`galu.normalization.stacked`: all members as one batched network), which the
  workflow's sweep and training jobs use;
- the same for the networks trained one after another by
  :func:`galu.normalization.training.train_epoch` (data on the device, minibatches
  sliced there);
- a baseline in the same run: one network fed by a ``DataLoader`` over host tensors with
  one host-to-device copy per minibatch;
- each against the device's stated peak and against a large matmul measured here.

FLOPs per sample and step are ``6 x`` the multiply-adds of the linear layers
(forward 2, backward 4); activations, batch norm and the optimizer are left out,
so the achieved figure is a slight under-count.

    python benchmarks/deep_mlp.py --device auto --depth 30 --width 1024 --epochs 3
    python benchmarks/deep_mlp.py --threads 2 --epochs 1 --samples 5000
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable

import torch
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset

from galu.device import describe, resolve_device
from galu.normalization.cifar import TensorData
from galu.normalization.mlp import DeepMLP, build_mlp
from galu.normalization.stacked import MomentumSGD, StackedMLP, member_cross_entropy
from galu.normalization.training import train_epoch

# Stated fp32 peaks (FLOP/s) of known devices: dense, without tensor cores (torch keeps
# TF32 off for fp32 matmuls by default). H100/H200 SXM: 67 TFLOP/s; A100: 19.5.
STATED_PEAKS = {"H200": 67e12, "H100": 67e12, "A100": 19.5e12}
# CPU: cores x 2 FMA units x 16 fp32 lanes (AVX-512) x 2 FLOP x clock, clock from --cpu-ghz.
CPU_FLOP_PER_CYCLE_PER_CORE = 64


def linear_macs(model: DeepMLP) -> int:
    """Multiply-adds of all linear layers for one sample."""
    return sum(lin.in_features * lin.out_features for lin in model.linears)


def stated_peak(device: str, threads: int, cpu_ghz: float) -> tuple[float, str]:
    """The peak fp32 FLOP/s to compare with, and where it comes from."""
    if device == "cpu":
        peak = threads * CPU_FLOP_PER_CYCLE_PER_CORE * cpu_ghz * 1e9
        return peak, f"{threads} cores x 64 FLOP/cycle (AVX-512 FMA) x {cpu_ghz} GHz"
    name = torch.cuda.get_device_name()
    for key, peak in STATED_PEAKS.items():
        if key in name:
            return peak, f"{key} fp32 datasheet"
    return float("nan"), f"no stated peak for {name!r}"


def synchronize(device: str) -> None:
    if device == "cuda":
        torch.cuda.synchronize()


def timed(fn: Callable[[], None], device: str) -> float:
    synchronize(device)
    start = time.perf_counter()
    fn()
    synchronize(device)
    return time.perf_counter() - start


def matmul_flops(device: str, size: int = 4096, repeats: int = 5) -> float:
    """FLOP/s of a square fp32 matmul: what this device attains on ideal work."""
    a = torch.randn(size, size, device=device)
    b = torch.randn(size, size, device=device)
    a @ b  # warm-up (kernel selection, allocation)
    seconds = timed(lambda: [a @ b for _ in range(repeats)], device)
    return repeats * 2 * size**3 / seconds


def host_loader_epoch(
    model: DeepMLP, opt: torch.optim.Optimizer, loader: DataLoader, device: str
) -> None:
    """Baseline: minibatches come from host memory, one copy each."""
    model.train()
    for x, y in loader:
        loss = F.cross_entropy(model(x.to(device)), y.to(device))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()


def stacked_epoch(
    model: StackedMLP, opt: MomentumSGD, data: TensorData, batch: int, lrs: torch.Tensor
) -> None:
    """One epoch of the stacked trainer's step (galu.normalization.stacked), shared order."""
    model.train()
    order = torch.randperm(len(data.y_train), device=data.y_train.device)
    for start in range(0, len(order) - batch + 1, batch):
        idx = order[start : start + batch]
        losses = member_cross_entropy(model(data.x_train[idx]), data.y_train[idx])
        opt.zero_grad()
        (lrs * losses).sum().backward()
        opt.step()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="auto", choices=["auto", "cpu", "cuda"])
    parser.add_argument("--depth", type=int, default=30)
    parser.add_argument("--width", type=int, default=128)
    parser.add_argument("--members", type=int, default=5, help="networks (the quick sweep: 5)")
    parser.add_argument("--samples", type=int, default=10_000)
    parser.add_argument("--batch-size", type=int, default=128)
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--activation", default="tilted_relu")
    parser.add_argument("--threads", type=int, default=torch.get_num_threads())
    parser.add_argument("--cpu-ghz", type=float, default=2.0, help="CPU clock for the peak")
    args = parser.parse_args()

    torch.set_num_threads(args.threads)
    device = resolve_device(args.device)
    gen = torch.Generator().manual_seed(0)
    x = torch.randn(args.samples, 3072, generator=gen)
    y = torch.randint(0, 10, (args.samples,), generator=gen)
    data = TensorData(x.to(device), y.to(device), x[:16].to(device), y[:16].to(device))
    loader = DataLoader(
        TensorDataset(x, y), batch_size=args.batch_size, shuffle=True, drop_last=True
    )

    lrs = [1e-4 * 2**e for e in range(args.members)]
    models = [build_mlp(args.activation, args.depth, args.width, seed=0).to(device) for _ in lrs]
    opts = [
        torch.optim.SGD(m.parameters(), lr=lr, momentum=0.9)
        for m, lr in zip(models, lrs, strict=True)
    ]
    stacked = StackedMLP(models).to(device)
    stacked_opt = MomentumSGD(stacked.parameters(), momentum=0.9)
    lr_weights = torch.tensor(lrs, device=device)
    shuffle = torch.Generator(device=device).manual_seed(0)
    steps = args.samples // args.batch_size
    flop_per_sample = 6 * linear_macs(models[0])

    def one_at_a_time() -> None:
        for model, opt in zip(models, opts, strict=True):
            train_epoch(model, opt, data, args.batch_size, shuffle)

    runs = {
        f"stacked, {args.members} nets (galu)": (
            lambda: stacked_epoch(stacked, stacked_opt, data, args.batch_size, lr_weights),
            args.members,
        ),
        f"one at a time, {args.members} nets": (one_at_a_time, args.members),
        "host DataLoader, 1 net (old)": (
            lambda: host_loader_epoch(models[0], opts[0], loader, device),
            1,
        ),
    }
    for epoch, _ in runs.values():  # warm-up: first-call costs are not throughput
        epoch()
    peak, source = stated_peak(device, args.threads, args.cpu_ghz)
    attained = matmul_flops(device)
    print(
        f"device {describe(device)}, {args.threads} threads; {args.activation} depth "
        f"{args.depth} width {args.width}, batch {args.batch_size}, {args.samples} samples"
    )
    print(f"stated peak {peak / 1e12:.3g} TFLOP/s ({source}); 4096^2 matmul {attained / 1e12:.3g}")
    rates = {}
    for label, (epoch, nets) in runs.items():
        seconds = timed(lambda e=epoch: [e() for _ in range(args.epochs)], device)
        rates[label] = nets * args.epochs * steps * args.batch_size / seconds
        flops = rates[label] * flop_per_sample
        print(
            f"{label:30s} {rates[label]:10.0f} samples/s  {flops / 1e12:8.4f} TFLOP/s  "
            f"{flops / peak:6.1%} of stated peak  {flops / attained:6.1%} of matmul"
        )
    labels = list(rates)
    print(f"stacked over one at a time: {rates[labels[0]] / rates[labels[1]]:.2f}x")


if __name__ == "__main__":
    main()
