"""Several deep plain MLPs of one shape trained as one batched network.

The trainability experiment of Richemond & Guo (arXiv 1905.01369, Sec. 4) trains many
small networks of the same shape: a learning-rate sweep (one network per rate, same
initialization) and several seeds per width. At width 128 one layer's matmul is far too
small to keep a CPU core busy, and every layer costs a few Python-level calls forward
and backward. :class:`StackedMLP` holds ``E`` networks' weights as ``(E, out, in)``
tensors, so each layer of all of them is one batched matmul (``torch.baddbmm``) and one
activation call: the same work in ``E`` times fewer, ``E`` times larger operations.

Why this trains each network exactly as alone (up to float rounding):

- every operation is per member (batched matmuls; batch norm statistics per member and
  feature), so member ``e``'s outputs and gradients depend on its own weights only;
- the step minimizes ``sum_e lr_e * loss_e`` with SGD of learning rate 1: member e's
  gradient is ``lr_e`` times its own, and SGD with momentum is linear in the gradient
  (``buf = m buf + lr_e g``, ``w -= buf`` is ``lr_e`` times ``buf = m buf + g``,
  ``w -= lr_e buf``), so this is SGD with momentum at ``lr_e`` for each member; Adam,
  which is not linear in the gradient, takes the plain sum of the losses and applies
  ``lr_e`` in its own step (:class:`StackedAdam`);
- each member's minibatch order comes from its own seed (:func:`member_orders`), the
  same stream :func:`galu.normalization.training.train` draws; members with one seed
  share one order, and then the first layer is one matmul with the shared batch.

A member whose epoch-end training loss is not finite stops being recorded there, as in
:func:`~galu.normalization.training.train`; its weights stay apart from the others'.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence

import pandas as pd
import torch
import torch.nn.functional as F
from torch import Tensor, nn

from galu.checkpoints import Checkpoint
from galu.normalization.cifar import TensorData
from galu.normalization.mlp import DeepMLP, split_activation
from galu.normalization.modules import make_activation
from galu.normalization.training import EVAL_BATCH, OPTIMIZERS, TrainSettings
from galu.progress import log_progress
from galu.seeding import derive_seed

# nn.BatchNorm1d's defaults, so that the stacked batch norm matches the per-network one.
BN_EPS, BN_MOMENTUM = 1e-5, 0.1
ROW_COLUMNS = ["epoch", "train_loss", "train_error", "test_loss", "test_error"]


def _same_shape(models: Sequence[DeepMLP]) -> None:
    if not models:
        raise ValueError("a stack needs at least one network")
    shapes = {
        (m.activation_name, m.depth, tuple(tuple(lin.weight.shape) for lin in m.linears))
        for m in models
    }
    if len(shapes) != 1:
        raise ValueError(
            "stacked networks must share activation, depth and layer sizes; got "
            + "; ".join(sorted(str(s[:2]) + f" widths {s[2][0][0]}" for s in shapes))
        )


class StackedMLP(nn.Module):
    """``E`` :class:`~galu.normalization.mlp.DeepMLP` of one shape as one module.

    ``forward`` maps a shared batch ``(B, in)`` or per-member batches ``(E, B, in)`` to
    logits ``(E, B, classes)``. :meth:`write_back` copies the (trained) weights into the
    networks it was built from.
    """

    def __init__(self, models: Sequence[DeepMLP]) -> None:
        super().__init__()
        _same_shape(models)
        self.members = len(models)
        self.depth = models[0].depth
        base, self.batch_norm = split_activation(models[0].activation_name)
        self.act = make_activation(base)
        with torch.no_grad():
            self.weights = nn.ParameterList(
                torch.stack([m.linears[i].weight for m in models]).clone()
                for i in range(self.depth + 1)
            )
            self.biases = nn.ParameterList(
                torch.stack([m.linears[i].bias for m in models]).clone()
                for i in range(self.depth + 1)
            )
            norms = [[m.norms[i] for m in models] for i in range(self.depth)]
            if self.batch_norm:
                self.bn_weights = nn.ParameterList(
                    torch.stack([n.weight for n in layer]).clone() for layer in norms
                )
                self.bn_biases = nn.ParameterList(
                    torch.stack([n.bias for n in layer]).clone() for layer in norms
                )
                for i, layer in enumerate(norms):
                    self.register_buffer(
                        f"running_mean{i}", torch.stack([n.running_mean for n in layer])
                    )
                    self.register_buffer(
                        f"running_var{i}", torch.stack([n.running_var for n in layer])
                    )

    def _norm(self, layer: int, h: Tensor) -> Tensor:
        """Batch norm per member and feature: ``(E, B, W)`` seen as ``(B, E * W)`` features."""
        if not self.batch_norm:
            return h
        members, batch, width = h.shape
        flat = h.transpose(0, 1).reshape(batch, members * width)
        out = F.batch_norm(
            flat,
            getattr(self, f"running_mean{layer}").view(-1),
            getattr(self, f"running_var{layer}").view(-1),
            self.bn_weights[layer].view(-1),
            self.bn_biases[layer].view(-1),
            training=self.training,
            momentum=BN_MOMENTUM,
            eps=BN_EPS,
        )
        return out.view(batch, members, width).transpose(0, 1)

    def _first_layer(self, x: Tensor) -> Tensor:
        weight, bias = self.weights[0], self.biases[0]
        if x.dim() == 2:  # one batch for all: a single (B, in) x (in, E * W) matmul
            members, width, inputs = weight.shape
            flat = x @ weight.reshape(members * width, inputs).T
            return flat.view(len(x), members, width).transpose(0, 1) + bias[:, None, :]
        return torch.baddbmm(bias[:, None, :], x, weight.transpose(1, 2))

    def forward(self, x: Tensor) -> Tensor:
        h = self._first_layer(x)
        for layer in range(1, self.depth + 1):
            a = self.act(self._norm(layer - 1, h))
            h = torch.baddbmm(
                self.biases[layer][:, None, :], a, self.weights[layer].transpose(1, 2)
            )
        return h

    @torch.no_grad()
    def write_back(self, models: Sequence[DeepMLP]) -> None:
        """Copy member e's weights (and batch-norm statistics) into ``models[e]``."""
        for e, model in enumerate(models):
            for i, linear in enumerate(model.linears):
                linear.weight.copy_(self.weights[i][e])
                linear.bias.copy_(self.biases[i][e])
            if self.batch_norm:
                for i, norm in enumerate(model.norms):
                    norm.weight.copy_(self.bn_weights[i][e])
                    norm.bias.copy_(self.bn_biases[i][e])
                    norm.running_mean.copy_(getattr(self, f"running_mean{i}")[e])
                    norm.running_var.copy_(getattr(self, f"running_var{i}")[e])


