"""Layer and Jacobian spectra of deep MLPs (Richemond & Guo, arXiv 1905.01369, Fig. 6).

Two views of how isometric a network is:

- per layer, the eigenvalues of ``W_l W_l^T`` (sorted, descending), at
  initialization and after training; with orthogonal init they all equal ``g^2``,
  and the paper's Figure 6 shows deep layers' spectra staying flat near 1 with the
  tilted ReLU after training;
- the squared singular values of the input-output Jacobian
  ``d h_depth / d h_1`` of the hidden stack (first to last hidden pre-activation),
  per input (Pennington, Schoenholz & Ganguli 2017, "dynamical isometry"). For
  the tilted ReLU and |x| at gain 1 every layer's Jacobian ``W diag(+-1)`` is
  orthogonal, so all of them equal 1 exactly.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd
import torch
from torch import Tensor

from galu.normalization.mlp import DeepMLP

STAGES = ("init", "trained")


def weight_spectra(model: DeepMLP) -> list[np.ndarray]:
    """Eigenvalues of ``W_l W_l^T`` for every linear layer (readout last), descending.

    In float64; a layer with more outputs than inputs (never here: the readout has
    10 <= width) would show ``out - in`` zero eigenvalues. A layer of a network that
    diverged (weights NaN, or so large that ``W W^T`` overflows) has no spectrum: its
    eigenvalues are NaN (``eigvalsh`` would fail to converge and lose the whole job).
    """
    spectra = []
    for linear in model.linears:
        weight = linear.weight.detach().to("cpu", torch.float64)
        gram = weight @ weight.T
        if not bool(torch.isfinite(gram).all()):
            spectra.append(np.full(gram.shape[0], np.nan))
            continue
        spectra.append(torch.linalg.eigvalsh(gram).flip(0).numpy())
    return spectra


def spectra_table(model: DeepMLP, stage: str, labels: Mapping[str, Any]) -> pd.DataFrame:
    """Tidy rows ``labels..., layer, stage, index, eigenvalue`` (the spectra.csv contract).

    ``layer`` counts linear layers from 1 (the input layer) to ``depth + 1`` (the
    readout); ``index`` is 0 for the largest eigenvalue.
    """
    if stage not in STAGES:
        raise ValueError(f"stage must be one of {STAGES}, got {stage!r}")
    frames = [
        pd.DataFrame(
            {
                **labels,
                "layer": layer,
                "stage": stage,
                "index": np.arange(eig.size),
                "eigenvalue": eig,
            }
        )
        for layer, eig in enumerate(weight_spectra(model), start=1)
    ]
    return pd.concat(frames, ignore_index=True)


def jacobian_squared_singular_values(model: DeepMLP, x: Tensor) -> np.ndarray:
    """Squared singular values of ``d h_depth / d h_1`` at each input, shape (batch, width).

    Reverse mode, all Jacobians in one backward pass: every input's ``h_1`` is repeated
    once per output unit, and row ``i`` of a copy pulls back the unit vector ``e_i``.
    Batch norm, if any, uses its running statistics (eval mode), so the copies do not
    interact and each Jacobian depends on its own input only. (``torch.func.jacrev`` gives
    the same Jacobians but imports ``torch._dynamo``: about 1 s of CPU per job. Passing the
    unit vectors as ``grad_outputs`` imports ``sympy`` through torch's shape checks, about
    0.5 s; the gradient of ``sum(out * units)`` pulls back exactly ``units``, since 1 * 0
    and 1 * 1 are exact.)
    """
    was_training = model.training
    model.eval()
    with torch.no_grad():
        h1 = model.linears[0](x)
    batch, width = h1.shape
    copies = h1.repeat_interleave(width, dim=0).requires_grad_(True)
    out = model.hidden_stack(copies)
    units = torch.eye(out.shape[1], dtype=out.dtype, device=out.device).repeat(batch, 1)
    (rows,) = torch.autograd.grad((out * units).sum(), copies)
    model.train(was_training)
    jac = rows.view(batch, out.shape[1], width)  # jac[b, i, j] = d h_depth[i] / d h_1[j]
    return torch.linalg.svdvals(jac.to(torch.float64)).square().cpu().numpy()


def jacobian_table(model: DeepMLP, x: Tensor, labels: Mapping[str, Any]) -> pd.DataFrame:
    """Tidy rows ``labels..., sample, index, squared_singular_value`` (index 0 largest)."""
    sv2 = jacobian_squared_singular_values(model, x)
    samples, index = np.meshgrid(np.arange(sv2.shape[0]), np.arange(sv2.shape[1]), indexing="ij")
    return pd.DataFrame(
        {
            **labels,
            "sample": samples.ravel(),
            "index": index.ravel(),
            "squared_singular_value": sv2.ravel(),
        }
    )
