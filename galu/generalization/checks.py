"""Cross-key checks of the generalization stage's settings (read through ``STAGE.checks`` by
:func:`galu.workflow.settings.consistency.consistency_problems` before any job runs)."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any


def problems(config: Mapping[str, Any]) -> Iterator[str]:
    """Parity subsets larger than the input they are drawn from."""
    parity = (config.get("generalization") or {}).get("parity") or {}
    dim = parity.get("dim")
    too_big = [s for s in parity.get("subset_sizes") or [] if dim is not None and s > dim]
    if too_big:
        yield (
            f"generalization.parity.subset_sizes: {too_big} exceed(s) dim = {dim}; a parity of "
            f"s bits needs s <= dim: drop those sizes or raise generalization.parity.dim"
        )
