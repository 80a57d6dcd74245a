"""Train a list of networks as one ensemble and score every member.

Fiat et al. (arXiv 1906.05032), section 5 trains many small networks (models, widths,
seeds, learning rates, gate scales). Here they all go through one
:func:`galu.ensembles.training.train_ensemble` call with Adam: member-wise learning rates are
realised by the parameter scaling of :mod:`galu.generalization.models`, member ``e``'s
minibatch order comes from its own seed. Errors: the arg-max class for several outputs,
the sign for one output (binary labels +-1; an output of exactly 0 counts as wrong).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch
from torch import Tensor

from galu.ensembles.training import (
    EVAL_BATCH,
    EnsembleSettings,
    TrainResult,
    loss_function,
    outputs_and_losses,
    train_ensemble,
)
from galu.generalization.models import MemberSpec, MemberStack, build_ensemble


@dataclass(frozen=True)
class Fit:
    """A trained stack and its training record.

    Output member ``i`` is ``stack.members[i]``, the spec at index ``order[i]`` of the
    list given to :func:`train_members`.
    """

    stack: MemberStack
    result: TrainResult
    order: np.ndarray


def train_members(
    members: Sequence[MemberSpec],
    x: Tensor,
    y: Tensor,
    loss: str,
    steps: int,
    batch_size: int | None,
    depth: int,
    out_dim: int,
    pad_widths: bool = True,
    device: str = "cpu",
) -> Fit:
    """Build ``members`` (:func:`build_ensemble`) and train them together with Adam.

    ``x``/``y`` are shared ``(n, d)``/``(n, ...)`` or per member (in the order of
    ``members``, which this reorders consistently with the stack). ``loss`` is a name
    from :data:`galu.ensembles.training.LOSSES`.
    """
    base_lr = max(m.lr for m in members)
    stack = build_ensemble(members, x.shape[-1], out_dim, depth, base_lr, pad_widths).to(device)
    order = _reorder(members, stack.members)
    if x.dim() == 3:
        x, y = x[order], y[order]
    settings = EnsembleSettings(steps=steps, lr=base_lr, batch_size=batch_size, optimizer="adam")
    seeds = [m.seed for m in stack.members]
    # The final pass's outputs are kept for training_scores (one pass over the data, not two).
    result = train_ensemble(
        stack, loss_function(loss), x, y, seeds, settings, device, keep_outputs=True
    )
    return Fit(stack, result, order.numpy())


def _reorder(original: Sequence[MemberSpec], ordered: Sequence[MemberSpec]) -> Tensor:
    """Index into ``original`` for each member of ``ordered`` (specs may repeat)."""
    slots: dict[MemberSpec, list[int]] = {}
    for i, spec in enumerate(original):
        slots.setdefault(spec, []).append(i)
    return torch.tensor([slots[spec].pop(0) for spec in ordered])


def error_rates(outputs: Tensor, y: Tensor) -> np.ndarray:
    """Per-member error rate of ``outputs`` ``(E, n, C)`` against labels ``y``.

    ``C > 1``: integer classes, error when the arg-max differs. ``C = 1``: error when
    ``sign(output) != sign(y)`` (for +-1 labels, ``sign(y) = y``). ``y`` is ``(n,)``
    shared or ``(E, n)`` per member.
    """
    if outputs.dim() != 3:
        raise ValueError(f"outputs must be (members, n, outputs), got {tuple(outputs.shape)}")
    if outputs.shape[-1] > 1:
        wrong = outputs.argmax(dim=-1) != y
    else:
        wrong = torch.sign(outputs[..., 0]) != torch.sign(y.to(outputs.dtype))
    return wrong.double().mean(dim=1).cpu().numpy()


def scores(fit: Fit, loss: str, x: Tensor, y: Tensor) -> tuple[np.ndarray, np.ndarray]:
    """Per-member ``(loss, error rate)`` on ``(x, y)``; NaN for diverged members.

    ``x``/``y`` shared or per member in the stack's order. Losses are the training
    objective's (mean cross-entropy, hinge or squared error); for a squared-error model
    the "error" is the rate of sign disagreement between output and target.
    """
    device = next(fit.stack.parameters()).device
    x, y = x.to(device), y.to(device)
    outputs, member_loss = outputs_and_losses(fit.stack, loss_function(loss), x, y, EVAL_BATCH)
    return _masked_scores(fit, outputs, member_loss, x.dim(), y)


def training_scores(fit: Fit, x: Tensor, y: Tensor) -> tuple[np.ndarray, np.ndarray]:
    """:func:`scores` on the training data ``(x, y)`` the fit was trained on, from the
    outputs of the trainer's own final pass over them (no second forward pass).

    That pass chunks the data as :func:`scores` does (``EVAL_BATCH``) and computes the same
    loss, so the numbers are bit for bit those of ``scores(fit, loss, x, y)``. The kept
    outputs are released here.
    """
    outputs, fit.result.final_outputs = fit.result.final_outputs, None
    if outputs is None:
        raise ValueError("the fit kept no final outputs (train_members keeps them)")
    device = outputs.device
    member_loss = torch.from_numpy(fit.result.final_loss)
    return _masked_scores(fit, outputs, member_loss, x.dim(), y.to(device))


def _masked_scores(
    fit: Fit, outputs: Tensor, member_loss: Tensor, x_dim: int, y: Tensor
) -> tuple[np.ndarray, np.ndarray]:
    losses = member_loss.double().cpu().numpy()
    # Squared-error targets carry a trailing output axis of size 1; labels do not.
    labels = y[..., 0] if y.dim() == x_dim else y
    errors = error_rates(outputs, labels)
    bad = fit.result.diverged | ~np.isfinite(losses)
    return np.where(bad, np.nan, losses), np.where(bad, np.nan, errors)
