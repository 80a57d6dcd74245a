"""The learning-rate sweep of the deep-MLP stage (Richemond & Guo, arXiv 1905.01369, Sec. 4).

The paper trains every activation at a tuned learning rate. Per activation and width, one
network per candidate rate trains from the same initial weights and batch order; the rate
with the lowest final training loss among those that did not diverge is chosen, and the
trainability jobs train every depth at it.
"""

from __future__ import annotations

from collections.abc import Iterable

import pandas as pd

from galu.normalization.cifar import TensorData
from galu.normalization.mlp import build_mlp
from galu.normalization.stacked import train_stacked


def lr_sweep(
    activation: str,
    data: TensorData,
    lrs: Iterable[float],
    depth: int,
    width: int,
    epochs: int,
    seed: int,
    batch_size: int = 128,
    momentum: float = 0.9,
) -> pd.DataFrame:
    """Train a ``depth``-layer net once per learning rate; one row per lr.

    The same seed (same initial weights and batch order) for every lr, so the rows
    differ only by the lr. ``chosen`` marks :func:`choose_lr`'s pick. The networks train
    together as one stacked network (:func:`galu.normalization.stacked.train_stacked`:
    each exactly as alone, up to float rounding, in a fraction of the time).
    """
    lrs = [float(lr) for lr in lrs]
    models = [
        build_mlp(activation, depth, width, seed, input_dim=data.x_train.shape[1]) for _ in lrs
    ]
    curves = train_stacked(
        models, data, lrs, [seed] * len(lrs), epochs, batch_size, momentum, f"{activation} sweep"
    )
    rows = []
    for lr, curve in zip(lrs, curves, strict=True):
        last = curve.iloc[-1]
        rows.append(
            {
                "activation": activation,
                "width": width,
                "depth": depth,
                "seed": seed,
                "lr": float(lr),
                "epochs": epochs,
                "initial_train_loss": float(curve["train_loss"].iloc[0]),
                "final_train_loss": float(last["train_loss"]),
                "final_train_error": float(last["train_error"]),
                "diverged": bool(last["diverged"]),
            }
        )
    table = pd.DataFrame(rows)
    table["chosen"] = table["lr"] == choose_lr(table)
    return table


def chosen_lrs(sweep: pd.DataFrame) -> dict[int, float]:
    """Width -> the lr a sweep table (one or more widths) marked ``chosen``."""
    picked = sweep[sweep["chosen"].astype(bool)]
    if picked["width"].duplicated().any() or picked.empty:
        raise ValueError("a sweep table needs exactly one chosen lr per width")
    return {int(w): float(lr) for w, lr in zip(picked["width"], picked["lr"], strict=True)}


def choose_lr(sweep: pd.DataFrame) -> float:
    """The lr with the lowest final training loss among runs that did not diverge."""
    ok = sweep[~sweep["diverged"].astype(bool)]
    if ok.empty:
        raise ValueError(
            f"every learning rate in {sorted(sweep['lr'])} diverged; add smaller ones to the sweep"
        )
    return float(ok.loc[ok["final_train_loss"].idxmin(), "lr"])
