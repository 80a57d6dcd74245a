"""Site settings: configuration keys that belong to one machine and never change a result.

A result must be remade when its code, its inputs or a parameter that shapes its numbers
changes, and only then. These keys say where to find things or how long to wait, so
changing them (moving a mirror, a longer download timeout) must rerun nothing; they are
kept out of every rule's params and every DVC stage's params:

- ``data.mirrors``, ``data.download``, ``data.link``, ``data.timeout_s``,
  ``data.retries``, ``data.backoff_s``: where and how the raw files are fetched. The
  files are verified against their checksums, so the bytes are the same wherever they
  come from.
- ``report.on_success``: whether the report archive is rebuilt after a run.
- ``*.gpu``, ``*.runtime_min``: what a job asks the scheduler for.
- ``device`` only on a machine without a GPU, where ``auto`` and ``cpu`` are the same
  device (:func:`site_device`); where CUDA may be present, the device decides the numbers
  and stays a parameter.

``data.substitutes`` is *not* a site setting: a substitute's bytes differ from the
official ones, so choosing one reruns everything made from that dataset.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

DATA_SITE_KEYS = ("mirrors", "download", "link", "timeout_s", "retries", "backoff_s")
# Files whose presence means a GPU torch could use (NVIDIA, WSL's GPU bridge, ROCm).
_GPU_MARKERS = ("/proc/driver/nvidia/version", "/dev/nvidia0", "/dev/dxg", "/dev/kfd")


def gpu_may_be_present(markers: tuple[str, ...] = _GPU_MARKERS) -> bool:
    """Whether this machine might have a GPU torch can use, without importing torch.

    False only when none of the driver files exists (or on macOS, which has no CUDA);
    ``CUDA_VISIBLE_DEVICES`` set to an empty list or ``-1`` hides every GPU.
    """
    if sys.platform == "darwin":
        return False
    if os.environ.get("CUDA_VISIBLE_DEVICES", None) in ("", "-1"):
        return False
    return any(Path(marker).exists() for marker in markers)


def site_device(requested: str, *, local: bool, gpu: bool | None = None) -> str:
    """``cpu`` for ``auto`` when jobs run here (``local``) and this machine has no GPU.

    That is what ``auto`` resolves to in the job (galu.device.resolve_device), so the
    job is unchanged; the rules' params become the same for ``auto`` and ``cpu``. Any
    other case (a GPU, or jobs sent to a cluster) keeps the requested value.
    """
    if requested != "auto" or not local:
        return requested
    present = gpu_may_be_present() if gpu is None else gpu
    return requested if present else "cpu"


def data_result_settings(section: Mapping[str, Any], dataset: str | None = None) -> dict[str, Any]:
    """The part of the ``data:`` section that shapes results: everything but the site keys.

    With ``dataset``, only that dataset's substitutes: another dataset's copy cannot change
    this one's bytes, so opting into the CIFAR-10 reconstruction reruns nothing made from MNIST.
    """
    settings = {k: v for k, v in section.items() if k not in DATA_SITE_KEYS}
    if dataset is not None:
        settings["substitutes"] = dataset_substitutes(settings.get("substitutes"), dataset)
    return settings


def dataset_substitutes(entries: Sequence[Any] | None, dataset: str) -> list[Any]:
    """The ``data.substitutes`` entries of one dataset, in config order.

    An entry that is not a mapping stays in every list, so the job's own check
    (galu.workflow.data.substitutes.parse_substitutes) still names it.
    """
    return [e for e in entries or () if not isinstance(e, Mapping) or e.get("dataset") == dataset]
