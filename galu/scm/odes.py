"""Order-parameter ODEs of on-line SGD in a soft committee machine, for any K, M.

Straat & Biehl (arXiv 1903.07378, Eqs. 5-7), after Saad & Solla (1995) and
Biehl & Schwarze (1995). A student ``sigma = sum_i g(x_i)`` with ``x_i = J_i.xi/sqrt N``
learns a teacher ``tau = sum_n g(y_n)``, ``y_n = B_n.xi/sqrt N``, by on-line SGD on
``(sigma - tau)^2 / 2`` with learning rate ``eta``. With ``delta_i = g'(x_i)(tau - sigma)``
and ``alpha = steps / N``, in the limit ``N -> inf``:

* ``dR_in/dalpha = eta <delta_i y_n>``
* ``dQ_ik/dalpha = eta <delta_i x_k + delta_k x_i> + eta^2 <delta_i delta_k>``
* ``eps_g = <(sigma - tau)^2> / 2``

where every average is over the Gaussian pre-activations, whose covariance is
``Omega = [[Q, R], [R^T, T]]`` (``T_nm = B_n.B_m/N``, the identity by default).
Writing ``tau - sigma = sum_u s_u g(z_u)`` over all K + M units with ``s = -1`` for
students and ``+1`` for teachers, the averages become signed sums of the pair,
triple and quadruple averages of :mod:`galu.scm.averages`; this module evaluates
all index tuples in one vectorized call each. ``eta2_term=False`` drops the
``eta^2`` term: the paper's small-learning-rate form for K, M > 1.

**State packing.** The state vector is ``R`` row-major (``R_11, R_12, ..., R_1M,
R_21, ...``) followed by the upper triangle of ``Q`` row-major (``Q_11, Q_12, ...,
Q_1K, Q_22, ...``): ``K M + K (K + 1) / 2`` numbers. For K = M = 2 this is
``(R11, R12, R21, R22, Q11, Q12, Q22)``, the paper's ordering of eigenvectors.
ReLU'(0) = 0; it has measure zero in every average.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
from scipy.integrate import solve_ivp

from galu.scm.averages import gate_pair_average, pair_average, quad_average, triple_average
from galu.scm.transfer import check_activation

Array = np.ndarray

IVP_METHODS = ("RK45", "RK23", "DOP853", "Radau", "BDF", "LSODA")


def state_size(K: int, M: int) -> int:
    """Length of the packed state: ``K M + K (K + 1) / 2``."""
    return K * M + K * (K + 1) // 2


def pack(R: Array, Q: Array) -> Array:
    """``(R, Q) -> y``: R row-major, then Q's upper triangle row-major (see module doc)."""
    R, Q = np.asarray(R, dtype=float), np.asarray(Q, dtype=float)
    K = R.shape[0]
    if R.ndim != 2 or Q.shape != (K, K):
        raise ValueError(f"R must be (K, M) and Q (K, K); got R {R.shape}, Q {Q.shape}")
    if not np.allclose(Q, Q.T, rtol=0, atol=1e-12):
        raise ValueError("Q must be symmetric")
    return np.concatenate([R.ravel(), Q[np.triu_indices(K)]])


def unpack(y: Array, K: int, M: int) -> tuple[Array, Array]:
    """Inverse of :func:`pack`; works on a trailing axis, ``y`` of shape ``(..., size)``."""
    y = np.asarray(y, dtype=float)
    if y.shape[-1] != state_size(K, M):
        raise ValueError(f"y must end in {state_size(K, M)} (K={K}, M={M}), got {y.shape}")
    lead = y.shape[:-1]
    R = y[..., : K * M].reshape(*lead, K, M)
    Q = np.zeros((*lead, K, K))
    iu = np.triu_indices(K)
    Q[..., iu[0], iu[1]] = y[..., K * M :]
    Q[..., iu[1], iu[0]] = y[..., K * M :]
    return R, Q


