"""Ensembles of deep ReLU and GaLU networks (the paper's GaLU0, two ablations), linear baseline.

Fiat, Malach & Shalev-Shwartz, *Decoupling Gating from Linearity* (arXiv 1906.05032),
section 5 (generalization on MNIST / Fashion-MNIST): fully connected networks with ``T``
hidden layers of width ``k`` whose units are, for the input ``x`` (``d`` coordinates) and
the previous layer's output ``h`` (``h_0 = x``),

    relu               [h·w + b]_+
    galu0              sigmoid(x·u / (a d)) (h·w + b)     the paper's experiment (GaLU0)
    galu               1{h·u + c >= 0} (h·w + b)          ablation: the theory's step gate
    galu_sigmoid_prev  sigmoid((h·u + c) / a) (h·w + b)   ablation: soft gate on h (ours)

with trained ``w, b`` and fixed random gates, plus a ``linear`` baseline (no hidden
layer; with cross-entropy it is softmax regression).

GaLU0 (the model the paper's MNIST figure trains). Every layer's gate reads the **raw
input x**, never the previous layer's output; ``u ~ N(0, I_d)`` per unit and layer, drawn
once and frozen; no gate offset; the gate is computed without autograd, so no gradient
reaches ``u`` (tested). ``a`` is the paper's gate scale: larger is softer, ``a -> 0`` is
the step gate ``1{x·u >= 0}``, ``a -> inf`` opens every gate halfway (a linear network).
What ``a d`` means for the inputs used here (PCA-64, each component standardized on the
training part, so ``E |x|^2 = d``): ``x·u ~ N(0, |x|^2)``, so the gate's argument
``x·u / (a d)`` has standard deviation about ``1 / (a sqrt(d)) = 0.125 / a`` for
``d = 64``; measured over 1,000 draws of ``u`` on the 54,000 standardized PCA-64 training
features: 0.1255 / a on MNIST and on Fashion-MNIST (``|x|^2 / d`` lies in [0.48, 1.57] for
90% of MNIST images, [0.43, 1.87] for Fashion-MNIST, which widens the tails only).
So ``a = 0.01`` is practically the step gate (argument std 12.5), ``a = 0.1`` a soft but
strongly nonlinear gate (std 1.25), and ``a >= 0.5`` spreads the gates about 1/2 with a
standard deviation of at most 0.06 (argument std <= 0.25, where
``sigmoid(z) ~ 1/2 + z/4``): a nearly linear network modulated by the input. Since the
gates are a fixed function of ``x``, a GaLU0 network is linear in each layer's weights
given the others; the paper's formula has no bias in the linear part, ours keeps the
trained bias ``b`` every model here has.

The ablations. ``galu`` (step gates) is the model the paper's theory analyses; here its
layer ``l`` gate reads ``h_{l-1}``, the vector its linear part reads: the only choice for
which a GaLU unit whose gate equals its weights, ``(u, c) = (w, b)``, is the ReLU unit at
every layer (tested). No gradient flows through a step gate, but for ``T >= 2`` its
deeper gates move as earlier layers train. ``galu_sigmoid_prev`` softens that gate with
the same ``a`` convention (``sigmoid(g / a)``, ``a -> 0`` the step gate); gradient flows
through the sigmoid into ``h``, so it is a partly trained network: an ablation of ours,
not the paper's model. Their gate vectors are drawn ``u, c ~ N(0, 1/(d_in + 1))`` per
coordinate, so ``h·u + c`` has the standard deviation of one coordinate of ``[h, 1]``
and ``a`` is measured in units of the layer input's root-mean-square.

Ensembles. Every tensor carries a leading member dimension ``E`` (see
:mod:`galu.ensembles.training`). Widths are padded to the block's widest member and a ``(E, K)``
mask zeroes padded units, so a padded member computes what it would alone; every draw
is made per member from its own seed (:func:`galu.seeding.derive_seed`) at its own
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

from galu.seeding import derive_seed

MODELS = ("relu", "galu0", "galu", "galu_sigmoid_prev", "linear")
GATED = ("relu", "galu0", "galu", "galu_sigmoid_prev")
# Models with a sigmoid gate, whose gate scale a is a hyper-parameter.
SIGMOID = ("galu0", "galu_sigmoid_prev")


@dataclass(frozen=True)
class MemberSpec:
    """One network of an ensemble: its model, hidden width, seed, learning rate, gate scale.

    ``width`` is 0 for ``linear`` (no hidden layer) and >= 1 otherwise; ``gate_scale``
    (the paper's ``a``) is required for the sigmoid-gated models (:data:`SIGMOID`) and
    must be None for the others.
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
        sigmoid = self.model in SIGMOID
        scale = self.gate_scale
        if sigmoid and not (scale is not None and math.isfinite(scale) and scale > 0):
            raise ValueError(
                f"gate_scale of a {self.model} member must be a finite number > 0, got {scale!r}"
            )
        if not sigmoid and scale is not None:
            raise ValueError(
                f"gate_scale applies to {', '.join(SIGMOID)} only; {self.model} got {scale!r}"
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
    """``depth`` hidden layers of one gated ``kind`` (:data:`GATED`), ``E`` members.

    Stored parameters are ``phi = theta / lr_scale`` (see the module docstring);
    :meth:`layer` returns the effective ``theta``. Buffers: ``mask`` ``(E, K)``,
    ``lr_scale`` ``(E,)``, ``gate_scale`` ``(E,)`` (the paper's ``a``; 1 where unused)
    and, for GaLU kinds, the fixed gate vectors ``gate_l`` per layer: ``(E, K, d)`` on
    the input for ``galu0``, ``(E, K, fan_in)`` plus offsets ``gate_bias_l`` ``(E, K)``
    on the layer's input for ``galu`` and ``galu_sigmoid_prev``.
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
        if kind in SIGMOID and gate_scales is None:
            raise ValueError(f"gate_scales are required for kind {kind!r}")
        self.kind, self.depth, self.in_dim = kind, depth, in_dim
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
            if kind == "galu0":
                self._add_input_gates(layer, dtype)
            elif kind != "relu":
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

    def _add_input_gates(self, layer: int, dtype: torch.dtype) -> None:
        # GaLU0: u_{t,j} ~ N(0, I_d) on the input x for every layer t, no offset.
        draws = [
            _normal(s, f"layer{layer}.input_gate", (k, self.in_dim), dtype)
            for s, k in zip(self.seeds, self.widths, strict=True)
        ]
        self.register_buffer(f"gate_{layer}", _padded(draws, (max(self.widths), self.in_dim)))

    @property
    def n_members(self) -> int:
        return len(self.widths)

    def _scaled(self, stored: Tensor) -> Tensor:
        return stored * self.lr_scale.view(-1, *([1] * (stored.dim() - 1)))

    def layer(self, index: int) -> tuple[Tensor, Tensor]:
        """Effective weight ``(E, K, fan_in)`` and bias ``(E, K)`` of hidden layer ``index``."""
        return self._scaled(self.weights[index]), self._scaled(self.biases[index])

    def gates(self, index: int) -> tuple[Tensor, Tensor | None]:
        """Gate vectors ``(E, K, fan_in)`` and offsets ``(E, K)`` of hidden layer ``index``
        (``galu0``: ``(E, K, d)`` on the input and no offset, None)."""
        return getattr(self, f"gate_{index}"), getattr(self, f"gate_bias_{index}", None)

    def _gate(self, index: int, x: Tensor, h: Tensor) -> Tensor | None:
        """Layer ``index``'s gate values ``(E, B, K)`` for input ``x`` and layer input ``h``."""
        if self.kind == "relu":
            return None
        u, c = self.gates(index)
        scale = self.gate_scale[:, None, None]
        if self.kind == "galu0":
            # sigmoid(x·u / (a d)) of the raw input; outside autograd: no gradient to u.
            with torch.no_grad():
                return torch.sigmoid(torch.matmul(x, u.transpose(1, 2)) / (scale * self.in_dim))
        assert c is not None
        g = torch.matmul(h, u.transpose(1, 2)) + c[:, None, :]
        if self.kind == "galu":
            return (g >= 0).to(g.dtype)
        return torch.sigmoid(g / scale)

    def hidden(self, x: Tensor) -> tuple[Tensor, list[Tensor | None]]:
        """The last hidden layer's output ``(E, B, K)`` and every layer's gate values
        (``(E, B, K)``; None for relu) for ``x`` ``(B, d)`` shared or ``(E, B, d)``."""
        h = x
        padded = min(self.widths) < max(self.widths)
        gates = []
        for index in range(self.depth):
            weight, bias = self.layer(index)
            z = torch.matmul(h, weight.transpose(1, 2)) + bias[:, None, :]
            gate = self._gate(index, x, h)
            gates.append(gate)
            h = torch.relu(z) if gate is None else gate * z
            if padded:
                h = h * self.mask[:, None, :]
        return h, gates

    def forward(self, x: Tensor) -> Tensor:
        """Outputs ``(E, B, out_dim)`` for ``x`` ``(B, d)`` shared or ``(E, B, d)``."""
        h = self.hidden(x)[0]
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
