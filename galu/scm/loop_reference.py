"""Plain-loop order-parameter ODEs: the test oracle and benchmark baseline for :mod:`odes`.

Written the way the equations read (Straat & Biehl, arXiv 1903.07378, Eqs. 5-7):
one explicit Python loop per index, a covariance matrix assembled per tuple and
one average evaluated per call. It shares only the scalar averages with
:class:`galu.scm.odes.CommitteeODE`, so agreement checks the vectorized index
bookkeeping (gathers, symmetries, signs, packing).
"""

from __future__ import annotations

import numpy as np

from galu.scm.averages import pair_average, quad_average, triple_average

Array = np.ndarray


def _cov(omega: Array, units: tuple[int, ...]) -> Array:
    return np.array([[omega[a, b] for b in units] for a in units])


def loop_rhs(
    R: Array, Q: Array, activation: str, eta: float, eta2_term: bool, T: Array | None = None
) -> tuple[Array, Array]:
    """``(dR/dalpha, dQ/dalpha)`` as full matrices, by explicit loops over all index tuples."""
    K, M = R.shape
    T = np.eye(M) if T is None else T
    omega = np.block([[Q, R], [R.T, T]])
    students, teachers = range(K), range(K, K + M)

    def i3(a: int, b: int, c: int) -> float:
        return float(triple_average(_cov(omega, (a, b, c)), activation))

    def i4(a: int, b: int, c: int, d: int) -> float:
        return float(quad_average(_cov(omega, (a, b, c, d)), activation))

    dR = np.zeros((K, M))
    for i in students:
        for n in range(M):
            y_n = K + n
            gain = sum(i3(i, y_n, m) for m in teachers)
            loss = sum(i3(i, y_n, j) for j in students)
            dR[i, n] = eta * (gain - loss)
    dQ = np.zeros((K, K))
    for i in students:
        for k in students:
            total = 0.0
            for a, b in ((i, k), (k, i)):
                total += sum(i3(a, b, m) for m in teachers) - sum(i3(a, b, j) for j in students)
            dQ[i, k] = eta * total
            if eta2_term:
                tt = sum(i4(i, k, n, m) for n in teachers for m in teachers)
                st = sum(i4(i, k, j, n) for j in students for n in teachers)
                ss = sum(i4(i, k, j, m) for j in students for m in students)
                dQ[i, k] += eta**2 * (tt - 2 * st + ss)
    return dR, dQ


def loop_eps_g(R: Array, Q: Array, activation: str, T: Array | None = None) -> float:
    """``eps_g = (sum_ij I2(x_i, x_j) - 2 sum_in I2(x_i, y_n) + sum_nm I2(y_n, y_m)) / 2``."""
    K, M = R.shape
    T = np.eye(M) if T is None else T
    omega = np.block([[Q, R], [R.T, T]])

    def i2(a: int, b: int) -> float:
        return float(pair_average(_cov(omega, (a, b)), activation))

    ss = sum(i2(i, j) for i in range(K) for j in range(K))
    st = sum(i2(i, K + n) for i in range(K) for n in range(M))
    tt = sum(i2(K + n, K + m) for n in range(M) for m in range(M))
    return 0.5 * (ss - 2 * st + tt)
