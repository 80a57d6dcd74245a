"""Training of one deep plain MLP (Richemond & Guo, arXiv 1905.01369, Sec. 4): softmax
cross-entropy by SGD with momentum (or Adam, for the ablation), no regularization, in full
minibatches of data that stay on the device; one row of losses and errors per epoch.

The workflow does not train with :func:`train`: its jobs train many networks at once with
:mod:`galu.normalization.stacked`, which takes its settings (:class:`TrainSettings`) and
evaluation batch from here. :func:`train` is the one-network reference that
``tests/test_normalization_stacked.py`` holds the stacked trainer to and that
``benchmarks/deep_mlp.py`` measures it against.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import pandas as pd
import torch
import torch.nn.functional as F
from torch import Tensor, nn

from galu.normalization.cifar import TensorData
from galu.normalization.mlp import DeepMLP
from galu.progress import log_progress
from galu.seeding import derive_seed

EVAL_BATCH = 4096
OPTIMIZERS = ("sgd", "adam")


@dataclass(frozen=True)
class TrainSettings:
    """Optimizer settings; ``epochs`` full passes over the training set. ``optimizer`` is
    ``sgd`` (with ``momentum``, the paper's) or ``adam`` (its defaults; the ablation's)."""

    lr: float
    epochs: int
    batch_size: int = 128
    momentum: float = 0.9
    optimizer: str = "sgd"

    def __post_init__(self) -> None:
        if not self.lr > 0:
            raise ValueError(f"lr must be > 0, got {self.lr!r}")
        if self.epochs < 0:
            raise ValueError(f"epochs must be >= 0, got {self.epochs!r}")
        if self.batch_size < 2:  # batch norm needs two samples per batch
            raise ValueError(f"batch_size must be >= 2, got {self.batch_size!r}")
        if not 0 <= self.momentum < 1:
            raise ValueError(f"momentum must be in [0, 1), got {self.momentum!r}")
        if self.optimizer not in OPTIMIZERS:
            raise ValueError(
                f"unknown optimizer {self.optimizer!r}; choose one of: {', '.join(OPTIMIZERS)}"
            )


@torch.inference_mode()
def loss_and_error(model: nn.Module, x: Tensor, y: Tensor) -> tuple[float, float]:
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
    train_loss, train_error = loss_and_error(model, data.x_train, data.y_train)
    test_loss, test_error = loss_and_error(model, data.x_test, data.y_test)
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
    # drawn on the CPU (gen is a CPU generator), so every device sees the same minibatches
    order = torch.randperm(n, generator=gen).to(data.y_train.device)
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
    if settings.optimizer == "adam":
        opt = torch.optim.Adam(model.parameters(), lr=settings.lr)
    else:
        opt = torch.optim.SGD(model.parameters(), lr=settings.lr, momentum=settings.momentum)
    gen = torch.Generator().manual_seed(derive_seed(seed, "batches"))
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
