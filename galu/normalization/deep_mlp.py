"""Deep plain MLPs on CIFAR-10 (Richemond & Guo, arXiv 1905.01369, Sec. 4).

The network: flattened images -> ``depth`` hidden layers of width ``w`` (the first
maps the input to ``w``, the others are square) -> a 10-way linear readout, trained
with softmax cross-entropy by SGD with momentum, no regularization. Weights are
orthogonal times a gain (:data:`GAINS`), biases zero. Only the ``relu_bn`` control
has batch norm (before each activation).

Gains. Each layer's Jacobian is ``g W diag(f'(h))``; with orthogonal W its mean
squared singular value is ``chi = g^2 E f'(h)^2``. We pick g so that ``chi = 1`` at
the activations' own variance fixed point (criticality, Schoenholz et al. 2017):
ReLU sqrt(2) (He), |x| and the tilted ReLU 1 (``|f'| = 1``, so every layer's
Jacobian is exactly orthogonal), tanh 1.05 (chi = 1.003 at its fixed point
q* = 0.053; gain 1 would let the signal die out as q* -> 0). Every other activation
(the normalized ones) gets ``1 / sqrt(E f'(z)^2)``: chi = 1 for unit-variance inputs,
and at any variance when f is piecewise linear. The readout uses the same
gain; the first layer uses gain 1 because its input is standardized data, not an
activation's output.

The data stay on the device for the whole run: each epoch draws one permutation
there and slices minibatches from device tensors (no per-batch host copies).
"""

from __future__ import annotations

import itertools
import math
import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
import torch
import torch.nn.functional as F
from torch import Tensor, nn

from galu.data import load_processed
from galu.device import describe, resolve_device
from galu.feedback import log_progress
from galu.normalization.modules import (
    known_names,
    make_activation,
    reference_activation,
)
from galu.normalization.quadrature import gaussian_expectation
from galu.provenance import Run, is_substitute

BATCH_NORM_SUFFIX = "_bn"
GAINS: dict[str, float] = {
    "relu": math.sqrt(2.0),
    "abs": 1.0,
    "tilted_relu": 1.0,
    "tanh": 1.05,
}
EVAL_BATCH = 4096
# Independent random streams derived from one run seed, so that e.g. the initial
# weights never coincide with the draws that pick the training subset.
INIT_STREAM, SHUFFLE_STREAM, SUBSET_STREAM = 0, 1, 2


def stream_seed(seed: int, stream: int) -> int:
    """A seed for one use (init, batch order, subset) of the run seed ``seed``."""
    return int(np.random.SeedSequence([seed, stream]).generate_state(1)[0])


def split_activation(name: str) -> tuple[str, bool]:
    """``relu_bn`` -> (``relu``, True); any other known name -> (name, False)."""
    batch_norm = name.endswith(BATCH_NORM_SUFFIX)
    base = name.removesuffix(BATCH_NORM_SUFFIX) if batch_norm else name
    if base not in known_names():
        allowed = ", ".join([*known_names(), "<any of these>_bn"])
        raise ValueError(f"unknown activation {name!r}; choose one of: {allowed}")
    return base, batch_norm


def default_gain(activation: str) -> float:
    """The orthogonal-init gain of ``activation`` (see the module docstring)."""
    base, _ = split_activation(activation)
    if base in GAINS:
        return GAINS[base]
    df = reference_activation(base).df
    return 1.0 / math.sqrt(gaussian_expectation(lambda z: df(z) ** 2))