class _StackOptimizer:
    """What the stack's optimizers share: their parameters, and gradients cleared by
    setting them to None (as torch.optim does by default)."""

    def __init__(self, params: Iterable[Tensor]) -> None:
        self.params = list(params)

    def zero_grad(self) -> None:
        for param in self.params:
            param.grad = None

    def _grads(self) -> list[Tensor]:
        if any(p.grad is None for p in self.params):
            raise RuntimeError("every parameter of the stack needs a gradient before a step")
        return [p.grad for p in self.params]

    def state(self) -> dict:
        """What the next step depends on besides the parameters (for a checkpoint)."""
        raise NotImplementedError

    def load(self, state: dict) -> None:
        """Continue from :meth:`state` (copied into this optimizer's own tensors)."""
        raise NotImplementedError


class MomentumSGD(_StackOptimizer):
    """SGD with momentum (no dampening, Nesterov or weight decay) at learning rate 1.

    The update of ``torch.optim.SGD(params, lr=1.0, momentum=m)``, operation for
    operation (``buf = grad`` at the first step, then ``buf = m buf + grad``; ``p -= buf``),
    so the numbers are the same. Why not that class: constructing any ``torch.optim``
    optimizer imports ``torch._dynamo`` (about 1 s of CPU, a tenth of a quick training job)
    and these jobs never compile. The updates of all tensors go as three ``_foreach`` calls
    (elementwise, so the same numbers as one call per tensor): a depth-60 stack has 122
    parameter tensors, and three calls per tensor cost about 1 ms a step on a CPU.
    """

    def __init__(self, params: Iterable[Tensor], momentum: float) -> None:
        super().__init__(params)
        self.momentum = momentum
        self.buffers: list[Tensor] | None = None

    @torch.no_grad()
    def step(self) -> None:
        grads = self._grads()
        if self.momentum == 0:
            torch._foreach_add_(self.params, grads, alpha=-1.0)
            return
        if self.buffers is None:
            self.buffers = [torch.clone(g).detach() for g in grads]
        else:
            torch._foreach_mul_(self.buffers, self.momentum)
            torch._foreach_add_(self.buffers, grads)
        torch._foreach_add_(self.params, self.buffers, alpha=-1.0)

    def state(self) -> dict:
        return {"buffers": self.buffers}

    def load(self, state: dict) -> None:
        self.buffers = state["buffers"]


