"""Pick the torch device a job runs on.

A job takes the device it is given: on a cluster, SLURM exposes the allocated
GPU through ``CUDA_VISIBLE_DEVICES`` and CUDA numbers it 0, so ``cuda`` means
"the GPU this job was given". ``auto`` uses it when one is visible and the CPU
otherwise; ``cuda`` without a visible GPU falls back to the CPU with a logged
warning rather than failing hours into a cluster run (local runs refuse that
contradiction before any job starts). The device actually used goes into the
provenance sidecar.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterator

log = logging.getLogger(__name__)

CHOICES = ("auto", "cpu", "cuda")


def resolve_device(requested: str = "auto") -> str:
    """``"cuda"`` or ``"cpu"`` for a requested ``auto``/``cpu``/``cuda``."""
    if requested not in CHOICES:
        raise ValueError(f"device must be one of {', '.join(CHOICES)}, got {requested!r}")
    if requested == "cpu":
        return "cpu"
    import torch

    if torch.cuda.is_available():
        return "cuda"
    if requested == "cuda":
        log.warning("device 'cuda' requested but no CUDA device is visible; using the CPU")
    return "cpu"


def describe(device: str) -> str:
    """A device's name for provenance: ``cpu`` or the CUDA device's product name."""
    if device.startswith("cuda"):
        import torch

        return f"cuda:{torch.cuda.get_device_name(torch.device(device))}"
    return "cpu"


@contextlib.contextmanager
def torch_threads(count: int) -> Iterator[None]:
    """torch's intra-op thread count set to ``count`` inside the block, and restored after it,
    also after an error."""
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(count)
    try:
        yield
    finally:
        torch.set_num_threads(before)