class DeepMLP(nn.Module):
    """``depth`` hidden layers of width ``width`` and a linear readout.

    Layer l (0-based) computes ``act(norm_l(linears[l](h)))``; ``linears[depth]`` is
    the readout.
    """

    def __init__(
        self, input_dim: int, width: int, depth: int, num_classes: int, activation: str
    ) -> None:
        super().__init__()
        dims = {"input_dim": input_dim, "width": width, "num_classes": num_classes}
        for key, value in dims.items():
            if value < 1:
                raise ValueError(f"{key} must be >= 1, got {value!r}")
        if depth < 1:
            raise ValueError(f"depth (number of hidden layers) must be >= 1, got {depth!r}")
        base, batch_norm = split_activation(activation)
        self.activation_name = activation
        self.depth = depth
        sizes = [input_dim] + [width] * depth + [num_classes]
        self.linears = nn.ModuleList(nn.Linear(a, b) for a, b in itertools.pairwise(sizes))
        self.norms = nn.ModuleList(
            nn.BatchNorm1d(width) if batch_norm else nn.Identity() for _ in range(depth)
        )
        self.act = make_activation(base)

    def hidden_stack(self, h1: Tensor) -> Tensor:
        """Last hidden pre-activation from the first: ``h1 = linears[0](x) -> linears[depth-1]``."""
        h = h1
        for layer in range(1, self.depth):
            h = self.linears[layer](self.act(self.norms[layer - 1](h)))
        return h

    def forward(self, x: Tensor) -> Tensor:
        h = self.hidden_stack(self.linears[0](x))
        return self.linears[self.depth](self.act(self.norms[self.depth - 1](h)))


def init_orthogonal(model: DeepMLP, gain: float, generator: torch.Generator) -> None:
    """Orthogonal weights (gain 1 on the input layer, ``gain`` after it), zero biases."""
    with torch.no_grad():
        for layer, linear in enumerate(model.linears):
            nn.init.orthogonal_(
                linear.weight, gain=1.0 if layer == 0 else gain, generator=generator
            )
            linear.bias.zero_()


def build_mlp(
    activation: str,
    depth: int,
    width: int,
    seed: int,
    *,
    input_dim: int = 3072,
    num_classes: int = 10,
    gain: float | None = None,
) -> DeepMLP:
    """A :class:`DeepMLP` on the CPU, initialized from ``seed`` (same seed, same weights)."""
    model = DeepMLP(input_dim, width, depth, num_classes, activation)
    generator = torch.Generator().manual_seed(stream_seed(seed, INIT_STREAM))
    init_orthogonal(model, default_gain(activation) if gain is None else gain, generator)
    return model


@dataclass(frozen=True)
class TensorData:
    """Standardized, flattened images and labels, already on the training device."""

    x_train: Tensor
    y_train: Tensor
    x_test: Tensor
    y_test: Tensor


