"""The ReLU quadruple average ``<theta(z1) theta(z2) relu(z3) relu(z4)>`` as a 1-D integral.

Straat & Biehl (arXiv 1903.07378, Sec. 3) keep the O(eta^2) term of the ReLU
order-parameter ODEs only for the perceptron and leave the general quadruple
average as future work. Here it is reduced to a single smooth integral.

Move the covariance along ``C(s) = D + (1 - s)(C - D)``, ``D = diag(C)``, from
``s = 1`` (independent units: the average is ``sqrt(C33 C44) / (8 pi)``) to
``s = 0``. Price's theorem gives ``d<f>/dt = sum_{j<k} C_jk <d_j d_k f>`` with
``t = 1 - s``. For ``f = theta(z1) theta(z2) relu(z3) relu(z4)`` each term is a
Gaussian density at 0 times a closed-form conditional average, except
``<d3 d4 f> = P4``, the probability that all four units are positive. Plackett's
identity ``dP4/dt = sum_{i<j} C_ij phi_ij(0, 0) P(z_k, z_l > 0 | z_i = z_j = 0)``
along the same path, with the two t-integrals swapped, turns
``C34 int_0^1 P4 dt`` into ``C34/16`` plus one more integral with weight ``s``.

Numerics: every quantity is a polynomial in ``s`` whose constant term is the
value at ``C`` itself, so nodes with ``s`` far below machine epsilon are still
evaluated without cancellation. The path covariance is positive definite for
``s > 0`` even where ``C`` is singular (repeated arguments; students that have
converged onto teachers), which keeps the integrand finite there. ``s = w^2``
removes the inverse square-root singularity of the densities at ``s = 0`` and
geometrically graded Gauss-Legendre panels in ``w`` resolve the boundary layer of
nearly singular ``C``.
"""

from __future__ import annotations

import functools
import math
from itertools import combinations

import numpy as np

from galu.scm.gaussian import check_cov, clipped_arcsin, relu_pair_entries

Array = np.ndarray

_TWO_PI = 2.0 * math.pi
_PAIRS = tuple(combinations(range(4), 2))


@functools.lru_cache(maxsize=8)
def path_rule(panels: int = 16, order: int = 8) -> tuple[Array, Array]:
    """Nodes ``s`` and weights for ``int_0^1 F(s) ds`` with ``F ~ s^(-1/2)`` near 0.

    ``s = w^2`` and Gauss-Legendre panels ``[2^-(k+1), 2^-k]`` (``k < panels``)
    plus ``[0, 2^-panels]`` in ``w``, ``order`` nodes each.
    """
    if panels < 1 or order < 2:
        raise ValueError(f"panels must be >= 1 and order >= 2, got panels={panels}, order={order}")
    x, wx = np.polynomial.legendre.leggauss(order)
    edges = np.concatenate([2.0 ** -np.arange(panels + 1), [0.0]])
    lo, hi = edges[1:, None], edges[:-1, None]
    w = (lo + (hi - lo) * (x + 1) / 2).ravel()
    dw = (wx * (hi - lo) / 2).ravel()
    return w**2, 2 * w * dw


def relu_quad(cov: Array, panels: int = 16, order: int = 8) -> Array:
    """``<theta(z1) theta(z2) relu(z3) relu(z4)>`` for covariances ``(..., 4, 4)``.

    ``theta(0) = 0`` (measure zero). Accurate to about 1e-12 against direct
    high-order quadrature on well-conditioned covariances and continuous up to
    singular ones; see the module docstring for the reduction.
    """
    cov = check_cov(cov, 4)
    s, weights = path_rule(panels, order)
    flat = cov.reshape(-1, 4, 4)
    integral = _PathIntegrand(flat, s).value() @ weights
    c33, c34, c44 = flat[:, 2, 2], flat[:, 2, 3], flat[:, 3, 3]
    base = np.sqrt(np.maximum(c33 * c44, 0.0)) / (4 * _TWO_PI) + c34 / 16
    return (base + integral).reshape(cov.shape[:-2])


