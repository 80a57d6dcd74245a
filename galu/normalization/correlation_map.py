"""The centred correlation map of one layer, in closed form (numpy only).

For two unit-variance, zero-mean Gaussian pre-activations with correlation ``rho``, one
layer of ``f`` maps it to ``c(rho) = (E f(u) f(v) - (E f)^2) / Var f`` (the mean-field map of
Poole et al. 2016, mean removed); :mod:`galu.normalization.correlation` explains why it
matters for Richemond & Guo (arXiv 1905.01369, Sec. 4) and measures it in networks. The
closed forms are the arc-cosine kernels of Cho & Saul (2009). Kept apart from that module
so that the figures and the claims draw it without importing torch.
"""

from __future__ import annotations

import numpy as np

# Second moments E f(u) f(v) of the activations with a closed form, as functions of rho.
_SECOND_MOMENTS = {
    "relu": lambda r: (np.sqrt(1 - r * r) + (np.pi - np.arccos(r)) * r) / (2 * np.pi),
    "abs": lambda r: (2 / np.pi) * (np.sqrt(1 - r * r) + r * np.arcsin(r)),
}
# The tilted ReLU |x| - sqrt(2/pi) has |x|'s centred correlation map (a shift cancels).
_SAME_AS = {"tilted_relu": "abs"}


def correlation_map(activation: str, rho: np.ndarray | float) -> np.ndarray:
    """The centred correlation ``c(rho)`` after one layer of ``activation`` (module docstring).

    For ``relu``, ``abs`` and ``tilted_relu``; ``rho`` in [-1, 1].
    """
    base = _SAME_AS.get(activation, activation)
    if base not in _SECOND_MOMENTS:
        known = ", ".join(sorted([*_SECOND_MOMENTS, *_SAME_AS]))
        raise ValueError(f"no closed-form correlation map for {activation!r}; known: {known}")
    r = np.clip(np.asarray(rho, dtype=float), -1.0, 1.0)
    moment = _SECOND_MOMENTS[base]
    mean_sq = moment(np.float64(0.0))  # E f(u) f(v) at rho = 0 is (E f)^2
    return (moment(r) - mean_sq) / (moment(np.float64(1.0)) - mean_sq)