def state_labels(K: int, M: int) -> list[str]:
    """Names of the packed components, 1-based: ``R_i_n`` then ``Q_i_k`` with ``i <= k``."""
    r = [f"R_{i + 1}_{n + 1}" for i in range(K) for n in range(M)]
    q = [f"Q_{i + 1}_{k + 1}" for i, k in zip(*np.triu_indices(K), strict=True)]
    return r + q


def _positive_int(name: str, value: int) -> int:
    if not isinstance(value, (int, np.integer)) or value < 1:
        raise ValueError(f"{name} must be an integer >= 1, got {value!r}")
    return int(value)


@dataclass(frozen=True)
class CommitteeODE:
    """Right-hand side of the order-parameter ODEs for a K-student, M-teacher committee.

    ``eta2_term`` keeps the ``eta^2 <delta_i delta_k>`` term (exact for any eta);
    False gives the paper's small-eta form. ``teacher`` is ``T`` (default identity).
    """

    K: int
    M: int
    activation: str
    eta: float
    eta2_term: bool = True
    teacher: Array | None = None
    _index: dict = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        _positive_int("K", self.K)
        _positive_int("M", self.M)
        check_activation(self.activation)
        if not (isinstance(self.eta, (int, float)) and math.isfinite(self.eta) and self.eta > 0):
            raise ValueError(f"eta must be a finite number > 0, got {self.eta!r}")
        T = np.eye(self.M) if self.teacher is None else np.asarray(self.teacher, dtype=float)
        if T.shape != (self.M, self.M):
            raise ValueError(f"teacher must be ({self.M}, {self.M}), got {T.shape}")
        object.__setattr__(self, "teacher", T)
        object.__setattr__(self, "_index", _tuple_index(self.K, self.M))

    @property
    def size(self) -> int:
        return state_size(self.K, self.M)

    def covariance(self, y: Array) -> Array:
        """``Omega`` of all K + M pre-activations (students first) for state ``y``."""
        R, Q = unpack(y, self.K, self.M)
        return np.block([[Q, R], [R.T, self.teacher]])

    def rhs(self, alpha: float, y: Array) -> Array:
        """``dy/dalpha`` (``alpha`` unused: the flow is autonomous)."""
        K, idx = self.K, self._index
        omega = self.covariance(y)
        sign = idx["sign"]
        # drive[i, b] = sum_u s_u <g'(x_i) z_b g(z_u)>, for every student i and unit b
        triple = triple_average(omega[idx["t3_rows"], idx["t3_cols"]], self.activation)
        drive = triple @ sign
        dR = self.eta * drive[:, K:]
        dQ = self.eta * (drive[:, :K] + drive[:, :K].T)
        if self.eta2_term:
            dQ = dQ + self.eta**2 * self._noise(omega)
        return np.concatenate([dR.ravel(), dQ[np.triu_indices(K)]])

    def parts(self, y: Array) -> tuple[Array, Array]:
        """``(a, b)`` with ``rhs = eta a + eta^2 b`` (Straat & Biehl, Eqs. 5-6), packed like ``y``.

        ``a`` is the drive ``<delta_i y_n>``, ``<delta_i x_k + delta_k x_i>`` (eta-free);
        ``b`` is zero on the R block and ``<delta_i delta_k>`` on the Q block, whatever
        ``eta2_term`` says. Learning-rate schedules (:mod:`galu.scm.schedules`) use them.
        """
        K, idx = self.K, self._index
        omega = self.covariance(y)
        triple = triple_average(omega[idx["t3_rows"], idx["t3_cols"]], self.activation)
        drive = triple @ idx["sign"]
        a_q = drive[:, :K] + drive[:, :K].T
        a = np.concatenate([drive[:, K:].ravel(), a_q[np.triu_indices(K)]])
        b_q = self._noise(omega)[np.triu_indices(K)]
        b = np.concatenate([np.zeros(K * self.M), b_q])
        return a, b

    def _noise(self, omega: Array) -> Array:
        """``<delta_i delta_k> = sum_uv s_u s_v <g'(x_i) g'(x_k) g(z_u) g(z_v)>`` (K, K).

        Diagonal terms (``i = k``) use the three-unit gated pair average.
        """
        idx, K = self._index, self.K
        off = quad_average(omega[idx["q4_rows"], idx["q4_cols"]], self.activation)
        diag = gate_pair_average(omega[idx["g3_rows"], idx["g3_cols"]], self.activation)
        values = np.concatenate([off * idx["q4_weight"], diag * idx["g3_weight"]])
        targets = np.concatenate([idx["q4_target"], idx["g3_target"]])
        noise = np.bincount(targets, weights=values, minlength=K * K).reshape(K, K)
        return noise + noise.T - np.diag(np.diag(noise))

    def eps_g(self, y: Array) -> Array:
        """Generalization error for packed states ``y`` of shape ``(..., size)``."""
        R, Q = unpack(y, self.K, self.M)
        return generalization_error(R, Q, self.activation, self.teacher)


