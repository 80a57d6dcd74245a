"""A summary of a Jacobian's squared singular values, shared by the jacobian figure
(:mod:`galu.normalization.figures`) and its caption's data sentences
(:mod:`galu.normalization.sentences`): how much of the spectrum is numerically zero, and the median
and spread of the rest."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

# Squared singular values below this are numerically zero (rank lost to inactive units).
JACOBIAN_FLOOR = 1e-12


@dataclass(frozen=True)
class JacobianStats:
    at_floor: float  # fraction of values below JACOBIAN_FLOOR
    median: float  # of the values above it
    decades: float  # log10(95th / 5th percentile) of the values above it


def jacobian_stats(values: np.ndarray) -> JacobianStats:
    """The fraction of ``values`` below :data:`JACOBIAN_FLOOR`, and the median and the
    decades between the 5th and 95th percentiles of those above it (NaN when none is)."""
    above = values[values >= JACOBIAN_FLOOR]
    if not len(above):
        return JacobianStats(1.0, math.nan, math.nan)
    low, high = np.percentile(above, [5, 95])
    return JacobianStats(
        at_floor=float(np.mean(values < JACOBIAN_FLOOR)),
        median=float(np.median(above)),
        decades=float(np.log10(high / low)),
    )
