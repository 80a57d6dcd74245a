"""Cross-key checks of the memorization stage's settings (read through ``STAGE.checks`` by
:func:`galu.workflow.settings.consistency.consistency_problems` before any job runs)."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from galu.memorization.grid import underparam_points


def problems(config: Mapping[str, Any]) -> Iterator[str]:
    """An under-parameterized grid in which no (m, d, k) point has k d <= m (Fiat et al.,
    arXiv 1906.05032, sec. 3: the law is stated for those points only)."""
    grid = ((config.get("memorization") or {}).get("underparam")) or {}
    ms, ds, ks = (grid.get(key) or [] for key in ("ms", "ds", "ks"))
    if ms and ds and ks and not underparam_points(ms, ds, ks):
        yield (
            f"memorization.underparam: no point has k * d <= m (ms {ms}, ds {ds}, ks {ks}), so "
            "every point would be skipped; add smaller ks or ds, or larger ms"
        )