class StackedAdam(_StackOptimizer):
    """Adam (Kingma & Ba, ICLR 2015, Algorithm 1) with one learning rate per member.

    The update of ``torch.optim.Adam(params, lr, betas, eps)`` (no weight decay, amsgrad
    or maximize), as its single-tensor code writes it (``m`` by ``lerp_``, ``v`` by
    ``mul_`` and ``addcmul_``, the bias corrections as Python floats), except that the
    step size is a tensor holding member e's ``lr_e`` along the first dimension of every
    parameter. Adam divides by the gradient's own scale, so unlike SGD a per-member
    learning rate cannot ride on the loss: the stack's loss is the plain sum of the
    members' losses (:func:`stack_optimizer`).
    """

    def __init__(
        self,
        params: Iterable[Tensor],
        lrs: Iterable[float],
        betas: tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-8,
    ) -> None:
        super().__init__(params)
        self.betas, self.eps = betas, eps
        self.lrs = [float(lr) for lr in lrs]
        self.first = [torch.zeros_like(p) for p in self.params]
        self.second = [torch.zeros_like(p) for p in self.params]
        self.steps = 0

    @torch.no_grad()
    def step(self) -> None:
        grads = self._grads()
        beta1, beta2 = self.betas
        self.steps += 1
        correction1 = 1 - beta1**self.steps
        correction2_sqrt = (1 - beta2**self.steps) ** 0.5
        # member e's step size lr_e / correction1, computed in double as torch's float is
        steps = torch.tensor([lr / correction1 for lr in self.lrs], dtype=torch.float64)
        for p, g, m, v in zip(self.params, grads, self.first, self.second, strict=True):
            m.lerp_(g, 1 - beta1)
            v.mul_(beta2).addcmul_(g, g, value=1 - beta2)
            denom = (v.sqrt() / correction2_sqrt).add_(self.eps)
            step = steps.to(p).view(-1, *[1] * (p.dim() - 1))
            p.sub_(m / denom * step)

    def state(self) -> dict:
        return {"first": self.first, "second": self.second, "steps": self.steps}

    def load(self, state: dict) -> None:
        saved = state["first"] + state["second"]
        for mine, value in zip(self.first + self.second, saved, strict=True):
            mine.copy_(value)
        self.steps = state["steps"]


def stack_optimizer(
    name: str, params: Iterable[Tensor], lrs: Sequence[float], momentum: float, device
) -> tuple[MomentumSGD | StackedAdam, Tensor]:
    """The stack's optimizer and the weights of the members' losses in its objective:
    ``sgd`` (with ``momentum``; SGD at lr 1 on ``sum_e lr_e loss_e`` is SGD at ``lr_e`` for
    each member, module docstring) or ``adam`` (its defaults; the learning rates in the
    step, the losses summed)."""
    weights = torch.tensor([float(lr) for lr in lrs], device=device)
    if name == "sgd":
        return MomentumSGD(params, momentum), weights
    if name == "adam":
        return StackedAdam(params, lrs), torch.ones_like(weights)
    raise ValueError(f"unknown optimizer {name!r}; choose one of: {', '.join(OPTIMIZERS)}")


def member_cross_entropy(logits: Tensor, target: Tensor) -> Tensor:
    """Mean cross-entropy of each member, ``(E,)``: logits ``(E, B, C)``, classes ``(B,)``
    shared or ``(E, B)``."""
    members, batch, classes = logits.shape
    target = target.expand(members, batch).reshape(-1)
    flat = F.cross_entropy(logits.reshape(-1, classes), target, reduction="none")
    return flat.view(members, batch).mean(dim=1)


@torch.inference_mode()
def evaluate_members(model: StackedMLP, x: Tensor, y: Tensor) -> tuple[Tensor, Tensor]:
    """Per-member mean cross-entropy and error rate on ``(x, y)`` (eval mode), ``(E,)`` each."""
    was_training = model.training
    model.eval()
    loss = torch.zeros(model.members, dtype=torch.float64, device=x.device)
    wrong = torch.zeros(model.members, dtype=torch.long, device=x.device)
    for start in range(0, len(y), EVAL_BATCH):
        logits = model(x[start : start + EVAL_BATCH])
        target = y[start : start + EVAL_BATCH]
        loss += member_cross_entropy(logits, target).double() * len(target)
        wrong += (logits.argmax(dim=2) != target).sum(dim=1)
    model.train(was_training)
    return loss / len(y), wrong.double() / len(y)


def member_orders(seeds: Sequence[int]) -> list[torch.Generator]:
    """One shuffle generator per distinct seed, seeded as training.train seeds its own. On
    the CPU whatever the device: CUDA's generator draws other permutations from the same
    seed, and a GPU run would see other minibatches than a CPU run (tests/test_cuda.py)."""
    return [torch.Generator().manual_seed(derive_seed(s, "batches")) for s in dict.fromkeys(seeds)]


def _epoch_indices(
    gens: list[torch.Generator], seeds: Sequence[int], n: int, device: torch.device
) -> Tensor:
    """This epoch's sample order: ``(n,)`` shared by all members when they have one seed,
    else ``(E, n)``, member e's row drawn from its seed's generator."""
    perms = [torch.randperm(n, generator=g).to(device) for g in gens]
    if len(perms) == 1:
        return perms[0]
    by_seed = dict(zip(dict.fromkeys(seeds), perms, strict=True))
    return torch.stack([by_seed[s] for s in seeds])


