"""Mean-field signal propagation through a deep plain MLP at initialization.

Beyond Richemond & Guo (arXiv 1905.01369): the theory of Poole et al. (2016, "Exponential
expressivity in deep neural networks through transient chaos") and Schoenholz et al.
(ICLR 2017, "Deep information propagation") for the networks of this stage: weights of
variance ``gain² / n`` (an orthogonal matrix times ``gain`` has the same second moments), no
biases, activation ``phi``. In the wide limit a pre-activation of layer l is Gaussian with
variance ``q_l``, and the pre-activations of two inputs have correlation ``c_l``:

- length map ``q_{l+1} = gain² E[phi(sqrt(q_l) z)²]``, with fixed point ``q*``;
- correlation map ``c_{l+1} = gain² E[phi(u1) phi(u2)] / q*``, ``u1 = sqrt(q*) z1``,
  ``u2 = sqrt(q*) (c z1 + sqrt(1 - c²) z2)``, with a stable fixed point ``c*`` (``c = 1`` is
  always a fixed point; it is stable when ``chi_1 <= 1``);
- its slope there ``chi_c = gain² E[phi'(u1) phi'(u2)]``; at ``c* = 1`` it is
  ``chi_1 = gain² E[phi'(sqrt(q*) z)²]``, the mean squared singular value of one layer's
  Jacobian;
- the depth scale ``xi_c = -1 / ln chi_c`` over which ``|c_l - c*|`` shrinks by ``e``
  (infinite at ``chi_c = 1``, criticality, where the approach is a power law). Schoenholz
  et al. find networks trainable to a few ``xi_c`` (about 6).

Expectations of one Gaussian use the half-range rule of :mod:`galu.normalization.quadrature`
(exact across a kink at 0); of two, the arc-cosine closed forms (Cho & Saul 2009) for ReLU,
|x| and the tilted ReLU and a two-dimensional Gauss–Hermite rule otherwise.
``tests/test_normalization_mean_field.py`` checks both against each other and the whole
propagation against random networks.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass

import numpy as np
import pandas as pd
from scipy.optimize import brentq

from galu.normalization.quadrature import gaussian_expectation

Function = Callable[[np.ndarray], np.ndarray]
# E f(u1) g(u2) as a function of (q, c), where a closed form exists.
Kernel = Callable[[float, float], float]
# Nodes per dimension of the two-dimensional rule (smooth activations converge to rounding).
ORDER = 120
TILT = math.sqrt(2.0 / math.pi)  # the tilted ReLU's offset: |x| - sqrt(2/pi)


def _relu_kernel(q: float, c: float) -> float:
    return q * (math.sqrt(1.0 - c * c) + (math.pi - math.acos(c)) * c) / (2.0 * math.pi)


def _abs_kernel(q: float, c: float) -> float:
    return q * (2.0 / math.pi) * (math.sqrt(1.0 - c * c) + c * math.asin(c))


def _tilted_kernel(q: float, c: float) -> float:
    # E(|u1| - t)(|u2| - t) = E|u1||u2| - 2 t E|u| + t², E|u| = sqrt(q) t
    return _abs_kernel(q, c) - 2.0 * TILT * TILT * math.sqrt(q) + TILT * TILT


def _step_kernel(q: float, c: float) -> float:  # ReLU': P(u1 > 0, u2 > 0)
    return (math.pi - math.acos(c)) / (2.0 * math.pi)


def _sign_kernel(q: float, c: float) -> float:  # |x|': E sign(u1) sign(u2)
    return (2.0 / math.pi) * math.asin(c)


# activation -> (E phi phi, E phi' phi') in closed form
CLOSED_FORMS: dict[str, tuple[Kernel, Kernel]] = {
    "relu": (_relu_kernel, _step_kernel),
    "abs": (_abs_kernel, _sign_kernel),
    "tilted_relu": (_tilted_kernel, _sign_kernel),
}


def pair_mean(f: Function, g: Function, q: float, c: float, order: int = ORDER) -> float:
    """``E f(u1) g(u2)`` for jointly Gaussian ``u1, u2`` of variance ``q``, correlation ``c``
    (a Gauss–Hermite product rule: for smooth ``f``, ``g``)."""
    z, w = np.polynomial.hermite_e.hermegauss(order)
    w = w / math.sqrt(2.0 * math.pi)
    c = min(max(c, -1.0), 1.0)
    z1, z2 = z[:, None], z[None, :]
    u1 = math.sqrt(q) * z1
    u2 = math.sqrt(q) * (c * z1 + math.sqrt(1.0 - c * c) * z2)
    return float(w @ (f(u1) * g(u2)) @ w)


@dataclass(frozen=True)
class MeanField:
    """One activation's maps at one gain: ``phi``, its derivative ``dphi``, and the closed
    forms of ``E phi phi`` and ``E phi' phi'`` where they exist (:data:`CLOSED_FORMS`)."""

    phi: Function
    dphi: Function
    gain: float
    kernels: tuple[Kernel, Kernel] | None = None

    def length(self, q: float) -> float:
        """One layer of the length map."""
        return self.gain**2 * gaussian_expectation(lambda z: self.phi(math.sqrt(q) * z) ** 2)

    def covariance(self, q: float, c: float) -> float:
        """``gain² E[phi(u1) phi(u2)]``: the next layer's pre-activation covariance of two
        inputs whose pre-activations have variance ``q`` and correlation ``c``."""
        if self.kernels:
            return self.gain**2 * self.kernels[0](q, c)
        return self.gain**2 * pair_mean(self.phi, self.phi, q, c)

    def correlation(self, q: float, c: float) -> float:
        """One layer of the correlation map: the next layer's correlation (its variance is
        ``length(q)``; at the fixed point ``q*`` that is ``q*`` itself)."""
        return self.covariance(q, c) / self.length(q)

    def slope(self, q: float, c: float) -> float:
        """``chi_c``: the correlation map's slope at ``c``."""
        if c >= 1.0:  # chi_1, one expectation: exact across kinks
            return self.gain**2 * gaussian_expectation(lambda z: self.dphi(math.sqrt(q) * z) ** 2)
        if self.kernels:
            return self.gain**2 * self.kernels[1](q, c)
        return self.gain**2 * pair_mean(self.dphi, self.dphi, q, c)


