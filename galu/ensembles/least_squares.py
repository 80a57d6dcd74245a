"""The exact squared-loss optimum of a one-hidden-layer GaLU network.

Fiat, Malach & Shalev-Shwartz (arXiv 1906.05032), section 3: with the gates ``u_j``
fixed, a scalar-output GaLU network ``f(x) = sum_j a_j 1{x·u_j >= 0} (x·w_j)`` depends
on its weights only through ``v_j = a_j w_j`` and equals ``<Phi_U(x), v>`` with the
random feature map

    Phi_U(x) = [1{x·u_1 >= 0} x, ..., 1{x·u_k >= 0} x]  in R^{kd}.

Minimizing the training squared loss is therefore the least-squares problem
``min_v |Phi v - y|^2``. We solve it in float64 with an SVD-based, rank-revealing
solver and return the minimum-norm solution and the numerical rank. Its residual is the
part of ``y`` outside the column space of ``Phi``, so for labels independent of the
inputs the expected normalized loss is ``1 - rank/m`` = ``1 - kd/m`` for ``kd <= m``
(the paper's under-parameterized law) and zero once the rank reaches ``m``.

With ``out_dim > 1`` each output column is solved independently: that is the optimum
of a network with its own hidden weights per output, a relaxation of the GaLU network
with one shared readout (whose problem is bilinear, not convex). Only for
``out_dim = 1`` is it the GaLU optimum, and only then can it be loaded into a
:class:`~galu.ensembles.networks.GaLUNet`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
from torch import Tensor

from galu.ensembles.networks import GaLUNet

# Upper bound on the float64 elements of one chunk's feature matrices (256 MiB): members
# are solved in chunks of this size so the paper-scale grids fit in memory.
_MAX_ELEMENTS = 1 << 25
LSTSQ_DRIVERS = ("auto", "gelsd", "svd")
# exact_fits certifies full row rank when lambda_min(Phi Phi^T) exceeds this fraction of
# its trace, i.e. sigma_min / sigma_max > 1e-4: far above the rounding of the kernel and of
# its Cholesky factorization (about m * eps * lambda_max, 5e-13 of it at m = 2048) and far
# above the solvers' rank cutoff (rcond = eps * max(m, p) < 1e-9 for p below 10^6).
_FULL_RANK_MARGIN = 1e-8


def galu_features(x: Tensor, gates: Tensor, mask: Tensor | None = None) -> Tensor:
    """``Phi_U(x)`` for every member: ``(E, m, K*d)``, unit-major (unit j's block is x).

    ``x`` is ``(m, d)`` shared or ``(E, m, d)``; ``gates`` is ``(E, K, d)``; ``mask``
    ``(E, K)`` zeroes the features of padded units.
    """
    on = _gates_on(x, gates, mask)
    if x.dim() == 2:
        x = x.expand(gates.shape[0], *x.shape)
    phi = on[..., :, None] * x[..., None, :]
    return phi.reshape(phi.shape[0], phi.shape[1], -1)


def _gates_on(x: Tensor, gates: Tensor, mask: Tensor | None) -> Tensor:
    """``1{x·u_j >= 0}`` (times the unit mask) in ``x``'s dtype, ``(E, m, K)``."""
    on = (torch.matmul(x, gates.transpose(1, 2)) >= 0).to(x.dtype)
    return on if mask is None else on * mask[:, None, :].to(x.dtype)


@dataclass
class LeastSquares:
    """Minimum-norm least-squares solutions per member (all float64).

    ``coef`` ``(E, p, o)``, ``fitted`` ``(E, m, o)`` = ``A @ coef``, ``rank`` ``(E,)``.
    """

    coef: Tensor
    fitted: Tensor
    rank: Tensor


def min_norm_lstsq(
    a: Tensor, b: Tensor, rcond: float | None = None, driver: str = "auto"
) -> LeastSquares:
    """Solve ``min |a x - b|`` with minimum ``|x|`` for a batch ``a`` ``(E, m, p)``, in float64.

    Both drivers are SVD-based, so rank deficiency is handled and reported: ``gelsd``
    (LAPACK's divide-and-conquer solver; CPU only, about twice as fast) and ``svd`` (the
    pseudo-inverse from ``torch.linalg.svd``; any device). ``auto`` picks ``gelsd`` on the
    CPU. Singular values at or below ``rcond`` times the largest count as zero; the
    default ``rcond`` is ``eps * max(m, p)``, the usual numerical-rank tolerance.
    (``gelsy`` is not offered: torch's wrapper leaves its pivot array uninitialized and
    returns wrong ranks, pytorch/pytorch#187411.)
    """
    if a.dim() != 3 or b.dim() != 3 or a.shape[:2] != b.shape[:2]:
        raise ValueError(
            f"a must be (E, m, p) and b (E, m, o) with matching E and m, "
            f"got a {tuple(a.shape)}, b {tuple(b.shape)}"
        )
    if driver not in LSTSQ_DRIVERS:
        raise ValueError(f"driver must be one of {LSTSQ_DRIVERS}, got {driver!r}")
    a, b = a.double(), b.double()
    if rcond is None:
        rcond = torch.finfo(torch.float64).eps * max(a.shape[1], a.shape[2])
    if not 0 <= rcond < 1:
        raise ValueError(f"rcond must be in [0, 1), got {rcond!r}")
    if driver == "gelsd" or (driver == "auto" and a.device.type == "cpu"):
        solution = torch.linalg.lstsq(a, b, rcond=rcond, driver="gelsd")
        return LeastSquares(
            coef=solution.solution, fitted=a @ solution.solution, rank=solution.rank
        )
    return _svd_lstsq(a, b, rcond)


def _svd_lstsq(a: Tensor, b: Tensor, rcond: float) -> LeastSquares:
    u, s, vh = torch.linalg.svd(a, full_matrices=False)
    tiny = torch.finfo(s.dtype).tiny
    keep = s > rcond * s.amax(dim=-1, keepdim=True).clamp_min(tiny)
    projected = (u.transpose(1, 2) @ b) * keep[..., None]
    inverse = torch.where(keep, 1.0 / s.clamp_min(tiny), 0.0)
    coef = vh.transpose(1, 2) @ (projected * inverse[..., None])
    return LeastSquares(coef=coef, fitted=u @ projected, rank=keep.sum(dim=-1))


@dataclass
class ExactGaLU:
    """Least-squares GaLU optimum per member.

    ``weight`` ``(E, K, d_in, o)``: the hidden weights of unit j for output column c
    (``v_j`` above); ``out_bias`` ``(E, o)`` or None; ``fitted`` ``(E, m, o)`` the training
    predictions; ``rank`` ``(E,)`` of ``Phi`` (plus the bias column).
    """

    weight: Tensor
    out_bias: Tensor | None
    fitted: Tensor
    rank: Tensor


def _index_chunks(members: Tensor, per_member: int) -> list[Tensor]:
    """``members`` (indices) in chunks of at most ``_MAX_ELEMENTS`` elements; none if empty."""
    step = max(1, _MAX_ELEMENTS // max(per_member, 1))
    return list(members.split(step)) if members.numel() else []


def _member_inputs(model: GaLUNet, x: Tensor, rows: Tensor) -> tuple[Tensor, Tensor, Tensor]:
    """Members ``rows``' prepared float64 inputs (shared or their own), gates and unit mask."""
    x = model.prepare(x.to(model.gates.device, torch.float64))
    x = x if x.dim() == 2 else x[rows]
    return x, model.gates[rows].double(), model.mask[rows]


def _design(model: GaLUNet, x: Tensor, rows: Tensor) -> Tensor:
    phi = galu_features(*_member_inputs(model, x, rows))
    if model.bias:
        phi = torch.cat([phi, torch.ones_like(phi[..., :1])], dim=-1)
    return phi


def galu_kernel(model: GaLUNet, x: Tensor, rows: Tensor) -> Tensor:
    """``Phi Phi^T`` ``(E, m, m)`` in float64 for members ``rows``, without forming ``Phi``.

    Unit j's block of a sample's features is ``1{x·u_j >= 0} x``, so the inner product of
    two samples' features is ``(x·x') * sum_j g_j(x) g_j(x')``: the kernel is the
    elementwise product of the inputs' Gram matrix and the gates' (plus 1 for the bias
    column). That costs ``m^2 (d + K)`` instead of the ``m^2 K d`` of ``Phi`` itself.
    """
    x, gates, mask = _member_inputs(model, x, rows)
    on = _gates_on(x, gates, mask)
    inputs = torch.matmul(x, x.transpose(-1, -2))
    kernel = torch.matmul(on, on.transpose(1, 2)) * inputs
    return kernel + 1.0 if model.bias else kernel


@dataclass
class ExactFits:
    """``fitted`` ``(E, m, o)`` and ``rank`` ``(E,)`` as :func:`solve_galu` gives them."""

    fitted: Tensor
    rank: Tensor


def _certified_full_rank(kernel: Tensor) -> Tensor:
    """Members whose kernel has ``lambda_min > _FULL_RANK_MARGIN * trace``, ``(E,)`` bool.

    A Cholesky factorization of the kernel lowered by that much succeeds exactly when it
    is still positive definite (to the factorization's rounding, far below the margin).
    """
    trace = kernel.diagonal(dim1=1, dim2=2).sum(dim=1)
    eye = torch.eye(kernel.shape[1], dtype=kernel.dtype, device=kernel.device)
    shifted = kernel - (_FULL_RANK_MARGIN * trace)[:, None, None] * eye
    return torch.linalg.cholesky_ex(shifted).info == 0


def exact_fits(
    model: GaLUNet, x: Tensor, y: Tensor, rcond: float | None = None, driver: str = "auto"
) -> ExactFits:
    """The training predictions and ranks of :func:`solve_galu`, without its solve where
    ``Phi`` provably has full row rank.

    With ``p = K d_in (+ 1) >= m`` features and ``sigma_min / sigma_max`` of ``Phi`` above
    ``1e-4`` (certified from the kernel, :func:`galu_kernel`), the solver's numerical
    rank is ``m`` and the minimum-norm solution interpolates: the fit is ``y`` itself (the
    solver returns ``y`` up to its rounding). Those members cost a kernel and a Cholesky
    factorization of ``m x m`` instead of an SVD-based solve of ``m x p``; every other
    member (fewer features than samples, or nearly rank deficient) is solved by
    :func:`solve_galu`'s own solver. Members' results do not depend on each other.
    """
    y = _member_targets(model, y)
    members, m = model.n_members, x.shape[-2]
    certified = torch.zeros(members, dtype=torch.bool)
    if rcond is None or rcond < math.sqrt(_FULL_RANK_MARGIN):
        # Only members with at least m features of their own can have full row rank.
        features = torch.tensor(model.member_widths) * model.input_dim + int(model.bias)
        candidates = torch.nonzero(features >= m).flatten()
        for chunk in _index_chunks(candidates, m * m):
            kernel = galu_kernel(model, x, chunk.to(model.gates.device))
            certified[chunk] = _certified_full_rank(kernel).cpu()
    fitted = y.clone()
    rank = torch.full((members,), m, dtype=torch.long, device=y.device)
    rest = torch.nonzero(~certified).flatten()
    for chunk in _index_chunks(rest, m * model.max_width * model.input_dim):
        rows = chunk.to(y.device)
        solution = min_norm_lstsq(_design(model, x, rows), y[rows], rcond, driver)
        fitted[rows], rank[rows] = solution.fitted, solution.rank.to(rank.dtype)
    return ExactFits(fitted=fitted, rank=rank)


def _member_targets(model: GaLUNet, y: Tensor) -> Tensor:
    """``y`` as float64 ``(E, m, o)`` on the model's device, checked (and the model)."""
    if not isinstance(model, GaLUNet):
        raise ValueError(f"model must be a GaLUNet, got {type(model).__name__}")
    members = model.n_members
    y = y.to(model.gates.device, torch.float64)
    if y.dim() == 2:
        y = y.expand(members, *y.shape)
    if y.dim() != 3 or y.shape[0] != members or y.shape[2] != model.out_dim:
        raise ValueError(
            f"y must be (m, {model.out_dim}) or ({members}, m, {model.out_dim}), "
            f"got {tuple(y.shape)}"
        )
    return y


def solve_galu(
    model: GaLUNet, x: Tensor, y: Tensor, rcond: float | None = None, driver: str = "auto"
) -> ExactGaLU:
    """Exact least-squares GaLU fit using ``model``'s gates, widths and bias setting.

    ``x`` ``(m, d)`` shared or ``(E, m, d)``; ``y`` matching ``(m, o)`` or ``(E, m, o)``
    with ``o = model.out_dim``. Members are solved in batches (chunked for memory).
    """
    y = _member_targets(model, y)
    members = model.n_members
    width, d_in = model.max_width, model.input_dim
    parts = []
    for rows in _index_chunks(torch.arange(members, device=y.device), y.shape[1] * width * d_in):
        parts.append(min_norm_lstsq(_design(model, x, rows), y[rows], rcond, driver))
    coef = torch.cat([p.coef for p in parts])
    hidden = coef[:, : width * d_in].reshape(members, width, d_in, model.out_dim)
    return ExactGaLU(
        weight=hidden,
        out_bias=coef[:, -1] if model.bias else None,
        fitted=torch.cat([p.fitted for p in parts]),
        rank=torch.cat([p.rank for p in parts]),
    )


@torch.no_grad()
def load_exact(model: GaLUNet, solution: ExactGaLU) -> None:
    """Write a scalar-output solution into ``model`` (readout 1, ``w_j = v_j``).

    Only ``out_dim = 1`` has this form; for vector outputs the per-output optimum is
    not a GaLU network with a shared readout, so this raises.
    """
    if model.out_dim != 1:
        raise ValueError(
            f"load_exact needs out_dim = 1, got out_dim = {model.out_dim}: the per-output "
            "least-squares optimum is not a GaLU network with a shared readout"
        )
    model.weight.copy_(solution.weight[..., 0].to(model.weight.dtype))
    model.readout.copy_(model.mask[..., None].to(model.readout.dtype))
    if model.out_bias is not None and solution.out_bias is not None:
        model.out_bias.copy_(solution.out_bias.to(model.out_bias.dtype))
