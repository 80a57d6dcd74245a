"""Ensembles of deep ReLU, GaLU and sigmoid-gated GaLU networks, and a linear baseline.

Fiat, Malach & Shalev-Shwartz, *Decoupling Gating from Linearity* (arXiv 1906.05032),
section 5 (generalization): fully connected networks with ``T`` hidden layers of width
``k`` whose units are, for the layer input ``h`` (``h_0 = x``),

    relu          [h·w + b]_+
    galu          1{h·u + c >= 0} (h·w + b)                     (step gate)
    galu_sigmoid  sigmoid(a (h·u + c)) (h·w + b)                (soft gate, scale a)

with trained ``w, b`` and fixed random gate vectors ``u, c``, plus a ``linear``
baseline (no hidden layer; with cross-entropy it is softmax regression).

Which input a gate reads. Layer l's gate reads ``h_{l-1}``, the output of the *same*
network's previous layer, i.e. exactly the vector its linear part reads. That is the
only choice for which a GaLU unit whose gate equals its weights, ``(u, c) = (w, b)``, is
the ReLU unit at every layer, so the two models differ in one thing only: the gate
vector is random and frozen instead of tied to the trained weight (tested). For
``T = 1`` the network is linear in the hidden weights and training is convex (the
paper's analysis); for ``T >= 2`` the deeper gates move as earlier layers train, but no
gradient flows through a step gate. Through the sigmoid gate it does, into ``h``.

Gate scale. Gate vectors are drawn ``u, c ~ N(0, 1/d_in)`` per coordinate (the scale is
irrelevant for a step gate), so ``h·u + c`` has the standard deviation of one
coordinate of ``[h, 1]``; the sigmoid gate's ``a`` is thus measured in units of the
layer input's root-mean-square, comparable across layers and widths. ``a -> inf``
recovers the step gate; ``a -> 0`` gives the linear network with all gates at 1/2.

Ensembles. Every tensor carries a leading member dimension ``E`` (see
:mod:`galu.ensemble`). Widths are padded to the block's widest member and a ``(E, K)``
mask zeroes padded units, so a padded member computes what it would alone; every draw
is made per member from its own seed (:func:`galu.models.derive_seed`) at its own
width. Initialization: hidden weights He-normal ``N(0, 2/fan_in)``, readout
``N(0, 1/k)``, biases zero; the linear model starts at zero (its loss is convex).
Members with the same seed and width start from the same weights whatever their model,
learning rate or gate scale, so comparisons between them are paired.

Per-member learning rates. Adam's step ignores a constant rescaling of the gradient
(up to its ``eps``), so a parameter stored as ``phi`` and used as ``theta = s phi``
moves ``theta`` by ``s`` times the optimizer's learning rate. Each member's parameters
are scaled by ``lr_scale = lr_member / lr_optimizer``, which lets members with
different learning rates share one Adam optimizer (``eps`` becomes ``eps / s``, at
most 1e-7 for the grids used). Under plain SGD the step would scale by ``s**2``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import torch
from torch import Tensor, nn

from galu.models import derive_seed

MODELS = ("relu", "galu", "galu_sigmoid", "linear")
GATED = ("relu", "galu", "galu_sigmoid")


@dataclass(frozen=True)
class MemberSpec:
    """One network of an ensemble: its model, hidden width, seed, learning rate, gate scale.

    ``width`` is 0 for ``linear`` (no hidden layer) and >= 1 otherwise; ``gate_scale``
    is required for ``galu_sigmoid`` and must be None for the other models.
    """

    model: str
    width: int
    seed: int
    lr: float
    gate_scale: float | None = None

    def __post_init__(self) -> None:
        if self.model not in MODELS:
            raise ValueError(f"model must be one of {MODELS}, got {self.model!r}")
        if self.model == "linear" and self.width != 0:
            raise ValueError(f"width of a linear member must be 0, got {self.width!r}")
        if self.model != "linear" and (not isinstance(self.width, int) or self.width < 1):
            raise ValueError(
                f"width of a {self.model} member must be an int >= 1, got {self.width!r}"
            )
        if not (isinstance(self.seed, int) and self.seed >= 0):
            raise ValueError(f"seed must be a non-negative int, got {self.seed!r}")
        if not (math.isfinite(self.lr) and self.lr > 0):
            raise ValueError(f"lr must be a finite number > 0, got {self.lr!r}")
        sigmoid = self.model == "galu_sigmoid"
        if sigmoid and not (self.gate_scale is not None and self.gate_scale > 0):
            raise ValueError(
                f"gate_scale of a galu_sigmoid member must be > 0, got {self.gate_scale!r}"
            )
        if not sigmoid and self.gate_scale is not None:
            raise ValueError(
                f"gate_scale applies to galu_sigmoid only; {self.model} got {self.gate_scale!r}"
            )


def _normal(seed: int, stream: str, shape: tuple[int, ...], dtype: torch.dtype) -> Tensor:
    """N(0, 1) draws from the member's own generator, on the CPU (device-independent)."""
    gen = torch.Generator().manual_seed(derive_seed(seed, stream))
    return torch.randn(shape, generator=gen, dtype=torch.float64).to(dtype)


