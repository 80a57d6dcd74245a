"""Train many independent networks at once as one tensor program.

Every GaLU/ReLU training of the project (Fiat, Malach & Shalev-Shwartz, arXiv 1906.05032,
sections 3 and 5) goes through :func:`train_ensemble`. An *ensemble model* is any
``torch.nn.Module`` whose trainable parameters all carry a leading member dimension ``E``
and whose forward maps ``(E, B, ...)`` (or shared ``(B, ...)``) inputs to ``(E, B, ...)``
outputs using only per-member (batched) operations, so member ``e``'s output and
gradients depend on member ``e``'s parameters alone. :mod:`galu.ensembles.networks` provides such
models; later stages may bring their own.

Why this reproduces training each member alone: the total loss is the *sum* of the
per-member mean losses, so each member's gradient is exactly its own loss's gradient;
Adam and SGD are elementwise, so their updates do not mix members; and each member's
minibatch order comes from its own seed. Members that diverge (non-finite loss) are
recorded with the step and masked out of the sum; the others keep training.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F
from torch import Tensor, nn
from tqdm.auto import tqdm

from galu.ensembles.fused_adam import adam, fusable
from galu.progress import Throttle, log_progress
from galu.seeding import derive_seed

LossFn = Callable[[Tensor, Tensor], Tensor]
OPTIMIZERS = ("adam", "sgd")
# Indices drawn per refill of the minibatch sampler: large enough that the per-member
# Python loop runs rarely, small enough to stay a few tens of MB.
_SAMPLER_CHUNK = 1 << 20
# Largest encoded data set (elements) kept for training when it is larger than the data
# itself (512 MiB in float32); beyond it the model's plain forward runs at every step.
_ENCODED_LIMIT = 1 << 27
# Samples per forward pass when whole data sets are evaluated (predict, losses, scores).
EVAL_BATCH = 4096


def mse_loss(output: Tensor, target: Tensor) -> Tensor:
    """Per-member mean squared error over batch and outputs, ``(E,)``."""
    return (output - target).square().flatten(1).mean(dim=1)


def padded_mse_loss(out_dims: Sequence[int]) -> LossFn:
    """Per-member MSE over each member's own ``out_dims[e]`` outputs (the rest zero-padded).

    Padded output columns hold zero outputs and zero targets, so they add nothing to the
    sum; dividing by the member's own output count makes the loss (and its gradient)
    exactly that of the unpadded member.
    """
    counts = torch.tensor([float(o) for o in out_dims])

    def loss(output: Tensor, target: Tensor) -> Tensor:
        total = (output - target).square().sum(dim=2).mean(dim=1)
        return total / counts.to(device=total.device, dtype=total.dtype)

    return loss


def cross_entropy_loss(output: Tensor, target: Tensor) -> Tensor:
    """Per-member mean cross-entropy: logits ``(E, B, C)``, integer classes ``(E, B)``."""
    members, batch, classes = output.shape
    flat = F.cross_entropy(output.reshape(-1, classes), target.reshape(-1), reduction="none")
    return flat.view(members, batch).mean(dim=1)


def hinge_loss(output: Tensor, target: Tensor) -> Tensor:
    """Per-member mean hinge loss ``[1 - y f(x)]_+`` for labels ``y`` in {-1, +1}."""
    margin = output.reshape(target.shape) * target
    return torch.relu(1.0 - margin).flatten(1).mean(dim=1)


LOSSES: dict[str, LossFn] = {
    "mse": mse_loss,
    "cross_entropy": cross_entropy_loss,
    "hinge": hinge_loss,
}


def loss_function(name: str) -> LossFn:
    """Look up a per-member loss by name (``mse``, ``cross_entropy``, ``hinge``)."""
    if name not in LOSSES:
        raise ValueError(f"loss must be one of {tuple(LOSSES)}, got {name!r}")
    return LOSSES[name]


@dataclass(frozen=True)
class EnsembleSettings:
    """Optimizer and loop settings shared by all members of one ensemble.

    ``batch_size=None`` (or one at least the sample count) trains on the full batch.
    ``record_every=r > 0`` keeps every r-th step's minibatch losses in the history.
    """

    steps: int
    lr: float
    batch_size: int | None = None
    optimizer: str = "adam"
    momentum: float = 0.0
    weight_decay: float = 0.0
    record_every: int = 0
    progress: bool = False
    description: str = "ensemble"

    def __post_init__(self) -> None:
        if self.steps < 0:
            raise ValueError(f"steps must be >= 0, got {self.steps!r}")
        if not self.lr > 0:
            raise ValueError(f"lr must be > 0, got {self.lr!r}")
        if self.batch_size is not None and self.batch_size < 1:
            raise ValueError(f"batch_size must be >= 1 or None, got {self.batch_size!r}")
        if self.optimizer not in OPTIMIZERS:
            raise ValueError(f"optimizer must be one of {OPTIMIZERS}, got {self.optimizer!r}")
        if self.momentum < 0 or self.weight_decay < 0 or self.record_every < 0:
            raise ValueError(
                "momentum, weight_decay and record_every must be >= 0, got "
                f"{self.momentum!r}, {self.weight_decay!r}, {self.record_every!r}"
            )


@dataclass
class TrainResult:
    """Outcome per member.

    ``final_loss`` is the full-data training loss after the last step (NaN for a
    diverged member); ``diverged_step[e]`` is the first step whose minibatch loss was
    not finite, -1 if none; ``history_loss[r, e]`` is member e's minibatch loss at step
    ``history_steps[r]`` (before that step's update).
    """

    final_loss: np.ndarray
    diverged_step: np.ndarray
    history_steps: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    history_loss: np.ndarray = field(default_factory=lambda: np.zeros((0, 0)))
    seconds: float = 0.0
    # The outputs ``(E, n, ...)`` of the pass that gave ``final_loss``, when the caller
    # asked for them (``train_ensemble(keep_outputs=True)``); None otherwise.
    final_outputs: Tensor | None = field(default=None, repr=False)

    @property
    def diverged(self) -> np.ndarray:
        return self.diverged_step >= 0


class MemberBatches:
    """Endless per-member minibatch indices, ``(E, B)`` per step.

    Member e walks through a stream of random permutations of ``range(n[e])`` drawn from
    its own seed, ``batch_size`` indices per step; batches may straddle two
    permutations, so every step has the same size and the stream does not depend on the
    other members or on how it is chunked. ``n`` is one sample count for all members or
    one per member (members whose data are padded to a common length).
    """

    def __init__(
        self,
        n: int | Sequence[int],
        batch_size: int,
        seeds: Sequence[int],
        device: torch.device,
        steps: int | None = None,
    ) -> None:
        self.ns = [int(n)] * len(seeds) if isinstance(n, int | np.integer) else [int(v) for v in n]
        self.batch_size, self.device = batch_size, device
        self._gens = [torch.Generator().manual_seed(derive_seed(s, "batches")) for s in seeds]
        self._left = [torch.zeros(0, dtype=torch.long) for _ in seeds]
        # Refill in chunks of at most ~64 epochs and _SAMPLER_CHUNK indices, never drawing
        # (many) more steps than the run will take.
        limits = [_SAMPLER_CHUNK // (len(seeds) * batch_size), 64 * max(self.ns) // batch_size]
        self._steps_per_chunk = max(1, min(limits + ([steps] if steps is not None else [])))

    def _member_chunk(self, e: int, count: int) -> Tensor:
        have, n = self._left[e], self.ns[e]
        perms = -(-(count - have.numel()) // n)
        if perms > 0:
            fresh = [torch.randperm(n, generator=self._gens[e]) for _ in range(perms)]
            have = torch.cat([have, *fresh])
        self._left[e] = have[count:]
        return have[:count]

    def __iter__(self) -> Iterator[Tensor]:
        while True:
            count = self._steps_per_chunk * self.batch_size
            chunk = torch.stack([self._member_chunk(e, count) for e in range(len(self._gens))])
            chunk = chunk.view(len(self._gens), self._steps_per_chunk, self.batch_size)
            chunk = chunk.to(self.device)
            for t in range(self._steps_per_chunk):
                yield chunk[:, t]


def _plan_in_order(
    order: Sequence[int], sizes: Sequence[Sequence[int]], overhead: float
) -> tuple[float, list[list[int]]]:
    """Cheapest cut of ``order`` into contiguous runs (dynamic programming), and its cost."""
    best = [0.0] + [math.inf] * len(order)
    cut = [0] * (len(order) + 1)
    for end in range(1, len(order) + 1):
        peak = [0] * len(sizes[order[end - 1]])
        for begin in range(end - 1, -1, -1):
            peak = [max(p, v) for p, v in zip(peak, sizes[order[begin]], strict=True)]
            cost = best[begin] + overhead + (end - begin) * math.prod(peak)
            if cost <= best[end]:  # ties go to the larger ensemble
                best[end], cut[end] = cost, begin
    plan, end = [], len(order)
    while end > 0:
        plan.append(sorted(order[cut[end] : end]))
        end = cut[end]
    return best[-1], plan[::-1]


def plan_ensembles(sizes: Sequence[Sequence[int]], overhead: float) -> list[list[int]]:
    """Split members into ensembles that minimize padded work plus per-ensemble overhead.

    ``sizes[e]`` lists member e's padded dimensions (e.g. width and input + output size);
    an ensemble's work per step is its member count times the product of the per-dimension
    maxima, and every ensemble adds ``overhead`` (the fixed cost of a step, in the same
    units). Members are ordered and cut into contiguous runs by dynamic programming,
    which is optimal for one dimension. With several dimensions no one order is: members
    of equal work can differ in shape (width 32 on 8 inputs, width 8 on 32), and padding
    them together costs four times their work. So the cut is made in the order of the
    members' own work and in the order of each dimension first, and the cheapest plan is
    kept (the first of equals). Returns lists of member indices.
    """
    if overhead < 0:
        raise ValueError(f"overhead must be >= 0, got {overhead!r}")
    members = range(len(sizes))
    work = [(math.prod(s), tuple(s)) for s in sizes]
    keys = [lambda e: work[e]]
    keys += [lambda e, i=i: (sizes[e][i], *work[e]) for i in range(len(sizes[0]) if sizes else 0)]
    plans = [_plan_in_order(sorted(members, key=key), sizes, overhead) for key in keys]
    return min(plans, key=lambda cost_plan: cost_plan[0])[1]


def _check_data(x: Tensor, y: Tensor, members: int) -> bool:
    """Validate shapes; return True when the data are shared by all members."""
    if x.dim() == 2:
        if y.shape[0] != x.shape[0]:
            raise ValueError(f"shared x has {x.shape[0]} samples but y has {y.shape[0]}")
        return True
    if x.dim() == 3 and x.shape[0] == members and y.shape[:2] == x.shape[:2]:
        return False
    raise ValueError(
        "x must be (n, d) shared by all members with y (n, ...), or (members, n, d) with "
        f"y (members, n, ...); got x {tuple(x.shape)}, y {tuple(y.shape)}, {members} members"
    )


def _take(data: Tensor, idx: Tensor, shared: bool, offsets: Tensor) -> Tensor:
    """Rows ``idx`` ``(E, B)`` of shared ``(n, ...)`` or per-member ``(E, n, ...)`` data."""
    if shared:
        return data[idx]
    # One flat index_select is several times faster than 2-D advanced indexing on CPU.
    flat = data.reshape(-1, *data.shape[2:])
    picked = flat.index_select(0, (idx + offsets).reshape(-1))
    return picked.view(*idx.shape, *data.shape[2:])


def _optimizer(params: list[nn.Parameter], settings: EnsembleSettings) -> Any:
    # The fused kernels update all elements in one pass (tens of times faster than the
    # per-tensor CPU default here) and are elementwise like it, so members stay independent.
    if settings.optimizer == "adam":
        return adam(params, settings.lr, settings.weight_decay)
    return torch.optim.SGD(
        params,
        lr=settings.lr,
        momentum=settings.momentum,
        weight_decay=settings.weight_decay,
        fused=fusable(params),
    )


def _device_of(model: nn.Module, device: torch.device | str | None) -> torch.device:
    if device is not None:
        model.to(device)
        return torch.device(device)
    return next(model.parameters()).device


@torch.no_grad()
def predict(model: nn.Module, x: Tensor, batch_size: int = EVAL_BATCH) -> Tensor:
    """Model outputs for all samples, in chunks of ``batch_size`` along the sample axis."""
    axis = x.dim() - 2
    parts = [model(chunk) for chunk in x.split(batch_size, dim=axis)]
    return torch.cat(parts, dim=1)


@torch.no_grad()
def outputs_and_losses(
    model: nn.Module,
    loss_fn: LossFn,
    x: Tensor,
    y: Tensor,
    batch_size: int = EVAL_BATCH,
    keep_outputs: bool = True,
) -> tuple[Tensor | None, Tensor]:
    """Model outputs for all samples (as :func:`predict`) and the per-member loss on the
    whole data set (as :func:`member_losses`), from one pass over the data.

    The chunks are those of :func:`predict` with the same ``batch_size``, so both results
    are bit for bit what the two functions return; scoring a data set needs one forward
    pass instead of two. ``loss_fn`` must average over B. Outputs are None unless kept.
    """
    shared = x.dim() == 2
    axis = 0 if shared else 1
    total, count, parts = 0.0, 0, []
    for xb, yb in zip(x.split(batch_size, axis), y.split(batch_size, axis), strict=True):
        out = model(xb)
        if keep_outputs:
            parts.append(out)
        yb = yb.expand(out.shape[0], *yb.shape) if shared else yb
        total = total + loss_fn(out, yb) * xb.shape[axis]
        count += xb.shape[axis]
    return (torch.cat(parts, dim=1) if keep_outputs else None), total / count


def member_losses(
    model: nn.Module, loss_fn: LossFn, x: Tensor, y: Tensor, batch_size: int = EVAL_BATCH
) -> Tensor:
    """Per-member loss on the whole data set, ``(E,)``; ``loss_fn`` must average over B."""
    return outputs_and_losses(model, loss_fn, x, y, batch_size, keep_outputs=False)[1]


def _sample_counts(n: int, n_samples: Sequence[int] | None, members: int) -> list[int]:
    if n_samples is None:
        return [n] * members
    counts = [int(v) for v in n_samples]
    if len(counts) != members or not all(1 <= v <= n for v in counts):
        raise ValueError(
            f"n_samples must give one count in [1, {n}] per member ({members}), "
            f"got {list(n_samples)!r}"
        )
    return counts


def _batch_source(
    x: Tensor,
    y: Tensor,
    shared: bool,
    counts: list[int],
    seeds: Sequence[int],
    settings: EnsembleSettings,
) -> Callable[[], tuple[Tensor, Tensor]]:
    """A function returning the next step's ``(xb, yb)``, ``(E, B, ...)`` each."""
    members, n = len(seeds), x.shape[0] if shared else x.shape[1]
    if settings.batch_size is None or settings.batch_size >= n:
        if min(counts) < n:
            raise ValueError(
                "full-batch training needs every member to use all rows; with padded data "
                f"(n_samples {counts}) set batch_size below {n}"
            )
        y_full = y.expand(members, *y.shape) if shared else y
        return lambda: (x, y_full)
    batches = iter(MemberBatches(counts, settings.batch_size, seeds, x.device, settings.steps))
    offsets = torch.arange(members, device=x.device)[:, None] * n

    def take() -> tuple[Tensor, Tensor]:
        idx = next(batches)
        return _take(x, idx, shared, offsets), _take(y, idx, shared, offsets)

    return take


def _encoded(
    model: nn.Module, x: Tensor, y: Tensor, members: int
) -> tuple[Tensor, Tensor, Callable[[Tensor], Tensor]]:
    """The data the steps sample and the forward that takes them.

    A model with ``encode`` and ``forward_encoded`` (see
    :meth:`galu.ensembles.networks.OneHiddenLayer.encode`) has its parameter-free,
    row-wise work done once here; ``forward_encoded`` of sampled rows then computes
    exactly what ``forward`` of the same rows would. Shared labels are copied per member
    when the encoding is per member (the GaLU gates are).
    """
    encode, forward = getattr(model, "encode", None), getattr(model, "forward_encoded", None)
    if encode is None or forward is None:
        return x, y, model
    with torch.no_grad():
        size = encode(x[..., :1, :]).numel() * x.shape[-2]
        if size > max(x.numel(), _ENCODED_LIMIT):
            return x, y, model
        z = encode(x)
    if z.dim() == 3 and x.dim() == 2:
        y = y.expand(members, *y.shape).contiguous()
    return z, y, forward


def _final_losses(
    model: nn.Module,
    loss_fn: LossFn,
    x: Tensor,
    y: Tensor,
    counts: list[int],
    keep_outputs: bool = False,
) -> tuple[Tensor, Tensor | None]:
    """Full-data loss per member, each over its own ``counts[e]`` rows, and (when asked
    for and every member uses all rows) the outputs of that pass."""
    axis = 0 if x.dim() == 2 else 1
    final = outputs = None
    distinct = sorted(set(counts))
    keep = keep_outputs and distinct == [x.shape[axis]]
    for count in distinct:
        rows = slice(0, count)
        outputs, losses = outputs_and_losses(
            model,
            loss_fn,
            x[rows] if axis == 0 else x[:, rows],
            y[rows] if axis == 0 else y[:, rows],
            keep_outputs=keep,
        )
        picked = torch.tensor([c == count for c in counts], device=losses.device)
        final = losses if final is None else torch.where(picked, losses, final)
    return final, outputs


def train_ensemble(
    model: nn.Module,
    loss_fn: LossFn,
    x: Tensor,
    y: Tensor,
    seeds: Sequence[int],
    settings: EnsembleSettings,
    device: torch.device | str | None = None,
    n_samples: Sequence[int] | None = None,
    keep_outputs: bool = False,
) -> TrainResult:
    """Train every member of ``model`` on its own loss; see the module docstring.

    ``x``/``y`` are either shared, ``(n, d)``/``(n, ...)``, or per member,
    ``(E, n, d)``/``(E, n, ...)``. ``seeds[e]`` fixes member e's minibatch order (the
    model's own seeds fix its initialization). ``loss_fn(output, target)`` returns the
    per-member mean loss ``(E,)``. ``device`` moves model and data; None keeps the
    model's device. ``n_samples[e]`` (default: all n) lets member e use only the first
    rows of padded data; that needs minibatches. ``keep_outputs`` keeps the outputs of the
    final full-data pass in ``final_outputs`` (when every member uses all rows), so a caller
    that scores the training data needs no second pass.
    """
    members = len(seeds)
    device = _device_of(model, device)
    x, y = x.to(device), y.to(device)
    shared = _check_data(x, y, members)
    counts = _sample_counts(x.shape[0] if shared else x.shape[1], n_samples, members)
    z, z_y, forward = _encoded(model, x, y, members)
    next_batch = _batch_source(z, z_y, _check_data(z, z_y, members), counts, seeds, settings)
    optimizer = _optimizer([p for p in model.parameters() if p.requires_grad], settings)
    diverged = torch.full((members,), -1, dtype=torch.long, device=device)
    history: list[Tensor] = []
    start = time.perf_counter()
    bar = tqdm(total=settings.steps, disable=not settings.progress, desc=settings.description)
    report = Throttle()  # a line a minute in a job's log, where no bar is drawn
    for step in range(settings.steps):
        xb, yb = next_batch()
        losses = loss_fn(forward(xb), yb)
        if step == 0 and losses.shape != (members,):
            raise ValueError(f"loss_fn must return shape ({members},), got {tuple(losses.shape)}")
        # Sync-free divergence bookkeeping: a member's first non-finite loss marks it, and
        # masking its loss keeps NaN out of the sum (other members' gradients stay exact).
        diverged = torch.where(~torch.isfinite(losses) & (diverged < 0), step, diverged)
        total = torch.where(diverged < 0, losses, torch.zeros_like(losses)).sum()
        optimizer.zero_grad()  # set_to_none, torch's default
        total.backward()
        optimizer.step()
        if settings.record_every and step % settings.record_every == 0:
            history.append(losses.detach())
        bar.update()
        if report():
            log_progress(f"{settings.description} of {members}, step", step + 1, settings.steps)
    bar.close()
    final, outputs = _final_losses(model, loss_fn, x, y, counts, keep_outputs)
    # The last update can itself blow a member up: count that as divergence at `steps`.
    diverged = torch.where(~torch.isfinite(final) & (diverged < 0), settings.steps, diverged)
    final = torch.where(diverged < 0, final, torch.full_like(final, float("nan")))
    every = settings.record_every
    return TrainResult(
        final_loss=final.double().cpu().numpy(),
        diverged_step=diverged.cpu().numpy(),
        history_steps=np.arange(0, settings.steps, every) if every else np.zeros(0, np.int64),
        history_loss=(
            torch.stack(history).double().cpu().numpy() if history else np.zeros((0, members))
        ),
        seconds=time.perf_counter() - start,
        final_outputs=outputs,
    )