def _train_epoch(
    model: StackedMLP,
    opt: MomentumSGD | StackedAdam,
    data: TensorData,
    order: Tensor,
    batch: int,
    loss_weights: Tensor,
) -> None:
    """One pass in full minibatches (the remainder is skipped, as in training.train_epoch);
    each step descends the members' losses weighted by ``loss_weights``."""
    n = len(data.y_train)
    model.train()
    for start in range(0, n - batch + 1, batch):
        idx = order[..., start : start + batch]
        losses = member_cross_entropy(model(data.x_train[idx]), data.y_train[idx])
        opt.zero_grad()
        (loss_weights * losses).sum().backward()
        opt.step()


def train_stacked(
    models: Sequence[DeepMLP],
    data: TensorData,
    lrs: Sequence[float],
    seeds: Sequence[int],
    epochs: int,
    batch_size: int = 128,
    momentum: float = 0.9,
    label: str = "",
    optimizer: str = "sgd",
    checkpoint: Checkpoint | None = None,
) -> list[pd.DataFrame]:
    """Train ``models`` (one shape) together, model e at ``lrs[e]`` with batch order
    ``seeds[e]``, by SGD with ``momentum`` or by Adam (``optimizer``); write the trained
    weights back into them. With a ``checkpoint``, the state after an epoch is saved when
    it is due, and a training that finds one goes on from it: the same numbers as without
    an interruption (the weights, the optimizer's buffers, the batch orders' generators and
    the curves so far are all restored).

    Returns one table per model, as :func:`galu.normalization.training.train` does for one:
    a row per epoch (0 = at initialization) with ``epoch, train_loss, train_error,
    test_loss, test_error, diverged``; a model whose training loss became non-finite has
    rows up to its last finite epoch and ``diverged`` True.
    """
    if not len(models) == len(lrs) == len(seeds):
        raise ValueError(f"need one lr and seed per model: {len(models)}, {len(lrs)}, {len(seeds)}")
    for lr in lrs:
        TrainSettings(lr, epochs, batch_size, momentum, optimizer)  # one network's checks
    if len(data.y_train) < batch_size:
        raise ValueError(
            f"batch_size {batch_size} exceeds the {len(data.y_train)} training samples"
        )
    device = data.x_train.device
    model = StackedMLP(models).to(device)
    opt, loss_weights = stack_optimizer(optimizer, model.parameters(), lrs, momentum, device)
    gens = member_orders(seeds)
    rows: list[list[dict[str, float]]] = [[] for _ in models]
    active = [True] * len(models)
    start = 0
    if checkpoint is not None and (saved := checkpoint.load()) is not None:
        model.load_state_dict(saved["model"])
        opt.load(saved["optimizer"])
        for gen, state in zip(gens, saved["generators"], strict=True):
            gen.set_state(state)
        rows, active, start = saved["rows"], saved["active"], saved["epoch"] + 1
    for epoch in range(start, epochs + 1):
        if epoch:
            order = _epoch_indices(gens, seeds, len(data.y_train), device)
            _train_epoch(model, opt, data, order, batch_size, loss_weights)
        train_loss, train_error = evaluate_members(model, data.x_train, data.y_train)
        test_loss, test_error = evaluate_members(model, data.x_test, data.y_test)
        values = torch.stack([train_loss, train_error, test_loss, test_error]).T.tolist()
        for e, (tl, te, sl, se) in enumerate(values):
            if active[e]:
                rows[e].append(dict(zip(ROW_COLUMNS, (epoch, tl, te, sl, se), strict=True)))
                active[e] = math.isfinite(tl)
        if epoch:
            log_progress(
                f"{label or 'stack'} of {len(models)}, epoch",
                epoch,
                epochs,
                train_loss=min(r[-1]["train_loss"] for r in rows),
            )
        if not any(active):
            break
        if checkpoint is not None and epoch < epochs and checkpoint.due():
            checkpoint.save(
                {
                    "epoch": epoch,
                    "model": model.state_dict(),
                    "optimizer": opt.state(),
                    "generators": [gen.get_state() for gen in gens],
                    "rows": rows,
                    "active": active,
                }
            )
    model.write_back(models)
    return [_table(member_rows) for member_rows in rows]


def _table(rows: list[dict[str, float]]) -> pd.DataFrame:
    """One model's curve: finite rows, each flagged ``diverged`` when any epoch was not."""
    diverged = not all(math.isfinite(r["train_loss"]) for r in rows)
    frame = pd.DataFrame([r for r in rows if math.isfinite(r["train_loss"])], columns=ROW_COLUMNS)
    frame["epoch"] = frame["epoch"].astype(int)
    frame["diverged"] = diverged
    return frame
