"""The ablation of the deep-MLP stage: does another optimizer, learning rate or
initialization gain make a network train at the depth where ReLU and the tilted ReLU part ways?

Richemond & Guo (arXiv 1905.01369, Sec. 4) train every activation at a tuned learning rate
and give neither their optimizer's settings nor their initialization. Here, per activation,
one network per (optimizer, learning rate, gain factor) trains at one depth and width from
one seed: the same orthogonal directions for every setting, scaled by ``factor x`` the
activation's critical gain (:func:`galu.normalization.mlp.default_gain`: a factor ``a``
multiplies one layer's Jacobian's mean squared singular value by ``a**2``). The optimizers
are the paper's SGD with momentum and Adam (Kingma & Ba, ICLR 2015) at its defaults. Each
optimizer's networks train together as one stack (:mod:`galu.normalization.stacked`), each as
it would alone, and every run is judged by the stage's criterion
(:func:`galu.normalization.trainability.run_outcomes`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import pandas as pd

from galu.normalization.cifar import TensorData
from galu.normalization.trainability import RUN_KEYS, run_outcomes

# The columns that name one run of the ablation.
ABLATION_KEYS = [*RUN_KEYS, "optimizer", "lr", "gain_factor"]


def ablation_curves(
    activation: str,
    data: TensorData,
    depth: int,
    width: int,
    lrs: Mapping[str, Sequence[float]],
    gain_factors: Sequence[float],
    epochs: int,
    seed: int,
    batch_size: int = 128,
    momentum: float = 0.9,
) -> pd.DataFrame:
    """Train one ``depth``-layer network per optimizer (the keys of ``lrs``), learning rate
    and gain factor; their curves, a row per network and epoch (0 = at initialization), with
    the :data:`ABLATION_KEYS`, the ``gain`` used and the columns of
    :func:`~galu.normalization.stacked.train_stacked`."""
    from galu.normalization.mlp import build_mlp, default_gain
    from galu.normalization.stacked import train_stacked

    critical = default_gain(activation)
    frames = []
    for optimizer, rates in lrs.items():
        settings = [(float(lr), float(f)) for lr in rates for f in gain_factors]
        models = [
            build_mlp(
                activation,
                depth,
                width,
                seed,
                input_dim=data.x_train.shape[1],
                gain=factor * critical,
            )  # fmt: skip
            for _, factor in settings
        ]
        curves = train_stacked(
            models,
            data,
            [lr for lr, _ in settings],
            [seed] * len(settings),
            epochs,
            batch_size,
            momentum,
            f"{activation} ablation, {optimizer}",
            optimizer=optimizer,
        )
        for (lr, factor), curve in zip(settings, curves, strict=True):
            label = {"activation": activation, "width": width, "depth": depth, "seed": seed}
            frames.append(
                curve.assign(
                    **label, optimizer=optimizer, lr=lr, gain_factor=factor, gain=factor * critical
                )  # fmt: skip
            )
    table = pd.concat(frames, ignore_index=True)
    front = [*ABLATION_KEYS, "gain", "epoch"]
    return table[front + [c for c in table.columns if c not in front]]


def ablation_table(curves: pd.DataFrame, fraction: float) -> pd.DataFrame:
    """One row per run of :func:`ablation_curves`: its gain, final test error and whether it
    trains by the stage's criterion at loss ``fraction``."""
    outcomes = run_outcomes(curves, fraction, keys=ABLATION_KEYS)
    gains = curves.drop_duplicates(ABLATION_KEYS)[[*ABLATION_KEYS, "gain"]]
    table = outcomes.merge(gains, on=ABLATION_KEYS, validate="one_to_one")
    table["loss_fraction"] = fraction
    front = [*ABLATION_KEYS, "gain"]
    return table[front + [c for c in table.columns if c not in front]]