# Minors of C(s) are polynomials in s; coefficients are ascending along the last axis.
# Each minor is listed as (rows, cols); ``_MINORS2``/``_MINORS3`` fix their order.
_OTHERS = {(i, j): tuple(q for q in range(4) if q not in (i, j)) for i, j in _PAIRS}
_MINORS2 = [((i, j), (i, j)) for i, j in _PAIRS] + [
    ((a, u), (a, v)) for a in (0, 1) for u, v in combinations([q for q in range(4) if q != a], 2)
]
_MINORS3 = [(rest, rest) for rest in combinations(range(4), 3)] + [
    ((i, j, k), (i, j, m)) for (i, j), (k, m) in _OTHERS.items()
]
_PERMS3 = ((0, 1, 2, 1), (1, 2, 0, 1), (2, 0, 1, 1), (0, 2, 1, -1), (1, 0, 2, -1), (2, 1, 0, -1))


def _linear_entries(cov: Array, diag: Array) -> Array:
    """Entries of C(s) as linear polynomials: (batch, 4, 4, 2)."""
    entries = np.stack([cov, -cov], axis=-1)
    idx = np.arange(4)
    entries[:, idx, idx, 0] = diag
    entries[:, idx, idx, 1] = 0.0
    return entries


def _minor_polys(entries: Array, minors: list) -> Array:
    """Determinants of the listed sub-matrices as polynomials: (batch, len(minors), n + 1)."""
    rows = np.array([r for r, _ in minors])
    cols = np.array([c for _, c in minors])
    sub = entries[:, rows[:, :, None], cols[:, None, :], :]  # (batch, m, n, n, 2)
    n = rows.shape[1]
    if n == 2:
        a, b = sub[:, :, 0, 0], sub[:, :, 1, 1]
        c, d = sub[:, :, 0, 1], sub[:, :, 1, 0]
        return _lin_product(a, b) - _lin_product(c, d)
    total = 0.0
    for p0, p1, p2, sign in _PERMS3:
        total = total + sign * _lin_product(sub[:, :, 0, p0], sub[:, :, 1, p1], sub[:, :, 2, p2])
    return total


def _lin_product(*factors: Array) -> Array:
    """Product of linear polynomials (..., 2) as a polynomial (..., len(factors) + 1)."""
    out = factors[0]
    for f in factors[1:]:
        out = np.concatenate(
            [
                out[..., :1] * f[..., :1],
                out[..., 1:] * f[..., :1] + out[..., :-1] * f[..., 1:],
                out[..., -1:] * f[..., 1:],
            ],
            axis=-1,
        )
    return out