def length_fixed_point(field: MeanField, q0: float = 1.0, layers: int = 100_000) -> float:
    """``q*``: the length map iterated from ``q0`` until it settles (0 when it decays)."""
    q = q0
    for _ in range(layers):
        nxt = field.length(q)
        if not math.isfinite(nxt) or nxt > 1e12:
            raise ValueError(f"the length map grows without bound from q = {q0}")
        if abs(nxt - q) <= 1e-13 * q or nxt < 1e-12:
            return nxt if nxt >= 1e-12 else 0.0
        q = nxt
    return q


def depth_scale(chi: float) -> float:
    """``xi = -1 / ln chi`` (infinite for ``chi >= 1``)."""
    return -1.0 / math.log(chi) if 0.0 < chi < 1.0 else math.inf


@dataclass(frozen=True)
class Propagation:
    """The fixed points and depth scale of one activation at one gain (NaN where the
    signal dies out, ``q* = 0``)."""

    q_star: float
    c_star: float
    chi_1: float
    chi_c: float
    xi_c: float


def stable_correlation(field: MeanField, q: float, chi_1: float) -> float:
    """``c*``: 1 when ``chi_1 <= 1`` (up to rounding), else the largest fixed point of the
    correlation map below 1 (there the map crosses the diagonal from above)."""
    if chi_1 <= 1.0 + 1e-9:
        return 1.0
    grid = np.linspace(1.0 - 1e-6, -1.0, 201)
    gap = [field.correlation(q, c) - c for c in grid]
    for hi, lo, g_hi, g_lo in zip(grid, grid[1:], gap, gap[1:], strict=False):
        if g_hi == 0.0:
            return float(hi)
        if g_hi < 0.0 < g_lo:
            return float(brentq(lambda c: field.correlation(q, c) - c, lo, hi, xtol=1e-12))
    raise ValueError("no stable correlation fixed point below 1")


def propagation(field: MeanField) -> Propagation:
    """``q*``, ``c*``, ``chi_1``, ``chi_c`` and ``xi_c`` of ``field`` (module docstring)."""
    q = length_fixed_point(field)
    if q == 0.0:
        return Propagation(0.0, math.nan, math.nan, math.nan, math.nan)
    chi_1 = field.slope(q, 1.0)
    c = stable_correlation(field, q, chi_1)
    chi_c = chi_1 if c >= 1.0 else field.slope(q, c)
    return Propagation(q, c, chi_1, chi_c, depth_scale(chi_c))


def activation_field(name: str) -> MeanField:
    """The maps of activation ``name`` at the gain the stage's networks use
    (:func:`galu.normalization.mlp.default_gain`)."""
    from galu.normalization.mlp import default_gain  # torch, for the tables' jobs only
    from galu.normalization.modules import reference_activation

    act = reference_activation(name)
    return MeanField(act.f, act.df, default_gain(name), CLOSED_FORMS.get(name))


def depth_scale_table(activations: Sequence[str]) -> pd.DataFrame:
    """One row per activation (``activation, gain, q_star, c_star, chi_1, chi_c, xi_c``) at the
    stage's gains. Activations with batch norm (``*_bn``) are left out: batch norm
    re-normalizes every layer, which these maps do not model."""
    rows = []
    for name in activations:
        if name.endswith("_bn"):
            continue
        field = activation_field(name)
        rows.append({"activation": name, "gain": field.gain, **asdict(propagation(field))})
    return pd.DataFrame(rows, columns=["activation", "gain", *Propagation.__dataclass_fields__])
