"""A long job's state on disk, so that a killed job resumes where it was instead of from zero.

The finite-N SCM simulations at the paper's N run for hours (:mod:`galu.scm.simulation`):
a job killed near its end (a cluster's time limit, a session that stops, Ctrl-C) would lose
all of it, since Snakemake deletes an unfinished job's outputs and starts it over. The
simulation saves its state here every few minutes; the next attempt at the same job loads
it and goes on, and its outputs are bit for bit those of an uninterrupted run (tested).

A run kept between sittings carries its checkpoints with it (``galu publish --in-progress``
keeps them in the run state, ``galu resume`` puts them back), so a simulation can span
sittings on different machines. A checkpoint is only ever loaded by the job that wrote it:
its ``key`` hashes everything that decides the job's numbers (rule, wildcards, parameters,
code closure, inputs, device), and a file with another key is ignored and replaced. Files
are written atomically (:mod:`galu.atomic`), so a kill while saving leaves the previous one.
"""

from __future__ import annotations

import io
import logging
import os
import time
from pathlib import Path
from typing import Any

from galu.atomic import atomic_write_bytes

LOG = logging.getLogger("galu.checkpoints")

# Where a workflow job's checkpoints live: beside Snakemake's own records, not among the
# outputs (Snakemake deletes an unfinished job's outputs; this folder it leaves alone).
FOLDER = Path(".snakemake") / "galu" / "checkpoints"


class Checkpoint:
    """Save and load one job's state (a dict of tensors, numbers, strings, lists of them).

    ``every_s``: :meth:`due` is true once that many seconds have passed since the last save
    (or since the checkpoint was made), so saving costs nothing between.
    """

    def __init__(self, path: str | os.PathLike[str], key: str, every_s: float = 300.0) -> None:
        if every_s < 0:
            raise ValueError(f"every_s must be >= 0, got {every_s}")
        self.path = Path(path)
        self.key = key
        self.every_s = every_s
        self._last = time.monotonic()

    def load(self) -> dict[str, Any] | None:
        """The saved state, or None when there is none or it belongs to another job."""
        import torch  # here, not at the top: publish and resume read FOLDER without torch

        if not self.path.is_file():
            return None
        try:
            saved = torch.load(io.BytesIO(self.path.read_bytes()), weights_only=True)
        except Exception as error:  # a damaged file: start over rather than fail the job
            LOG.warning(
                "checkpoint %s unreadable (%s): starting from the beginning", self.path, error
            )
            return None
        if not isinstance(saved, dict) or saved.get("key") != self.key:
            LOG.info("checkpoint %s is another job's (settings or code differ): ignored", self.path)
            return None
        LOG.info("resuming from checkpoint %s", self.path)
        return saved["state"]

    def due(self) -> bool:
        return time.monotonic() - self._last >= self.every_s

    def save(self, state: dict[str, Any]) -> None:
        import torch

        buffer = io.BytesIO()
        torch.save({"key": self.key, "state": state}, buffer)
        atomic_write_bytes(self.path, buffer.getvalue())
        self._last = time.monotonic()
        LOG.info("checkpoint saved: %s", self.path)

    def clear(self) -> None:
        """Remove the file once the job's outputs are written: its state is no longer needed."""
        self.path.unlink(missing_ok=True)
