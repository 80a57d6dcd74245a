"""Adam's update as torch's fused kernel computes it, without ``torch.optim``'s wrapper.

The ensemble trainer (:mod:`galu.ensembles.training`) takes thousands of small steps. With
``torch.optim.Adam(fused=True)`` each step spends about 20 us in the fused kernel and
about 70 us more in the optimizer's Python bookkeeping (hooks, grouping by device and
dtype, profiler records), and building the optimizer imports ``torch._dynamo`` (about a
second per job). :class:`FusedAdam` keeps the same state (first and second moments, a
float32 step count per tensor, as torch's fused path keeps them) and makes the same two
calls, ``_foreach_add_`` on the step counts and ``torch._fused_adam_``, so every update is
bit for bit torch's (``tests/test_ensembles_training.py`` checks it). Where the fused
kernel is missing (an old torch), a tensor is not on a CPU or CUDA device, or the tensors
differ in device or dtype, :func:`adam` returns ``torch.optim.Adam`` itself.
"""

from __future__ import annotations

import torch
from torch import Tensor, nn

BETAS = (0.9, 0.999)  # torch.optim.Adam's defaults, which the trainer has always used
EPS = 1e-8


def _zeros_like(tensors: list[Tensor]) -> list[Tensor]:
    return [torch.zeros_like(t, memory_format=torch.preserve_format) for t in tensors]


class FusedAdam:
    """``torch.optim.Adam(params, lr, weight_decay=weight_decay, fused=True)``'s updates."""

    def __init__(self, params: list[nn.Parameter], lr: float, weight_decay: float = 0.0) -> None:
        self.params, self.lr, self.weight_decay = params, float(lr), float(weight_decay)
        self.exp_avgs, self.exp_avg_sqs = _zeros_like(params), _zeros_like(params)
        self.steps = [torch.zeros((), dtype=torch.float32, device=p.device) for p in params]

    def zero_grad(self) -> None:
        """Drop the gradients, as torch's ``zero_grad()`` (``set_to_none=True``) does."""
        for p in self.params:
            p.grad = None

    def step(self) -> None:
        """One update of every tensor that has a gradient (torch skips the others too)."""
        have = [i for i, p in enumerate(self.params) if p.grad is not None]
        if not have:
            return
        pick = lambda tensors: [tensors[i] for i in have]  # noqa: E731 (a local helper)
        steps = pick(self.steps)
        torch._foreach_add_(steps, 1)
        torch._fused_adam_(
            pick(self.params),
            [self.params[i].grad for i in have],
            pick(self.exp_avgs),
            pick(self.exp_avg_sqs),
            [],
            steps,
            amsgrad=False,
            lr=self.lr,
            beta1=BETAS[0],
            beta2=BETAS[1],
            weight_decay=self.weight_decay,
            eps=EPS,
            maximize=False,
            grad_scale=None,
            found_inf=None,
        )


def fusable(params: list[Tensor]) -> bool:
    """Whether torch's fused kernels take these tensors (floating, CPU or CUDA)."""
    return all(p.is_floating_point() and p.device.type in ("cpu", "cuda") for p in params)


def adam(params: list[nn.Parameter], lr: float, weight_decay: float = 0.0) -> object:
    """:class:`FusedAdam` where the fused kernel exists and takes the tensors, else torch's
    Adam (fused when it can be); both expose ``zero_grad`` and ``step``."""
    # One call covers one device and dtype; torch's Adam groups mixed tensors itself.
    alike = len({(p.device, p.dtype) for p in params}) == 1
    if hasattr(torch, "_fused_adam_") and alike and fusable(params):
        return FusedAdam(params, lr, weight_decay)
    return torch.optim.Adam(params, lr=lr, weight_decay=weight_decay, fused=fusable(params))
