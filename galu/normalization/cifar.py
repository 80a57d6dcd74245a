"""CIFAR-10 prepared for the deep-MLP experiments (Richemond & Guo, arXiv 1905.01369, Sec. 4).

A seeded subset of each split, flattened and standardized per channel with the training
split's statistics, moved to the training device once: the data stay there for the whole
run, so each epoch draws one permutation there and slices minibatches from device tensors
(no per-batch host copies).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
import torch
from torch import Tensor

from galu.seeding import derive_seed


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
    rng = np.random.default_rng(derive_seed(seed, "subset"))
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