def generalization_error(
    R: Array, Q: Array, activation: str, teacher: Array | None = None
) -> Array:
    """``eps_g = <(sigma - tau)^2>/2`` for ``R`` (..., K, M), ``Q`` (..., K, K).

    A signed sum of pair averages over all K + M units (Straat & Biehl, Eq. 7).
    Clipped at 0: near a perfect student the O(1) terms cancel to roundoff.
    """
    R, Q = np.asarray(R, dtype=float), np.asarray(Q, dtype=float)
    K, M = R.shape[-2:]
    T = np.eye(M) if teacher is None else np.asarray(teacher, dtype=float)
    lead = np.broadcast_shapes(R.shape[:-2], Q.shape[:-2])
    omega = np.concatenate(
        [
            np.concatenate(
                [np.broadcast_to(Q, (*lead, K, K)), np.broadcast_to(R, (*lead, K, M))], -1
            ),
            np.concatenate(
                [
                    np.broadcast_to(np.swapaxes(R, -1, -2), (*lead, M, K)),
                    np.broadcast_to(T, (*lead, M, M)),
                ],
                -1,
            ),
        ],
        -2,
    )
    units = np.arange(K + M)
    pu, pv = np.meshgrid(units, units, indexing="ij")
    pairs = np.stack([pu, pv], axis=-1)  # (U, U, 2)
    cov = omega[..., pairs[..., :, None], pairs[..., None, :]]  # (..., U, U, 2, 2)
    sign = np.concatenate([-np.ones(K), np.ones(M)])
    value = 0.5 * np.einsum("...uv,u,v->...", pair_average(cov, activation), sign, sign)
    return np.maximum(value, 0.0)


def _tuple_index(K: int, M: int) -> dict[str, Array]:
    """Gather indices that cut every needed covariance sub-matrix out of ``Omega`` at once."""
    U = K + M
    sign = np.concatenate([-np.ones(K), np.ones(M)])
    # triples (x_i, z_b, z_u): shape (K, U, U, 3)
    i, b, u = np.meshgrid(np.arange(K), np.arange(U), np.arange(U), indexing="ij")
    t3 = np.stack([i, b, u], axis=-1)
    # quadruples (x_i, x_k, z_u, z_v) with i < k and u <= v, using both symmetries
    ii, kk = np.triu_indices(K, 1)
    uu, vv = np.triu_indices(U)
    q4 = np.array(
        [(a, c, p, q) for a, c in zip(ii, kk, strict=True) for p, q in zip(uu, vv, strict=True)],
        dtype=int,
    ).reshape(-1, 4)
    # and with i = k: gated pairs (x_i, z_u, z_v), u <= v
    g3 = np.array([(a, p, q) for a in range(K) for p, q in zip(uu, vv, strict=True)])
    multiplicity = np.where(uu == vv, 1.0, 2.0)
    pair_sign = sign[uu] * sign[vv] * multiplicity
    return {
        "sign": sign,
        "t3_rows": t3[..., :, None],
        "t3_cols": t3[..., None, :],
        "q4_rows": q4[:, :, None],
        "q4_cols": q4[:, None, :],
        "q4_target": q4[:, 0] * K + q4[:, 1],
        "q4_weight": np.tile(pair_sign, len(ii)),
        "g3_rows": g3[:, :, None],
        "g3_cols": g3[:, None, :],
        "g3_target": g3[:, 0] * (K + 1),
        "g3_weight": np.tile(pair_sign, K),
    }


