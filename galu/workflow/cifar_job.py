"""The start of every CIFAR-10 job of the normalization stage (Richemond & Guo, arXiv
1905.01369, Sec. 4): threads, device, provenance and the prepared data, in one call."""

from __future__ import annotations

from typing import Any

import torch

from galu.normalization.cifar import TensorData, prepare_data
from galu.workflow.data.prepare import load_processed
from galu.workflow.output import Run

# In the closure of the jobs that import it (galu.workflow.closure): it writes their bytes.
RESULT_CODE = "the CIFAR-10 jobs' threads and how their images are loaded and standardized"


def start_cifar_job(
    smk: Any, n_train: int | None, n_test: int | None, seed: int, device: str = "cpu"
) -> tuple[Run, TensorData]:
    """What every CIFAR-10 job script does first, ``smk`` being its ``snakemake`` object.

    Uses the rule's threads, resolves ``device`` (auto, cpu or cuda), loads ``input.npz``,
    opens the job's :class:`~galu.workflow.provenance.Run` (which records the device, and whether
    the data are a substitute from the inputs' sidecars), then subsamples and standardizes the
    images onto the device (:func:`prepare_data`).
    """
    torch.set_num_threads(smk.threads)
    arrays = load_processed(smk.input.npz)
    run = Run.from_snakemake(smk)
    # After the Run: a fallback to the CPU is logged in the job's log.
    resolved = run.use_device(device)
    return run, prepare_data(arrays, n_train, n_test, seed, resolved)
