"""One-hidden-layer GaLU and ReLU networks, stored as ensembles.

Fiat, Malach & Shalev-Shwartz, *Decoupling Gating from Linearity* (arXiv 1906.05032),
section 2: a GaLU neuron is ``1{x·u >= 0} (x·w)`` with a fixed random gate ``u``, so
the one-hidden-layer network

    f(x) = sum_j a_j 1{x·u_j >= 0} (x·w_j)                       (GaLU)

is linear in ``w`` for fixed ``a`` and the gates never train, whereas the ReLU network

    f(x) = sum_j a_j [x·w_j]_+                                   (ReLU)

gates on its own weights. With ``u_j = w_j`` the two coincide.

Every model here is an *ensemble*: each parameter carries a leading member dimension
``E`` so that many independent networks of different widths and seeds train as one
tensor program (see :mod:`galu.ensembles.training`). Widths are padded to the widest member and a
``(E, K)`` mask zeroes the padded units, so a padded narrow member computes exactly what
the same member would compute unpadded. Member ``e`` is initialized from its own seed
alone, which makes it independent of which other members share the ensemble.

Initialization (one documented choice for both models):

- hidden weights ``w_j ~ N(0, 2/d_in)`` (He-normal). A ReLU unit, and equally a GaLU unit
  whose gate is on half the time, passes on half the second moment of its
  pre-activation; the factor 2 keeps ``E h_j^2 = E |x|^2 / d_in`` at unit scale.
- readout ``a_j ~ N(0, 1/k)`` (LeCun/Xavier-normal on fan-in): the output layer is
  linear, so fan-in scaling keeps the initial output variance O(1) for every width.
- GaLU gates ``u_j ~ N(0, I_d)`` as in the paper; their scale does not matter.
- the optional output bias starts at zero.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import torch
from torch import Tensor, nn

from galu.seeding import derive_seed

MODEL_KINDS = ("relu", "galu")


def _check_members(widths: Sequence[int], seeds: Sequence[int]) -> None:
    if len(widths) == 0:
        raise ValueError("widths must name at least one member, got an empty sequence")
    if len(widths) != len(seeds):
        raise ValueError(
            f"widths and seeds must have one entry per member, got {len(widths)} widths "
            f"and {len(seeds)} seeds"
        )
    bad = [w for w in widths if isinstance(w, bool) or not isinstance(w, int | np.integer)]
    if bad or min(widths) < 1:
        raise ValueError(f"widths must be integers >= 1, got {list(widths)!r}")


def _prefix_mask(sizes: Sequence[int], dtype: torch.dtype) -> Tensor:
    """``(E, max size)`` mask with member e's first ``sizes[e]`` entries 1, the rest 0."""
    size = torch.tensor(list(sizes))
    return (torch.arange(int(size.max()))[None, :] < size[:, None]).to(dtype)