def _uint8_channel_moments(images: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per-channel mean and standard deviation of (N, H, W, C) uint8 images, from histograms.

    The sums of at most 2^45 values below 256 are exact integers, so the mean is the
    correctly rounded quotient (numpy's float64 mean of the same values gives the same
    number: its partial sums are exact too); the variance is computed exactly (rationals)
    and rounded once, where numpy's two-pass float64 variance rounds at every term. Both
    cost one pass over the bytes instead of several float64 copies of the images.
    """
    from fractions import Fraction

    channels = images.shape[-1]
    flat = images.reshape(-1, channels)
    n = flat.shape[0]
    means, stds = np.empty(channels), np.empty(channels)
    for c in range(channels):
        counts = np.bincount(flat[:, c], minlength=256).tolist()
        total = sum(v * k for v, k in enumerate(counts))
        squares = sum(v * v * k for v, k in enumerate(counts))
        means[c] = total / n  # int / int: correctly rounded
        variance = Fraction(squares * n - total * total, n * n)
        stds[c] = math.sqrt(float(variance))
    return means, stds


def _scale(images: np.ndarray, mean: np.ndarray, std: np.ndarray) -> np.ndarray:
    """``float32((float32(x) - mean) / std)`` per channel, as flattened float32 rows.

    For uint8 images each channel has only 256 possible values: the same float64
    arithmetic on a (C, 256) table, then a gather, gives the same bits as on every pixel.
    """
    if images.dtype == np.uint8:
        values = np.arange(256, dtype=np.float32)[None, :]
        table = ((values - mean[:, None]) / std[:, None]).astype(np.float32)
        picked = table[np.arange(images.shape[-1]), images]
    else:
        picked = ((images.astype(np.float32) - mean) / std).astype(np.float32)
    return picked.reshape(len(images), -1)


def standardize_images(train: np.ndarray, test: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Flatten (N, H, W, C) images to float32 rows, standardized per channel with train stats."""
    if train.ndim != 4 or test.shape[1:] != train.shape[1:]:
        raise ValueError(
            f"images must be (N, H, W, C) with equal H, W, C; got {train.shape} and {test.shape}"
        )
    if train.dtype == np.uint8 and len(train):
        mean, std = _uint8_channel_moments(train)
    else:
        train_f = train.astype(np.float32)
        mean = train_f.mean(axis=(0, 1, 2), dtype=np.float64)
        std = train_f.std(axis=(0, 1, 2), dtype=np.float64)
    return _scale(train, mean, std), _scale(test, mean, std)


def load_arrays(path: str | os.PathLike[str]) -> tuple[dict[str, np.ndarray], bool]:
    """A processed dataset's four arrays, and whether it is a substitute (:func:`is_substitute`)."""
    return load_processed(path), is_substitute(path)


def prepare_data(
    arrays: Mapping[str, np.ndarray],
    n_train: int | None,
    n_test: int | None,
    seed: int,
    device: str | torch.device = "cpu",
) -> TensorData:
    """Subsample (seeded), standardize and move CIFAR-style arrays to ``device`` once.

    ``arrays`` holds ``x_train`` (N, 32, 32, 3) uint8, ``y_train`` int64, ``x_test``,
    ``y_test``; ``None`` keeps a whole split.
    """
    missing = {"x_train", "y_train", "x_test", "y_test"} - set(arrays)
    if missing:
        raise ValueError(f"data arrays lack {sorted(missing)}")
    rng = np.random.default_rng(stream_seed(seed, SUBSET_STREAM))
    picks = {}
    for split, size in (("train", n_train), ("test", n_test)):
        total = len(arrays[f"y_{split}"])
        if size is not None and not 1 <= size <= total:
            raise ValueError(f"n_{split} must be in [1, {total}] or None, got {size!r}")
        picks[split] = np.sort(rng.permutation(total)[:size]) if size else np.arange(total)
    x_train, x_test = standardize_images(
        arrays["x_train"][picks["train"]], arrays["x_test"][picks["test"]]
    )
    as_tensor = lambda a, dtype: torch.as_tensor(a, dtype=dtype).to(device)
    return TensorData(
        as_tensor(x_train, torch.float32),
        as_tensor(arrays["y_train"][picks["train"]], torch.int64),
        as_tensor(x_test, torch.float32),
        as_tensor(arrays["y_test"][picks["test"]], torch.int64),
    )


def start_cifar_job(
    smk: Any, n_train: int | None, n_test: int | None, seed: int, device: str = "cpu"
) -> tuple[Run, TensorData]:
    """What every CIFAR-10 job script does first, ``smk`` being its ``snakemake`` object.

    Uses the rule's threads, resolves ``device`` (auto, cpu or cuda), loads ``input.npz``,
    opens the job's :class:`~galu.provenance.Run` (recording the device and whether the
    data are a substitute), then subsamples and standardizes the images onto the device
    (:func:`prepare_data`).
    """
    torch.set_num_threads(smk.threads)
    resolved = resolve_device(device)
    arrays, substitute = load_arrays(smk.input.npz)
    run = Run.from_snakemake(smk, device=describe(resolved), extra={"data_substitute": substitute})
    return run, prepare_data(arrays, n_train, n_test, seed, resolved)


@dataclass(frozen=True)
class TrainSettings:
    """SGD-with-momentum settings; ``epochs`` full passes over the training set."""

    lr: float
    epochs: int
    batch_size: int = 128
    momentum: float = 0.9

    def __post_init__(self) -> None:
        if not self.lr > 0:
            raise ValueError(f"lr must be > 0, got {self.lr!r}")
        if self.epochs < 0:
            raise ValueError(f"epochs must be >= 0, got {self.epochs!r}")
        if self.batch_size < 2:  # batch norm needs two samples per batch
            raise ValueError(f"batch_size must be >= 2, got {self.batch_size!r}")
        if not 0 <= self.momentum < 1:
            raise ValueError(f"momentum must be in [0, 1), got {self.momentum!r}")


@torch.inference_mode()
def evaluate(model: nn.Module, x: Tensor, y: Tensor) -> tuple[float, float]:
    """Mean cross-entropy and error rate of ``model`` (in eval mode) on ``(x, y)``."""
    was_training = model.training
    model.eval()
    loss, wrong = 0.0, 0
    for start in range(0, len(y), EVAL_BATCH):
        logits = model(x[start : start + EVAL_BATCH])
        target = y[start : start + EVAL_BATCH]
        loss += F.cross_entropy(logits, target, reduction="sum").item()
        wrong += (logits.argmax(dim=1) != target).sum().item()
    model.train(was_training)
    return loss / len(y), wrong / len(y)


def _epoch_row(epoch: int, model: nn.Module, data: TensorData) -> dict[str, float]:
    train_loss, train_error = evaluate(model, data.x_train, data.y_train)
    test_loss, test_error = evaluate(model, data.x_test, data.y_test)
    return {
        "epoch": epoch,
        "train_loss": train_loss,
        "train_error": train_error,
        "test_loss": test_loss,
        "test_error": test_error,
    }


def train_epoch(
    model: nn.Module, opt: torch.optim.Optimizer, data: TensorData, batch: int, gen: torch.Generator
) -> None:
    """One pass in full minibatches (the remainder is skipped; reshuffling covers it)."""
    n = len(data.y_train)
    order = torch.randperm(n, generator=gen, device=data.y_train.device)
    model.train()
    for start in range(0, n - batch + 1, batch):
        idx = order[start : start + batch]
        loss = F.cross_entropy(model(data.x_train[idx]), data.y_train[idx])
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
    # No per-step NaN check: it would sync the GPU every batch, and a non-finite step
    # leaves non-finite weights that the epoch-end evaluation reports anyway.


def train(model: DeepMLP, data: TensorData, settings: TrainSettings, seed: int) -> pd.DataFrame:
    """Train ``model`` in place; one row per epoch (0 = at initialization).

    Columns: ``epoch, train_loss, train_error, test_loss, test_error, diverged``. A
    run whose loss becomes non-finite stops there: its last row is the last finite
    epoch and every row has ``diverged = True``.
    """
    if len(data.y_train) < settings.batch_size:
        raise ValueError(
            f"batch_size {settings.batch_size} exceeds the {len(data.y_train)} training samples"
        )
    device = data.x_train.device
    model.to(device)
    opt = torch.optim.SGD(model.parameters(), lr=settings.lr, momentum=settings.momentum)
    gen = torch.Generator(device=device).manual_seed(stream_seed(seed, SHUFFLE_STREAM))
    rows = [_epoch_row(0, model, data)]
    diverged = not math.isfinite(rows[0]["train_loss"])
    for epoch in range(1, settings.epochs + 1):
        if diverged:
            break
        train_epoch(model, opt, data, settings.batch_size, gen)
        rows.append(_epoch_row(epoch, model, data))
        diverged = not math.isfinite(rows[-1]["train_loss"])
        log_progress(
            f"depth {model.depth}, seed {seed}, epoch",
            epoch,
            settings.epochs,
            train_loss=rows[-1]["train_loss"],
            test_error=rows[-1]["test_error"],
        )
    frame = pd.DataFrame([r for r in rows if math.isfinite(r["train_loss"])], columns=list(rows[0]))
    frame["diverged"] = diverged
    return frame