def _padded(draws: Sequence[Tensor], shape: tuple[int, ...]) -> Tensor:
    """Stack per-member draws into zeros of ``(E, *shape)``, each in its leading corner."""
    out = torch.zeros(len(draws), *shape, dtype=draws[0].dtype)
    for e, draw in enumerate(draws):
        out[(e, *(slice(0, n) for n in draw.shape))] = draw
    return out


def _scales(values: Sequence[float] | None, members: int, name: str) -> Tensor:
    if values is None:
        return torch.ones(members, dtype=torch.float64)
    if len(values) != members or not all(math.isfinite(v) and v > 0 for v in values):
        raise ValueError(f"{name} must be {members} finite numbers > 0, got {list(values)!r}")
    return torch.tensor([float(v) for v in values], dtype=torch.float64)


class GatedEnsemble(nn.Module):
    """``depth`` hidden layers of one gated ``kind`` (relu, galu, galu_sigmoid), ``E`` members.

    Stored parameters are ``phi = theta / lr_scale`` (see the module docstring);
    :meth:`layer` returns the effective ``theta``. Buffers: ``mask`` ``(E, K)``,
    ``lr_scale`` ``(E,)``, ``gate_scale`` ``(E,)`` and, for GaLU kinds, ``gate_l``
    ``(E, K, fan_in)`` and ``gate_bias_l`` ``(E, K)`` per layer.
    """

    def __init__(
        self,
        kind: str,
        in_dim: int,
        out_dim: int,
        depth: int,
        widths: Sequence[int],
        seeds: Sequence[int],
        gate_scales: Sequence[float] | None = None,
        lr_scales: Sequence[float] | None = None,
        dtype: torch.dtype = torch.float32,
    ) -> None:
        super().__init__()
        if kind not in GATED:
            raise ValueError(f"kind must be one of {GATED}, got {kind!r}")
        for name, value in (("in_dim", in_dim), ("out_dim", out_dim), ("depth", depth)):
            if not (isinstance(value, int) and value >= 1):
                raise ValueError(f"{name} must be an int >= 1, got {value!r}")
        if len(widths) == 0 or len(widths) != len(seeds) or min(widths) < 1:
            raise ValueError(
                f"widths (>= 1) and seeds need one entry per member, got {list(widths)!r} "
                f"and {list(seeds)!r}"
            )
        if kind == "galu_sigmoid" and gate_scales is None:
            raise ValueError("gate_scales are required for kind 'galu_sigmoid'")
        self.kind, self.depth = kind, depth
        self.widths, self.seeds = [int(w) for w in widths], [int(s) for s in seeds]
        members, top = len(self.widths), max(self.widths)
        lr_scale = _scales(lr_scales, members, "lr_scales")
        self.register_buffer("lr_scale", lr_scale.to(dtype))
        self.register_buffer("gate_scale", _scales(gate_scales, members, "gate_scales").to(dtype))
        mask = torch.arange(top)[None, :] < torch.tensor(self.widths)[:, None]
        self.register_buffer("mask", mask.to(dtype))
        self.weights, self.biases = nn.ParameterList(), nn.ParameterList()
        for layer in range(depth):
            fan_ins = [in_dim if layer == 0 else k for k in self.widths]
            shape = (top, in_dim if layer == 0 else top)
            draws = [
                _normal(s, f"layer{layer}.weight", (k, f), dtype) * math.sqrt(2.0 / f)
                for s, k, f in zip(self.seeds, self.widths, fan_ins, strict=True)
            ]
            self.weights.append(nn.Parameter(self._stored(_padded(draws, shape))))
            self.biases.append(nn.Parameter(torch.zeros(members, top, dtype=dtype)))
            if kind != "relu":
                self._add_gates(layer, fan_ins, shape, dtype)
        draws = [
            _normal(s, "readout", (k, out_dim), dtype) / math.sqrt(k)
            for s, k in zip(self.seeds, self.widths, strict=True)
        ]
        self.readout = nn.Parameter(self._stored(_padded(draws, (top, out_dim))))
        self.out_bias = nn.Parameter(torch.zeros(members, out_dim, dtype=dtype))

    def _stored(self, theta: Tensor) -> Tensor:
        return theta / self.lr_scale.view(-1, *([1] * (theta.dim() - 1)))

    def _add_gates(
        self, layer: int, fan_ins: list[int], shape: tuple[int, int], dtype: torch.dtype
    ) -> None:
        # u and c drawn together as one (k, fan_in + 1) matrix, i.e. as the gate of the
        # bias-augmented input [h, 1]; each coordinate N(0, 1 / (fan_in + 1)).
        draws = [
            _normal(s, f"layer{layer}.gate", (k, f + 1), dtype) / math.sqrt(f + 1)
            for s, k, f in zip(self.seeds, self.widths, fan_ins, strict=True)
        ]
        self.register_buffer(f"gate_{layer}", _padded([d[:, :-1] for d in draws], shape))
        bias = _padded([d[:, -1] for d in draws], shape[:1])
        self.register_buffer(f"gate_bias_{layer}", bias)

    @property
    def n_members(self) -> int:
        return len(self.widths)

    def _scaled(self, stored: Tensor) -> Tensor:
        return stored * self.lr_scale.view(-1, *([1] * (stored.dim() - 1)))

    def layer(self, index: int) -> tuple[Tensor, Tensor]:
        """Effective weight ``(E, K, fan_in)`` and bias ``(E, K)`` of hidden layer ``index``."""
        return self._scaled(self.weights[index]), self._scaled(self.biases[index])

    def gates(self, index: int) -> tuple[Tensor, Tensor]:
        """Gate vectors ``(E, K, fan_in)`` and offsets ``(E, K)`` of hidden layer ``index``."""
        return getattr(self, f"gate_{index}"), getattr(self, f"gate_bias_{index}")

    def _unit(self, index: int, h: Tensor) -> Tensor:
        weight, bias = self.layer(index)
        z = torch.matmul(h, weight.transpose(1, 2)) + bias[:, None, :]
        if self.kind == "relu":
            return torch.relu(z)
        gate, offset = self.gates(index)
        g = torch.matmul(h, gate.transpose(1, 2)) + offset[:, None, :]
        if self.kind == "galu":
            return torch.where(g >= 0, z, torch.zeros((), dtype=z.dtype, device=z.device))
        return torch.sigmoid(self.gate_scale[:, None, None] * g) * z

    def forward(self, x: Tensor) -> Tensor:
        """Outputs ``(E, B, out_dim)`` for ``x`` ``(B, d)`` shared or ``(E, B, d)``."""
        h = x
        padded = min(self.widths) < max(self.widths)
        for index in range(self.depth):
            h = self._unit(index, h)
            if padded:
                h = h * self.mask[:, None, :]
        out = torch.bmm(h, self._scaled(self.readout))
        return out + self._scaled(self.out_bias)[:, None, :]