def _check_dim(name: str, value: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < 1:
        raise ValueError(f"{name} must be an integer >= 1, got {value!r}")


def _member_dims(name: str, dims: Sequence[int] | None, full: int, members: int) -> list[int]:
    """Per-member true sizes of a padded dimension (default: all use the full size)."""
    if dims is None:
        return [full] * members
    values = [int(v) for v in dims]
    if len(values) != members or not all(1 <= v <= full for v in values):
        raise ValueError(
            f"{name} must give one size in [1, {full}] per member ({members}), got {list(dims)!r}"
        )
    return values


class _ReadoutProduct(torch.autograd.Function):
    """``h @ readout`` per member, ``(E, B, K) @ (E, K, 1)``, with a cheaper exact backward.

    For a single output the gradient with respect to ``h`` is the outer product
    ``grad @ readout^T``, which ``bmm`` computes as one small GEMM per member (a fixed
    cost of microseconds per member that dominated the step of wide ensembles). Each
    entry is one product, so a broadcast multiply gives the same numbers; adding +0 makes
    its zeros +0 as the GEMM's ``0 + a*b`` does, so the results stay bit-identical. The
    forward and the readout's gradient are the autograd ``bmm`` formulas unchanged.
    """

    @staticmethod
    def forward(ctx: Any, h: Tensor, readout: Tensor) -> Tensor:
        ctx.save_for_backward(h, readout)
        return torch.bmm(h, readout)

    @staticmethod
    def backward(ctx: Any, grad: Tensor) -> tuple[Tensor | None, Tensor | None]:
        h, readout = ctx.saved_tensors
        grad_h = grad_readout = None
        if ctx.needs_input_grad[0]:
            grad_h = (grad * readout.transpose(1, 2)).add_(0.0)
        if ctx.needs_input_grad[1]:
            grad_readout = h.transpose(1, 2).bmm(grad)
        return grad_h, grad_readout


# Members from which the Python autograd node of _ReadoutProduct (about 17 us a step)
# costs less than the per-member GEMMs it saves (about 2 us each); measured on the CPU.
_ELEMENTWISE_BACKWARD_MEMBERS = 8


def readout_product(h: Tensor, readout: Tensor) -> Tensor:
    """``torch.bmm(h, readout)``, with the exact elementwise backward for one output in
    ensembles wide enough for it to pay; the numbers are the same either way."""
    if readout.shape[-1] == 1 and readout.shape[0] >= _ELEMENTWISE_BACKWARD_MEMBERS:
        return _ReadoutProduct.apply(h, readout)
    return torch.bmm(h, readout)


class OneHiddenLayer(nn.Module):
    """Shared machinery of the one-hidden-layer ensembles; subclasses define ``hidden``.

    Parameters ``weight`` ``(E, K, d_in)`` and ``readout`` ``(E, K, out_dim)``, optional
    ``out_bias`` ``(E, out_dim)``. With ``bias=True`` the input is augmented with a
    constant 1, i.e. every hidden unit gets a bias (``d_in = d + 1``), and the output
    gets a bias too.

    Members may also differ in their input and output sizes (``in_dims``, ``out_dims``,
    each at most ``in_dim``/``out_dim``): their inputs are zero-padded and masked, their
    extra outputs are held at exactly zero, so with zero-padded targets (and a loss that
    averages over the member's own outputs) each behaves as it would unpadded.
    """

    def __init__(
        self,
        in_dim: int,
        widths: Sequence[int],
        seeds: Sequence[int],
        out_dim: int = 1,
        bias: bool = False,
        dtype: torch.dtype = torch.float32,
        device: torch.device | str = "cpu",
        *,
        in_dims: Sequence[int] | None = None,
        out_dims: Sequence[int] | None = None,
    ) -> None:
        super().__init__()
        _check_dim("in_dim", in_dim)
        _check_dim("out_dim", out_dim)
        _check_members(widths, seeds)
        self.in_dim, self.out_dim, self.bias = int(in_dim), int(out_dim), bool(bias)
        self.seeds = [int(s) for s in seeds]
        self.member_widths = [int(w) for w in widths]
        self.member_in_dims = _member_dims("in_dims", in_dims, in_dim, len(widths))
        self.member_out_dims = _member_dims("out_dims", out_dims, out_dim, len(widths))
        self.register_buffer("mask", _prefix_mask(self.member_widths, dtype))
        self.register_buffer("in_mask", _prefix_mask(self.member_in_dims, dtype))
        self.register_buffer("out_mask", _prefix_mask(self.member_out_dims, dtype))
        weight, readout = self._initial_weights(dtype)
        self.weight = nn.Parameter(weight)
        self.readout = nn.Parameter(readout)
        out_bias = torch.zeros(len(widths), out_dim, dtype=dtype)
        self.out_bias = nn.Parameter(out_bias) if bias else None
        self._fixed_buffers(dtype)
        self.to(device)

    def _fixed_buffers(self, dtype: torch.dtype) -> None:
        """Hook for fixed random tensors a subclass draws after the weights (none here)."""

    @property
    def padded(self) -> bool:
        """Whether some member is narrower than the widest (then the mask matters)."""
        return min(self.member_widths) < self.max_width

    @property
    def n_members(self) -> int:
        return len(self.member_widths)

    @property
    def max_width(self) -> int:
        return max(self.member_widths)

    @property
    def input_dim(self) -> int:
        """Width of the (possibly bias-augmented) input that hidden units see."""
        return self.in_dim + int(self.bias)

    def _input_columns(self, e: int) -> list[int]:
        """Columns of the augmented input that member e uses: its own d, then the bias 1."""
        return list(range(self.member_in_dims[e])) + ([self.in_dim] if self.bias else [])

    def _member_normal(
        self, stream: str, columns: Callable[[int], list[int]], total: int, dtype: torch.dtype
    ) -> Tensor:
        """Stack per-member N(0, 1) draws ``(k_e, len(columns(e)))``, zero-padded.

        Each member draws from its own generator exactly the numbers it would draw
        unpadded; drawing on the CPU makes them independent of the device.
        """
        out = torch.zeros(self.n_members, self.max_width, total, dtype=dtype)
        for e, (k, seed) in enumerate(zip(self.member_widths, self.seeds, strict=True)):
            gen = torch.Generator().manual_seed(derive_seed(seed, stream))
            cols = columns(e)
            draw = torch.randn(k, len(cols), generator=gen, dtype=torch.float64)
            out[e, :k, cols] = draw.to(dtype)
        return out

    def _initial_weights(self, dtype: torch.dtype) -> tuple[Tensor, Tensor]:
        weight = self._member_normal("weight", self._input_columns, self.input_dim, dtype)
        fan_in = torch.tensor([len(self._input_columns(e)) for e in range(self.n_members)])
        weight = weight * (2.0 / fan_in.double()).sqrt().to(dtype)[:, None, None]
        readout = self._member_normal(
            "readout", lambda e: list(range(self.member_out_dims[e])), self.out_dim, dtype
        )
        k = torch.tensor(self.member_widths, dtype=torch.float64)
        readout = readout * k.rsqrt().to(dtype)[:, None, None]
        return weight, readout

    def prepare(self, x: Tensor) -> Tensor:
        """Check ``x`` (``(B, d)`` shared or ``(E, B, d)`` per member); mask; append the 1."""
        if x.dim() not in (2, 3) or x.shape[-1] != self.in_dim:
            raise ValueError(
                f"x must have shape (batch, {self.in_dim}) or (members, batch, {self.in_dim}),"
                f" got {tuple(x.shape)}"
            )
        if x.dim() == 3 and x.shape[0] != self.n_members:
            raise ValueError(f"x has {x.shape[0]} members, the model has {self.n_members}")
        if min(self.member_in_dims) < self.in_dim:
            # Padded input coordinates must stay invisible, whatever the caller put there.
            x = x * self.in_mask[:, None, :].to(x.dtype)
        if self.bias:
            x = torch.cat([x, torch.ones_like(x[..., :1])], dim=-1)
        return x

    def preactivation(self, x: Tensor) -> Tensor:
        """``x·w_j`` for every member and unit, ``(E, B, K)``; ``x`` already prepared."""
        return torch.matmul(x, self.weight.transpose(1, 2))

    def hidden(self, x: Tensor) -> Tensor:
        raise NotImplementedError

    def encode(self, x: Tensor) -> Tensor:
        """The per-sample features that :meth:`forward_encoded` takes: the prepared input.

        Row b of the result depends on row b of ``x`` alone and on no trainable parameter,
        so a trainer may encode a data set once and sample rows of the encoding
        (:func:`galu.ensembles.training.train_ensemble` does): work that is the same at
        every step is then done once.
        """
        return self.prepare(x)

    def forward_encoded(self, z: Tensor) -> Tensor:
        """Network outputs ``(E, B, out_dim)`` for rows of :meth:`encode`'s features."""
        h = self.hidden(z)
        if self.padded:
            h = h * self.mask[:, None, :]
        return self._output(h)

    def forward(self, x: Tensor) -> Tensor:
        """Network outputs ``(E, B, out_dim)`` for ``x`` of shape ``(B, d)`` or ``(E, B, d)``."""
        return self.forward_encoded(self.encode(x))

    def _output(self, h: Tensor) -> Tensor:
        """Readout of the (masked) hidden units, output bias and output mask."""
        out = readout_product(h, self.readout)
        if self.out_bias is not None:
            out = out + self.out_bias[:, None, :]
        if min(self.member_out_dims) < self.out_dim:
            out = out * self.out_mask[:, None, :]
        return out


class ReLUNet(OneHiddenLayer):
    """Ensemble of ``f(x) = sum_j a_j [x·w_j]_+`` (Fiat et al. 2019, eq. for ReLU nets)."""

    def hidden(self, x: Tensor) -> Tensor:
        return torch.relu(self.preactivation(x))


class GaLUNet(OneHiddenLayer):
    """Ensemble of ``f(x) = sum_j a_j 1{x·u_j >= 0} (x·w_j)`` with fixed gates ``u_j``.

    Fiat et al. 2019, section 2. The gates ``u_j ~ N(0, I_{d_in})`` are drawn from the
    member's seed and stored as the buffer ``gates`` ``(E, K, d_in)``; they receive no
    gradient. With ``bias=True`` the last gate coordinate acts as a random gate offset.
    """

    def _fixed_buffers(self, dtype: torch.dtype) -> None:
        gates = self._member_normal("gates", self._input_columns, self.input_dim, dtype)
        self.register_buffer("gates", gates)

    def gate_open(self, x: Tensor) -> Tensor:
        """``1{x·u_j >= 0}`` as booleans, ``(E, B, K)``; ``x`` already prepared."""
        return torch.matmul(x, self.gates.transpose(1, 2)) >= 0

    def gate_values(self, x: Tensor) -> Tensor:
        """The gates as 0/1 numbers in ``x``'s dtype, ``(E, B, K)``; ``x`` already prepared."""
        # Multiplying by the 0/1 gate is exact and, on the CPU, several times faster than
        # torch.where; the bool -> uint8 view makes the conversion to float cheap too.
        return self.gate_open(x).view(torch.uint8).to(x.dtype)

    def hidden(self, x: Tensor) -> Tensor:
        return self.preactivation(x) * self.gate_values(x)

    def encode(self, x: Tensor) -> Tensor:
        """Prepared input and gates, ``(E, B, d_in + K)``: ``[x, 1{x·u_j >= 0} m_j]``.

        The gates never train (Fiat et al. 2019, section 2), so a sample's gate pattern is
        the same at every step: encoded once, it saves a GEMM and a comparison per step.
        The width mask ``m_j`` is folded in; multiplying by 0/1 factors is exact in any
        order, so the outputs are bit for bit those of gating and masking one by one.
        """
        x = self.prepare(x)
        gate = self.gate_values(x)
        if self.padded:
            gate = gate * self.mask[:, None, :]
        return torch.cat([x.expand(*gate.shape[:-1], x.shape[-1]), gate], dim=-1)

    def forward_encoded(self, z: Tensor) -> Tensor:
        # A contiguous copy of the input part: GEMMs on the strided view can take another
        # kernel and round differently.
        x, gate = z[..., : self.input_dim].contiguous(), z[..., self.input_dim :]
        return self._output(self.preactivation(x) * gate)


def make_model(kind: str, *args: Any, **kwargs: Any) -> OneHiddenLayer:
    """Build a ``relu`` or ``galu`` ensemble; the other arguments are those of
    :class:`OneHiddenLayer` (in_dim, widths, seeds, out_dim, bias, dtype, device, ...)."""
    classes = {"relu": ReLUNet, "galu": GaLUNet}
    if kind not in classes:
        raise ValueError(f"model kind must be one of {MODEL_KINDS}, got {kind!r}")
    return classes[kind](*args, **kwargs)
