"""Numbers shown to users at a precision that reproduces across machines and thread counts.

A trained network's test error differs in the fourth digit between two CPUs (other BLAS
kernels, other summation orders), so the claims table must not show that digit, and the
README check must not fail on it. Two rules, stated in the README:

- A claim's measured value is rounded to a *step*: one tenth of the leading decimal of its
  decision scale, the larger of ``|expected|`` and the tolerance (expected 0.02 -> step
  0.001; expected 0.52 -> 0.01; expected 30 -> 1), so the digit that decides the verdict is
  shown and the machine's noise is not. A claim may state its own ``precision`` instead.
  Values that round to 0 are shown as ``< step``; integers as integers.
- Two texts agree when they have the same words and every pair of numbers differs by at most
  one unit of the last digit shown (``0.066`` and ``0.067`` agree, ``0.066`` and ``0.068`` do
  not): a value near a rounding boundary may round either way on another machine.
"""

from __future__ import annotations

import difflib
import math
import re
from decimal import Decimal

# In the closure of the jobs that import it (galu.workflow.closure): it writes their bytes.
RESULT_CODE = "the precision at which measured values are shown"

# A number standing alone: not part of an identifier such as k2m2 or a claim id.
_NUMBER = re.compile(r"(?<![\w.])[-+]?\d+(?:\.\d+)?(?:e[-+]?\d+)?(?![\w.])", re.IGNORECASE)


def display_step(
    expected: float, tolerance: float, measured: float, precision: float | None = None
) -> float:
    """The rounding step of a claim's measured value (see the module docstring).

    With neither an expected value nor a tolerance to set the scale (both 0), the measured
    value's own leading digit does: two significant digits.
    """
    if precision:
        return float(precision)
    scale = max(abs(expected), abs(tolerance))
    if scale == 0 or not math.isfinite(scale):
        scale = abs(measured) if math.isfinite(measured) and measured != 0 else 1.0
    return 10.0 ** (math.floor(math.log10(scale)) - 1)


def format_measured(value: float, step: float) -> str:
    """``value`` rounded to ``step``: ``0.066``, ``30``, ``< 1e-10``, ``–`` (not measured),
    ``inf``."""
    if math.isnan(value):
        return "–"
    if math.isinf(value):
        return "inf" if value > 0 else "-inf"
    if value == int(value) and abs(value) < 1e15:
        return str(int(value))  # counts, depths, exact zeros: no invented decimals
    rounded = round(value / step) * step
    if rounded == 0:
        return "< " + re.sub(r"e([-+])0*(\d)", r"e\1\2", f"{step:.0e}").replace("e+", "e")
    step_exponent = math.floor(math.log10(step) + 1e-9)
    if step_exponent < -4:  # 1.4e-7 rather than 0.00000014
        digits = math.floor(math.log10(abs(rounded)) + 1e-9) - step_exponent
        text = f"{rounded:.{max(digits, 0)}e}"
        return re.sub(r"e([-+])0*(\d)", r"e\1\2", text).replace("e+", "e")
    return f"{rounded:.{max(0, -step_exponent)}f}"


def _unit(text: str) -> Decimal:
    """One unit of the last digit of a number as written: ``0.066`` -> 0.001, ``30`` -> 1,
    ``1e-07`` -> 1e-07."""
    mantissa, _, exponent = text.lower().lstrip("+-").partition("e")
    decimals = len(mantissa.partition(".")[2])
    return Decimal(1).scaleb(-decimals + (int(exponent) if exponent else 0))


def _numbers_agree(a: str, b: str) -> bool:
    unit = max(_unit(a), _unit(b))
    return abs(Decimal(a) - Decimal(b)) <= unit


def lines_agree(a: str, b: str) -> bool:
    """Same words, and numbers within one unit of their last shown digit (module docstring).

    ``< 1e-10`` agrees with ``< 1e-10`` only: a value below the step is a statement, not a
    digit.
    """
    if a == b:
        return True
    if _NUMBER.sub("#", a) != _NUMBER.sub("#", b):
        return False
    pairs = zip(_NUMBER.findall(a), _NUMBER.findall(b), strict=True)
    return all(_numbers_agree(x, y) for x, y in pairs)


def differing_lines(old: str, new: str) -> list[tuple[str, str]]:
    """The lines of ``old`` and ``new`` that do not agree (:func:`lines_agree`), as pairs;
    a line present in one text only is paired with ``""``. Lines are matched by their words
    (numbers masked), so one inserted row does not make every later row differ."""
    old_lines, new_lines = old.splitlines(), new.splitlines()
    masked = [[_NUMBER.sub("#", line) for line in lines] for lines in (old_lines, new_lines)]
    matcher = difflib.SequenceMatcher(None, *masked, autojunk=False)
    pairs: list[tuple[str, str]] = []
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        a, b = old_lines[i1:i2], new_lines[j1:j2]
        width = max(len(a), len(b))
        a, b = a + [""] * (width - len(a)), b + [""] * (width - len(b))
        pairs += [
            (x, y) for x, y in zip(a, b, strict=True) if tag != "equal" or not lines_agree(x, y)
        ]
    return pairs