class LinearEnsemble(nn.Module):
    """``f(x) = x W + b`` per member, starting at zero (Fiat et al. 2019, sec. 5 baseline).

    With cross-entropy it is softmax regression; with the hinge loss a linear
    classifier. Stored parameters are ``phi = theta / lr_scale`` like the gated nets.
    """

    def __init__(
        self,
        in_dim: int,
        out_dim: int,
        members: int,
        lr_scales: Sequence[float] | None = None,
        dtype: torch.dtype = torch.float32,
    ) -> None:
        super().__init__()
        for name, value in (("in_dim", in_dim), ("out_dim", out_dim), ("members", members)):
            if not (isinstance(value, int) and value >= 1):
                raise ValueError(f"{name} must be an int >= 1, got {value!r}")
        self.register_buffer("lr_scale", _scales(lr_scales, members, "lr_scales").to(dtype))
        self.weight = nn.Parameter(torch.zeros(members, in_dim, out_dim, dtype=dtype))
        self.bias = nn.Parameter(torch.zeros(members, out_dim, dtype=dtype))

    @property
    def n_members(self) -> int:
        return self.weight.shape[0]

    def forward(self, x: Tensor) -> Tensor:
        """Outputs ``(E, B, out_dim)`` for ``x`` ``(B, d)`` shared or ``(E, B, d)``."""
        scale = self.lr_scale[:, None, None]
        return torch.matmul(x, self.weight * scale) + (self.bias * scale[:, 0])[:, None, :]


