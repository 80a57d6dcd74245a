"""Feedback while and after the workflow runs: a heartbeat of long jobs, progress lines in
the job logs and a report archive that unpacks readable.

- :func:`start_heartbeat`: every ``GALU_HEARTBEAT_S`` seconds (default 60) a job still
  running writes one line to stderr (the console of a local run, the job's log file under
  SLURM) with its rule, wildcards, elapsed time and the last line of its log file, which
  :func:`galu.progress.log_progress` keeps current (epoch 3/15, search round 4, ...).
- The end-of-run summary is :func:`galu.workflow.landing.run_summary` (report side: this module is
  imported by every job, and must not pull the claims code into every job's code closure).
- :func:`normalize_zip_modes`: Snakemake writes ``report.zip`` members from temporary
  files with mode 0600; they are rewritten 0644 (folders 0755) so the unpacked report can be
  shared and served.
"""

from __future__ import annotations

import io
import os
import re
import sys
import threading
import time
import zipfile
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, TextIO

from galu.atomic import atomic_write_bytes

HEARTBEAT_ENV = "GALU_HEARTBEAT_S"
DEFAULT_HEARTBEAT_S = 60.0


def last_line(path: str | os.PathLike[str] | None, limit: int = 160) -> str:
    """The last non-empty line of a text file (its last ``limit`` characters), or ''."""
    if not path or not Path(path).is_file():
        return ""
    with open(path, "rb") as handle:
        handle.seek(0, os.SEEK_END)
        handle.seek(max(0, handle.tell() - 4096))
        lines = [x for x in handle.read().decode("utf-8", "replace").splitlines() if x.strip()]
    return lines[-1].strip()[-limit:] if lines else ""


def heartbeat_line(rule: str, wildcards: Mapping[str, Any], elapsed: float, log: str) -> str:
    """``galu: <rule> (depth=30) still running after 3 min; last: ...``"""
    named = ", ".join(f"{k}={v}" for k, v in wildcards.items())
    minutes = f"{elapsed / 60:.0f} min" if elapsed >= 90 else f"{elapsed:.0f} s"
    line = f"galu: {rule}{f' ({named})' if named else ''} still running after {minutes}"
    # without the logging prefix (time, level, logger): the message is what tells progress
    last = re.sub(r"^\d{4}-\d\d-\d\d [\d:,]+ [A-Z]+ [\w.]+: ", "", last_line(log))
    return f"{line}; last log line: {last}" if last else line


def heartbeat_interval(environ: Mapping[str, str] = os.environ) -> float:
    """Seconds between heartbeats (``GALU_HEARTBEAT_S``; 0 turns them off)."""
    try:
        return max(0.0, float(environ.get(HEARTBEAT_ENV, DEFAULT_HEARTBEAT_S)))
    except ValueError:
        return DEFAULT_HEARTBEAT_S


def start_heartbeat(
    rule: str,
    wildcards: Mapping[str, Any],
    log: str = "",
    interval: float | None = None,
    stream: TextIO | None = None,
    clock: Callable[[], float] = time.monotonic,
) -> threading.Event | None:
    """Start a daemon thread that writes :func:`heartbeat_line` every ``interval`` seconds
    until the process ends or the returned event is set. None when turned off."""
    interval = heartbeat_interval() if interval is None else interval
    if interval <= 0:
        return None
    stop = threading.Event()
    start = clock()
    out = stream or sys.stderr

    def beat() -> None:
        while not stop.wait(interval):
            print(heartbeat_line(rule, wildcards, clock() - start, log), file=out, flush=True)

    threading.Thread(target=beat, name="galu-heartbeat", daemon=True).start()
    return stop


def normalize_zip_modes(path: str | os.PathLike[str], file_mode: int = 0o644) -> int:
    """Rewrite the archive at ``path`` (atomically) so its files unpack with ``file_mode``
    and its folders with 0755; returns how many members changed."""
    changed = 0
    buffer = io.BytesIO()
    with zipfile.ZipFile(path) as source, zipfile.ZipFile(buffer, "w") as target:
        for info in source.infolist():
            mode = 0o755 if info.is_dir() else file_mode
            kind = 0o040000 if info.is_dir() else 0o100000
            wanted = ((kind | mode) << 16) | (info.external_attr & 0xFFFF)
            changed += wanted != info.external_attr
            info.external_attr = wanted
            info.create_system = 3  # Unix, so unzip reads the mode bits
            target.writestr(info, source.read(info.filename))
    if changed:
        atomic_write_bytes(path, buffer.getvalue())
    return changed