def log_alpha_grid(alpha_max: float, n_points: int, alpha_min: float) -> Array:
    """``0`` followed by ``n_points - 1`` log-spaced values from ``alpha_min`` to ``alpha_max``."""
    if not 0 < alpha_min < alpha_max:
        raise ValueError(
            f"need 0 < alpha_min < alpha_max, got alpha_min={alpha_min}, alpha_max={alpha_max}"
        )
    if n_points < 2:
        raise ValueError(f"n_points must be >= 2, got {n_points}")
    return np.concatenate([[0.0], np.geomspace(alpha_min, alpha_max, n_points - 1)])


@dataclass(frozen=True)
class Trajectory:
    """An ODE solution on an alpha grid: packed states ``y`` (n, size) and ``eps_g`` (n,)."""

    alpha: Array
    y: Array
    eps_g: Array
    labels: list[str]


def integrate(
    ode: CommitteeODE,
    R0: Array,
    Q0: Array,
    alpha: Array,
    method: str = "LSODA",
    rtol: float = 1e-8,
    atol: float = 1e-10,
) -> Trajectory:
    """Solve the ODE from ``(R0, Q0)`` with ``solve_ivp`` and report it at ``alpha``.

    ``alpha`` must start at 0 and increase (:func:`log_alpha_grid` makes one).
    """
    alpha, y0 = check_integration(ode, R0, Q0, alpha, method, rtol, atol)
    sol = solve_ivp(
        ode.rhs, (0.0, alpha[-1]), y0, method=method, t_eval=alpha, rtol=rtol, atol=atol
    )
    if not sol.success:
        raise RuntimeError(f"solve_ivp ({method}) failed: {sol.message}")
    y = sol.y.T
    return Trajectory(alpha=alpha, y=y, eps_g=ode.eps_g(y), labels=state_labels(ode.K, ode.M))


def check_integration(
    ode: CommitteeODE, R0: Array, Q0: Array, alpha: Array, method: str, rtol: float, atol: float
) -> tuple[Array, Array]:
    """Check an integration's arguments; return the grid as an array and the packed start."""
    if method not in IVP_METHODS:
        raise ValueError(f"method must be one of {IVP_METHODS}, got {method!r}")
    if not (rtol > 0 and atol > 0):
        raise ValueError(f"rtol and atol must be > 0, got rtol={rtol}, atol={atol}")
    alpha = np.asarray(alpha, dtype=float)
    if alpha.ndim != 1 or alpha[0] != 0 or np.any(np.diff(alpha) <= 0):
        raise ValueError("alpha must be a 1-D increasing grid starting at 0")
    y0 = pack(R0, Q0)
    if y0.size != ode.size:
        raise ValueError(f"(R0, Q0) give {y0.size} numbers, the ODE needs {ode.size}")
    check_valid_state(ode, y0, "the initial state (R0, Q0)")
    return alpha, y0


def is_valid_state(ode: CommitteeODE, y: Array, tol: float = 1e-12) -> bool:
    """True when ``Omega`` is positive semi-definite (a realizable set of overlaps)."""
    omega = ode.covariance(y)
    return bool(np.linalg.eigvalsh(omega)[0] >= -tol * max(1.0, np.abs(omega).max()))


def check_valid_state(ode: CommitteeODE, y: Array, what: str) -> None:
    """Raise ValueError if ``y`` is not a valid (positive semi-definite) state."""
    if not is_valid_state(ode, y):
        raise ValueError(
            f"{what} is not realizable: [[Q, R], [R^T, T]] must be positive semi-definite"
        )