class _PathIntegrand:
    """The integrand of :func:`relu_quad` at nodes ``s`` for a batch of covariances."""

    def __init__(self, cov: Array, s: Array) -> None:
        self.cov = cov
        self.s = s[None, :]
        self.diag = np.maximum(np.einsum("bii->bi", cov), 1e-300)
        entries = _linear_entries(cov, self.diag)
        powers = s[None, :] ** np.arange(4)[:, None]  # (degree + 1, nodes)
        m2, m3 = _minor_polys(entries, _MINORS2), _minor_polys(entries, _MINORS3)
        # principal minors of the PSD matrix C are >= 0: clip their rounding (constant term)
        m2[:, :6, 0] = np.maximum(m2[:, :6, 0], 0.0)
        m3[:, :4, 0] = np.maximum(m3[:, :4, 0], 0.0)
        v2, v3 = m2 @ powers[:3], m3 @ powers  # (batch, m, nodes)
        # and C(s) >= (1 - t) D, so each principal minor exceeds that of s D
        self.det2 = {}
        for q, (i, j) in enumerate(_PAIRS):
            floor = self.diag[:, i, None] * self.diag[:, j, None] * self.s**2
            self.det2[i, j] = np.maximum(v2[:, q], floor)
        self.cond_minor = {(r, c): v2[:, 6 + q] for q, (r, c) in enumerate(_MINORS2[6:])}
        self.det3 = {}
        for q, (rest, _) in enumerate(_MINORS3[:4]):
            floor = np.prod(self.diag[:, list(rest)], axis=1)[:, None] * self.s**3
            self.det3[rest] = np.maximum(v3[:, q], floor)
        self.cross = {pair: v3[:, 4 + q] for q, pair in enumerate(_OTHERS)}

    def quadrant(self, i: int, j: int) -> Array:
        """P(z_k > 0, z_m > 0 | z_i = z_j = 0) for the complementary pair (k, m)."""
        k, m = _OTHERS[i, j]
        norm = np.sqrt(self.det3[tuple(sorted((i, j, k)))] * self.det3[tuple(sorted((i, j, m)))])
        return 0.25 + clipped_arcsin(self.cross[i, j] / norm) / _TWO_PI

    def density(self, i: int, j: int) -> Array:
        """Bivariate density of (z_i, z_j) at (0, 0) under C(s)."""
        return 1.0 / (_TWO_PI * np.sqrt(self.det2[i, j]))

    def conditional(self, a: int, u: int, v: int) -> Array:
        """Cov(z_u, z_v | z_a = 0) under C(s), at the nodes."""
        if u == v:
            return self.det2[tuple(sorted((a, u)))] / self.diag[:, a, None]
        u, v = sorted((u, v))
        return self.cond_minor[(a, u), (a, v)] / self.diag[:, a, None]

    def value(self) -> Array:
        """G(s) such that the average is ``sqrt(C33 C44)/(8 pi) + C34/16 + int G``."""
        c = self.cov
        quadrant = {pair: self.quadrant(*pair) for pair in _PAIRS}
        # <d1 d2 f> = phi_12(0,0) <relu(z3) relu(z4) | z1 = z2 = 0>
        det12 = self.det2[0, 1]
        # conditional variances are at most the marginal ones; the clips only bite at
        # nodes s ~ 1e-16, where the rounding of a singular C's minors dominates
        s33 = np.minimum(self.det3[0, 1, 2] / det12, self.diag[:, 2, None])
        s44 = np.minimum(self.det3[0, 1, 3] / det12, self.diag[:, 3, None])
        bound = np.sqrt(s33 * s44)
        s34 = np.clip(self.cross[0, 1] / det12, -bound, bound)
        total = c[:, 0, 1, None] * self.density(0, 1) * relu_pair_entries(s33, s34, s44)
        # <d_a d_v f>, a in {1, 2}, v in {3, 4}: density of z_a at 0 times
        # <theta(z_b) theta(z_v) relu(z_w) | z_a = 0>, b the other gate, w the other relu
        for a, b in ((0, 1), (1, 0)):
            for v, w in ((2, 3), (3, 2)):
                total = total + c[:, a, v, None] * self._gated_relu(a, b, v, w, quadrant)
        # C34 int_0^1 P4 dt = C34/16 + C34 int s dP4/dt
        plackett = sum(c[:, i, j, None] * self.density(i, j) * quadrant[i, j] for i, j in _PAIRS)
        return total + self.s * c[:, 2, 3, None] * plackett

    def _gated_relu(
        self, a: int, b: int, v: int, w: int, quadrant: dict[tuple[int, int], Array]
    ) -> Array:
        """phi_a(0) <theta(z_b) theta(z_v) relu(z_w) | z_a = 0>.

        Integration by parts in ``z_w``: a sum over ``u in {b, v, w}`` of
        ``Cov(w, u | a) / sqrt(Var(u | a))`` times the density of ``z_u`` at 0 and the
        probability that the remaining two are positive given ``z_a = z_u = 0``.
        """
        var_w = self.conditional(a, w, w)
        bracket = np.sqrt(var_w) * quadrant[min(a, w), max(a, w)]
        for u in (b, v):
            ratio = self.conditional(a, w, u) / np.sqrt(self.conditional(a, u, u))
            # |ratio| <= sqrt(Var(w | a)) (Cauchy-Schwarz); clip rounding at s ~ 0
            ratio = np.clip(ratio, -np.sqrt(var_w), np.sqrt(var_w))
            bracket = bracket + ratio * quadrant[min(a, u), max(a, u)]
        return bracket / (_TWO_PI * np.sqrt(self.diag[:, a : a + 1]))


