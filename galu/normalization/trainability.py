"""Which depths train: the criterion and the max trainable depth per activation.

Richemond & Guo (arXiv 1905.01369, Sec. 4, Fig. 4) report the depth up to which a
plain MLP still trains on CIFAR-10 (ReLU about 30 layers, tilted ReLU 60). The paper
gives no numeric criterion, so this module states one: a run **trains** if its
training loss falls below ``fraction`` times its reference loss within the epoch
budget, where the reference is the initial loss capped at chance level
``ln(num_classes)``. The cap matters: a deep ReLU net can start with large logits
(loss well above ln 10), and merely shrinking them to the uniform prediction must
not count as training. A run that diverged (non-finite loss) does not train.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

if TYPE_CHECKING:
    from galu.checkpoints import Checkpoint
    from galu.normalization.cifar import TensorData


def _check_fraction(fraction: float) -> None:
    if not 0 < fraction < 1:
        raise ValueError(f"loss fraction must be in (0, 1), got {fraction!r}")


def trains(
    losses: Sequence[float],
    fraction: float,
    chance_loss: float | None = None,
    diverged: bool = False,
) -> bool:
    """Does a training-loss curve (epoch 0 first) fall below ``fraction`` x reference?

    The reference is ``losses[0]``, capped at ``chance_loss`` when given. Any
    non-finite loss, or ``diverged``, means no.
    """
    _check_fraction(fraction)
    curve = np.asarray(losses, dtype=float)
    if curve.size < 2 or diverged or not np.all(np.isfinite(curve)):
        return False
    reference = curve[0] if chance_loss is None else min(curve[0], chance_loss)
    return bool(np.min(curve[1:]) < fraction * reference)


RUN_KEYS = ["activation", "width", "depth", "seed"]


def run_outcomes(
    curves: pd.DataFrame,
    fraction: float,
    num_classes: int = 10,
    keys: Sequence[str] = tuple(RUN_KEYS),
) -> pd.DataFrame:
    """One row per run of a ``trainability.csv`` table: did it train, and how far.

    ``curves`` has the contract columns plus ``diverged``; ``keys`` are the columns that name
    one run. Adds ``initial_loss``, ``best_loss``, ``loss_ratio`` (best / reference) and
    ``trains``.
    """
    _check_fraction(fraction)
    chance = math.log(num_classes)
    keys = list(keys)
    rows = []
    for key, run in curves.sort_values("epoch").groupby(keys, sort=True):
        losses = run["train_loss"].to_numpy(dtype=float)
        diverged = bool(run["diverged"].any()) if "diverged" in run else False
        reference = min(losses[0], chance)
        rows.append(
            {
                **dict(zip(keys, key, strict=True)),
                "epochs_run": int(run["epoch"].max()),
                "diverged": diverged,
                "initial_loss": float(losses[0]),
                "best_loss": float(np.min(losses)),
                "loss_ratio": float(np.min(losses[1:]) / reference) if losses.size > 1 else 1.0,
                "final_test_error": float(run["test_error"].iloc[-1]),
                "trains": trains(losses, fraction, chance, diverged),
            }
        )
    return pd.DataFrame(rows)


def max_trainable_depth(outcomes: pd.DataFrame, fraction: float) -> pd.DataFrame:
    """Per activation and width: the deepest depth that trains in at least half its seeds.

    ``max_trainable_depth`` is 0 when no tested depth trains. ``depths_tested``
    and ``depths_trained`` list the evidence (space-separated).
    """
    per_depth = (
        outcomes.groupby(["activation", "width", "depth"], sort=True)["trains"]
        .mean()
        .reset_index(name="fraction_of_seeds")
    )
    per_depth["trains"] = per_depth["fraction_of_seeds"] >= 0.5
    rows = []
    for (activation, width), group in per_depth.groupby(["activation", "width"], sort=True):
        trained = group.loc[group["trains"], "depth"].tolist()
        rows.append(
            {
                "activation": activation,
                "width": int(width),
                "max_trainable_depth": int(max(trained, default=0)),
                "depths_tested": " ".join(str(d) for d in group["depth"]),
                "depths_trained": " ".join(str(d) for d in trained),
                "loss_fraction": fraction,
            }
        )
    return pd.DataFrame(rows)


# The loss fractions at which the trainability verdicts are judged again, to show how far they
# depend on the criterion's one free number (the claims' `robustness`, workflow/claims.yaml).
FRACTION_GRID = tuple(round(0.05 * i, 2) for i in range(1, 20))


def max_depth_by_fraction(
    curves: pd.DataFrame, fractions: Sequence[float] = FRACTION_GRID
) -> pd.DataFrame:
    """:func:`max_trainable_depth` once per loss fraction of ``fractions`` (0.05 to 0.95 by
    default): the same runs, judged by each threshold."""
    return pd.concat(
        [max_trainable_depth(run_outcomes(curves, f), f) for f in fractions], ignore_index=True
    )


@dataclass(frozen=True)
class DepthRuns:
    """Everything one (activation, depth) job measures, as tidy tables."""

    curves: pd.DataFrame
    spectra: pd.DataFrame
    jacobian: pd.DataFrame


def train_depth(
    activation: str,
    depth: int,
    data: TensorData,
    lrs: Mapping[int, float],
    seeds: Iterable[int],
    epochs: int,
    batch_size: int = 128,
    momentum: float = 0.9,
    spectra: bool = False,
    jacobian_samples: int = 0,
    checkpoints: Callable[[int], Checkpoint] | None = None,
) -> DepthRuns:
    """Train one network per width (the keys of ``lrs``, each with its swept lr) and seed.

    The seeds of one width train together as one stacked network
    (:func:`galu.normalization.stacked.train_stacked`), each as it would alone. With
    ``spectra``, the per-layer ``W W^T`` eigenvalues at init and after training and the
    Jacobian spectra at init (on the first ``jacobian_samples`` test images) are kept.
    ``checkpoints(width)``: where the training of that width saves its state (a long job
    killed, e.g. by a sitting's end, goes on from it; the numbers are the same).
    """
    # Imported here, not at the top: the jobs that only tabulate the curves (trainability,
    # spectra) then start without torch (about 1.7 s of CPU each).
    from galu.normalization.mlp import build_mlp, default_gain
    from galu.normalization.spectra import jacobian_table, spectra_table
    from galu.normalization.stacked import train_stacked

    seeds = list(seeds)
    curves, layers, jacobians = [], [], []
    for width, lr in sorted(lrs.items()):
        labels = [
            {"activation": activation, "width": width, "depth": depth, "seed": s} for s in seeds
        ]
        models = [
            build_mlp(activation, depth, width, s, input_dim=data.x_train.shape[1]) for s in seeds
        ]
        at_init = []
        for model, label in zip(models, labels, strict=True):
            model.to(data.x_train.device)
            if spectra:
                at_init.append(spectra_table(model, "init", label))
                batch = data.x_test[:jacobian_samples]
                jacobians.append(jacobian_table(model, batch, label))
        trained = train_stacked(
            models,
            data,
            [lr] * len(seeds),
            seeds,
            epochs,
            batch_size,
            momentum,
            f"{activation} depth {depth} width {width}",
            checkpoint=checkpoints(width) if checkpoints else None,
        )
        for model, label, curve in zip(models, labels, trained, strict=True):
            curves.append(curve.assign(**label, lr=lr, gain=default_gain(activation)))
            if spectra:  # each network's init then trained rows, as before
                layers += [at_init.pop(0), spectra_table(model, "trained", label)]
    front = ["activation", "width", "depth", "seed", "epoch"]
    table = pd.concat(curves, ignore_index=True)
    return DepthRuns(
        curves=table[front + [c for c in table.columns if c not in front]],
        spectra=_concat(layers, SPECTRA_COLUMNS),
        jacobian=_concat(jacobians, JACOBIAN_COLUMNS),
    )


SPECTRA_COLUMNS = [*RUN_KEYS, "layer", "stage", "index", "eigenvalue"]
JACOBIAN_COLUMNS = [*RUN_KEYS, "sample", "index", "squared_singular_value"]


def _concat(frames: list[pd.DataFrame], columns: list[str]) -> pd.DataFrame:
    """Concatenate, or an empty table with the right header when nothing was kept."""
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=columns)
