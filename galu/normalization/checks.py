"""Cross-key checks of the static-normalization stage's settings (read through
``STAGE.checks`` by :func:`galu.workflow.settings.consistency.consistency_problems` before any job
runs)."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any


def problems(config: Mapping[str, Any]) -> Iterator[str]:
    """The width comparison (``normalization.wide``) sets its runs beside the trainability
    runs of the same activations and depths, at an epoch both reached: each must exist."""
    norm = config.get("normalization") or {}
    train, wide = norm.get("trainability") or {}, norm.get("wide") or {}
    if not wide.get("activations"):
        return
    for key, have in (("activations", "activations"), ("depths", "depths")):
        missing = [v for v in wide.get(key, []) if v not in train.get(have, [])]
        if missing:
            yield (
                f"normalization.wide.{key}: {missing} not in normalization.trainability.{have}, "
                "so no run of the trainability widths stands beside them; add them there or "
                f"remove them from wide.{key}"
            )
    if wide.get("width") in train.get("widths", []):
        yield (
            f"normalization.wide.width: {wide['width']} is already one of "
            "normalization.trainability.widths; pick another width or turn wide off "
            "(activations: [])"
        )
    if wide.get("epochs", 0) > train.get("epochs", 0):
        yield (
            f"normalization.wide.epochs: {wide['epochs']} is more than "
            f"normalization.trainability.epochs ({train.get('epochs')}), the epochs the runs "
            "beside them train; the widths are compared at wide.epochs, so lower it"
        )
