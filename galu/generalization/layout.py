"""How the generalization grids lay their networks out in ensembles (no torch needed, so
the cost model can ask too)."""

from __future__ import annotations

from typing import Any


def pads_widths(pad_widths: bool | str, device: Any) -> bool:
    """Resolve the ``pad_widths`` setting for ``device``: ``auto`` pads on a GPU only.

    Padding trades arithmetic for fewer, larger kernels. On a GPU the kernel count sets
    the step time; on a CPU the arithmetic does (quick MNIST grid, 1 thread: 36 s padded,
    26 s per width). Either layout computes each member as it would alone (up to float
    rounding), so the choice changes the time, not the experiment.
    """
    if not (isinstance(pad_widths, bool) or pad_widths == "auto"):
        raise ValueError(f"pad_widths must be true, false or 'auto', got {pad_widths!r}")
    if pad_widths == "auto":
        return str(device).split(":")[0] == "cuda"
    return bool(pad_widths)
