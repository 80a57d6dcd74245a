"""The under-parameterized grid of the memorization study (Fiat et al., arXiv 1906.05032,
sec. 3.1): the points ``(m, d, k)`` with ``k d <= m``, where a width-``k`` GaLU network's
``k d`` features cannot exceed the ``m`` examples and its loss law ``1 - kd/m`` applies.

The one home of that rule: the experiment, the cost model and the configuration check read
it here (no torch import, so the Snakefile can call it while it parses).
"""

from __future__ import annotations

from collections.abc import Sequence


def underparam_points(ms: Sequence[int], ds: Sequence[int], ks: Sequence[int]) -> list[tuple]:
    """The ``(m, d, k)`` grid restricted to the under-parameterized side ``kd <= m``."""
    return [(m, d, k) for m in ms for d in ds for k in ks if k * d <= m]
