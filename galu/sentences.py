"""Words from numbers: the vocabulary of the captions' "What the data show" sentences.

Each paper package's ``sentences.py`` describes its figures' data with these (a number at
the precision the claims table shows, a direction that a noise floor cannot fake); the
workflow appends the sentences to the report captions (:mod:`galu.workflow.observations`).
Pure functions: numbers in, strings out.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

import numpy as np
import pandas as pd

# What describes a figure: its tables (contract path -> frame) in, sentences out.
Describe = Callable[[Mapping[str, pd.DataFrame]], list[str]]
# Relative change below which a quantity "stays at about" its first value.
FLAT = 0.05
# Order parameters and eigenvalues closer to 0 than this are integrator noise: shown as 0.
ZERO = 1e-6


def number(value: float, floor: float = 0.0) -> str:
    """Three significant digits, as in the claims table; a magnitude below ``floor`` (the
    quantity's noise level) is shown as ``below floor`` (or 0 for order parameters, whose noise
    floor is :data:`ZERO`), not as digits of noise."""
    if value is None or not np.isfinite(value):
        return "–"
    if floor and abs(value) <= floor:
        return "0" if floor == ZERO else f"below {floor:g}"
    return f"{value:.3g}"


def trend(first: float, last: float, flat: float = FLAT, floor: float = 0.0) -> str:
    """``falls from a to b``, ``grows from a to b`` or ``stays at about a``: the direction
    of ``first`` -> ``last`` (a change within ``flat`` of the larger magnitude is flat;
    values below ``floor``, the quantity's noise level, count as the floor)."""
    if floor:
        first, last = max(first, floor), max(last, floor)
    scale = max(abs(first), abs(last))
    if scale == 0 or abs(last - first) <= flat * scale:
        return f"stays at about {number(first, floor)}"
    word = "falls" if last < first else "grows"
    return f"{word} from {number(first, floor)} to {number(last, floor)}"


def path(x: Sequence[float], y: Sequence[float], name: str = "alpha", floor: float = 0.0) -> str:
    """The course of ``y`` along ``x``: its :func:`trend`, or a fall to an interior minimum
    and a rise after it (or the reverse), with where the turn is. Values below ``floor``
    (the quantity's noise level) count as the floor, so noise never makes a curve grow."""
    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    keep = np.isfinite(y)
    x, y = x[keep], np.maximum(y[keep], floor)
    if not len(y):
        return "has no finite value"
    first, last = y[0], y[-1]
    low, high = int(np.argmin(y)), int(np.argmax(y))
    for turn, into, after, kind in ((low, "falls", "grows", "minimum"),
                                    (high, "grows", "falls", "maximum")):  # fmt: skip
        if (
            0 < turn < len(y) - 1
            and trend(first, y[turn], floor=floor).startswith(into)
            and trend(y[turn], last, floor=floor).startswith(after)
        ):
            return (
                f"{into} from {number(first, floor)} to a {kind} of {number(y[turn], floor)} "
                f"at {name} = {number(x[turn])}, then {after} to {number(last, floor)}"
            )
    return trend(first, last, floor=floor)


def join(parts: Sequence[str]) -> str:
    return "; ".join(parts)
