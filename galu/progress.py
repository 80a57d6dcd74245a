"""Progress lines in a job's log (epoch 3/15, search round 4, ...), written by the long
loops of the science code. The workflow's heartbeat (:mod:`galu.workflow.feedback`) repeats
a running job's last log line, so these are what a user sees of a job's progress."""

from __future__ import annotations

import logging
from typing import Any

LOG = logging.getLogger("galu.progress")


def log_progress(what: str, done: int, total: int | None = None, **values: Any) -> None:
    """One progress line in the job's log: ``epoch 3/15 (depth 30, seed 0): loss 1.2``."""
    count = f"{done}/{total}" if total else str(done)
    extra = ", ".join(
        f"{k} {v:.4g}" if isinstance(v, float) else f"{k} {v}" for k, v in values.items()
    )
    LOG.info("%s %s%s", what, count, f": {extra}" if extra else "")