class MemberStack(nn.Module):
    """Several ensembles trained as one: outputs concatenated along the member axis.

    ``members[e]`` describes output member ``e``. Per-member inputs ``(E, B, d)`` are
    split between the blocks in the same order.
    """

    def __init__(self, blocks: Sequence[nn.Module], members: Sequence[MemberSpec]) -> None:
        super().__init__()
        sizes = [int(b.n_members) for b in blocks]
        if sum(sizes) != len(members):
            raise ValueError(f"blocks hold {sum(sizes)} members but {len(members)} specs given")
        self.blocks = nn.ModuleList(blocks)
        self.members = list(members)
        self.sizes = sizes

    def forward(self, x: Tensor) -> Tensor:
        if x.dim() == 3:
            parts = x.split(self.sizes, dim=0)
            return torch.cat([b(p) for b, p in zip(self.blocks, parts, strict=True)], dim=0)
        return torch.cat([b(x) for b in self.blocks], dim=0)


def _block_key(member: MemberSpec, pad_widths: bool) -> tuple[int, int]:
    width = 0 if pad_widths else member.width
    return MODELS.index(member.model), width


def build_ensemble(
    members: Sequence[MemberSpec],
    in_dim: int,
    out_dim: int,
    depth: int,
    base_lr: float | None = None,
    pad_widths: bool = True,
    dtype: torch.dtype = torch.float32,
) -> MemberStack:
    """One :class:`MemberStack` for ``members``, grouped into blocks.

    A block holds one model kind (``pad_widths=True``: widths padded, fewest kernels, for
    GPUs) or one (kind, width) (``pad_widths=False``: no wasted arithmetic, for CPUs).
    ``stack.members`` lists the members in output order. ``base_lr`` is the optimizer's
    learning rate (default: the largest member lr); each member's parameters are scaled
    by ``lr / base_lr``.
    """
    if len(members) == 0:
        raise ValueError("members must name at least one network, got none")
    base_lr = max(m.lr for m in members) if base_lr is None else base_lr
    if not base_lr > 0:
        raise ValueError(f"base_lr must be > 0, got {base_lr!r}")
    groups: dict[tuple[int, int], list[MemberSpec]] = {}
    for member in members:
        groups.setdefault(_block_key(member, pad_widths), []).append(member)
    blocks: list[nn.Module] = []
    ordered: list[MemberSpec] = []
    for key in sorted(groups):
        group = groups[key]
        scales = [m.lr / base_lr for m in group]
        if group[0].model == "linear":
            blocks.append(LinearEnsemble(in_dim, out_dim, len(group), scales, dtype))
        else:
            gate_scales = [m.gate_scale for m in group] if group[0].gate_scale else None
            blocks.append(
                GatedEnsemble(
                    group[0].model,
                    in_dim,
                    out_dim,
                    depth,
                    [m.width for m in group],
                    [m.seed for m in group],
                    gate_scales,
                    scales,
                    dtype,
                )
            )
        ordered.extend(group)
    return MemberStack(blocks, ordered)
