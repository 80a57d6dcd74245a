"""Progress lines in a job's log (epoch 3/15, search round 4, ...), written by the long
loops of the science code. The workflow's heartbeat (:mod:`galu.workflow.feedback`) repeats
a running job's last log line, so these are what a user sees of a job's progress; a
:class:`Throttle` keeps a loop of many short steps to a line a minute."""

from __future__ import annotations

import logging
import time
from typing import Any

LOG = logging.getLogger("galu.progress")


def log_progress(what: str, done: int, total: int | None = None, **values: Any) -> None:
    """One progress line in the job's log: ``epoch 3/15 (depth 30, seed 0): loss 1.2``."""
    count = f"{done}/{total}" if total else str(done)
    extra = ", ".join(
        f"{k} {v:.4g}" if isinstance(v, float) else f"{k} {v}" for k, v in values.items()
    )
    LOG.info("%s %s%s", what, count, f": {extra}" if extra else "")


class Throttle:
    """Calling it is true at most once per ``every_s`` seconds, the first time ``every_s``
    after it was made: a loop of hours writes a progress line a minute, not one per step."""

    def __init__(self, every_s: float = 60.0) -> None:
        self.every_s = every_s
        self._last = time.monotonic()

    def __call__(self) -> bool:
        now = time.monotonic()
        if now - self._last < self.every_s:
            return False
        self._last = now
        return True
