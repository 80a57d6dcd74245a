"""Fixed points of the order-parameter ODEs and their linear stability.

Straat & Biehl (arXiv 1903.07378, Sec. 4) linearize the ODEs of
:mod:`galu.scm.odes` around fixed points: the perceptron's ``R = Q = 1`` has
eigenvalues ``-eta/2`` and ``eta^2/2 - eta`` (stable for ``eta < 2``), and the
K = M = 2 symmetric plateau has one positive eigenvalue whose eigenvector
``(.5, -.5, -.5, .5, 0, 0, 0)`` breaks the students' symmetry.

The Jacobian is taken by finite differences of the vectorized right-hand side,
in the packed coordinates of :func:`galu.scm.odes.pack`. Where a step in either
direction stays inside the realizable states (``[[Q, R], [R^T, T]]`` positive
semi-definite) central differences are used. Fixed points of realizable
students lie on the boundary of that set (the student equals a teacher, so the
covariance is singular); there the right-hand side exists on one side only and
behaves like ``h^(3/2)`` (``arcsin`` and square roots of ``1 - rho^2``), so the
one-sided quotients are Richardson-extrapolated in powers of ``sqrt h``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import optimize

from galu.scm.odes import CommitteeODE, is_valid_state

Array = np.ndarray


@dataclass(frozen=True)
class Stability:
    """Eigen-decomposition of the Jacobian at a fixed point, eigenvalues by descending real part.

    ``eigenvectors[:, j]`` belongs to ``eigenvalues[j]``, normalized to unit length
    with its first non-negligible component positive (a reproducible sign).
    """

    fixed_point: Array
    flow_jacobian: Array
    eigenvalues: Array
    eigenvectors: Array


def find_fixed_point(ode: CommitteeODE, y0: Array, tol: float = 1e-12) -> Array:
    """A root of ``ode.rhs`` found by Powell's hybrid method from ``y0``.

    Raises RuntimeError if the solver does not converge to ``|rhs| <= 1e3 tol``.
    """
    y0 = np.asarray(y0, dtype=float)
    if y0.shape != (ode.size,):
        raise ValueError(f"y0 must have shape ({ode.size},), got {y0.shape}")
    sol = optimize.root(lambda y: ode.rhs(0.0, y), y0, method="hybr", tol=tol)
    residual = float(np.max(np.abs(ode.rhs(0.0, sol.x))))
    if not sol.success and residual > 1e3 * tol:
        raise RuntimeError(f"no fixed point found from y0: {sol.message} (|rhs| = {residual:.3g})")
    return sol.x


def flow_jacobian(ode: CommitteeODE, y: Array, step: float = 1e-5) -> Array:
    """``d rhs / d y`` at ``y`` by central differences, or Richardson one-sided at the boundary."""
    y = np.asarray(y, dtype=float)
    if step <= 0:
        raise ValueError(f"step must be > 0, got {step}")
    columns = [_column(ode, y, k, step) for k in range(ode.size)]
    return np.stack(columns, axis=1)


def _column(ode: CommitteeODE, y: Array, k: int, step: float) -> Array:
    e = np.zeros_like(y)
    e[k] = 1.0
    f = lambda z: ode.rhs(0.0, z)
    if is_valid_state(ode, y + step * e) and is_valid_state(ode, y - step * e):
        return (f(y + step * e) - f(y - step * e)) / (2 * step)
    for side in (1.0, -1.0):
        if all(is_valid_state(ode, y + side * h * e) for h in _richardson_steps()):
            return side * _one_sided(f, y, side * e)  # derivative along -e is -df/dy_k
    raise ValueError(
        f"cannot differentiate along component {k}: the state is on the boundary of the "
        "realizable set in both directions"
    )


def _richardson_steps(h0: float = 1e-2, levels: int = 7) -> Array:
    return h0 * 4.0 ** -np.arange(levels)


def _one_sided(f, y: Array, direction: Array) -> Array:
    """Extrapolate ``(f(y + h d) - f(y)) / h`` to ``h -> 0`` assuming powers of ``sqrt h``.

    Steps shrink by 4, so the term ``h^(m/2)`` shrinks by ``2^m`` and is removed at
    level ``m`` of the Richardson table.
    """
    f0 = f(y)
    table = [(f(y + h * direction) - f0) / h for h in _richardson_steps()]
    for m in range(1, len(table)):
        factor = 2.0**m
        pairs = zip(table[:-1], table[1:], strict=True)
        table = [(factor * fine - coarse) / (factor - 1) for coarse, fine in pairs]
    return table[0]


def analyse(ode: CommitteeODE, y: Array, step: float = 1e-5) -> Stability:
    """Jacobian at ``y`` and its eigenvalues and eigenvectors."""
    jac = flow_jacobian(ode, y, step)
    values, vectors = np.linalg.eig(jac)
    order = np.lexsort((-values.imag, -values.real))
    values, vectors = values[order], vectors[:, order]
    vectors = vectors / np.linalg.norm(vectors, axis=0)
    # sign convention: the first component that is not negligible is positive
    big = np.abs(vectors) > 1e-6 * np.abs(vectors).max(axis=0)
    pivot = vectors[np.argmax(big, axis=0), np.arange(vectors.shape[1])]
    vectors = vectors * (np.abs(pivot) / pivot)
    if np.all(np.abs(values.imag) == 0):
        values, vectors = values.real, vectors.real
    return Stability(np.asarray(y, dtype=float), jac, values, vectors)