def relu_gate_pair(cov: Array, panels: int = 16, order: int = 8) -> Array:
    """``<theta(z1) relu(z2) relu(z3)>`` for covariances ``(..., 3, 3)``.

    The quadruple average with its two gates on the same unit (``i = k`` in
    ``<delta_i delta_k>``). Along the same path ``C(s)`` as :func:`relu_quad`,
    Price's theorem needs only the density of ``z1`` at 0 (never a bivariate
    density, which would blow up rounding near a singular ``C``) and the
    trivariate orthant probability ``1/8 + sum arcsin(rho)/(4 pi)``, whose
    t-integral is closed. Used instead of :func:`relu_quad` with two equal
    arguments, where it is accurate to rounding rather than to ~1e-9.
    """
    cov = check_cov(cov, 3)
    s, weights = path_rule(panels, order)
    flat = cov.reshape(-1, 3, 3)
    caa, ccc, cdd = (np.maximum(flat[:, i, i], 1e-300) for i in range(3))
    cac, cad, ccd = flat[:, 0, 1], flat[:, 0, 2], flat[:, 1, 2]
    sn = s[None, :]
    one = (1.0 - sn, (2.0 - sn) * sn)  # t and 1 - t^2

    def det2(cii: Array, cjj: Array, cij: Array) -> Array:
        # C_ii C_jj - t^2 C_ij^2, expanded about t = 1 so that small s keeps its digits
        value = np.maximum(cii * cjj - cij**2, 0.0)[:, None] + one[1] * (cij**2)[:, None]
        return np.maximum(value, (cii * cjj)[:, None] * sn**2)

    var_c = det2(caa, ccc, cac) / caa[:, None]  # Var(z2 | z1 = 0) under C(s)
    var_d = det2(caa, cdd, cad) / caa[:, None]
    partial = (ccd - cac * cad / caa)[:, None] + sn * (cac * cad / caa)[:, None]
    cov_cd = one[0] * partial  # Cov(z2, z3 | z1 = 0) under C(s)
    sd_c, sd_d = np.sqrt(var_c), np.sqrt(var_d)
    ratio_c = np.clip(cov_cd / sd_c, -sd_d, sd_d)
    ratio_d = np.clip(cov_cd / sd_d, -sd_c, sd_c)
    gates = cac[:, None] * (ratio_c + sd_d) + cad[:, None] * (ratio_d + sd_c)
    integral = (gates @ weights) / (2 * _TWO_PI * np.sqrt(caa))

    def arcsin_mean(c_ij: Array, c_ii: Array, c_jj: Array) -> Array:
        # int_0^1 arcsin(t rho) dt = arcsin(rho) - rho / (1 + sqrt(1 - rho^2))
        rho = np.clip(c_ij / np.sqrt(c_ii * c_jj), -1.0, 1.0)
        return np.arcsin(rho) - rho / (1.0 + np.sqrt(1.0 - rho**2))

    orthant = 0.125 + (
        arcsin_mean(cac, caa, ccc) + arcsin_mean(cad, caa, cdd) + arcsin_mean(ccd, ccc, cdd)
    ) / (2 * _TWO_PI)
    base = np.sqrt(ccc * cdd) / (2 * _TWO_PI) + ccd * orthant
    return (base + integral).reshape(cov.shape[:-2])
