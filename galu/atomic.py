"""Atomic writes: a file appears under its final name only when it is complete.

A temporary file beside the target is written, flushed to disk and renamed over the target,
so a crash, a kill or a full disk leaves the previous version (or nothing), never a partial
file under the final name. Every writer of the workflow and the library goes through here.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


@contextlib.contextmanager
def atomic_path(path: str | os.PathLike[str]) -> Iterator[Path]:
    """Yield a temporary path beside ``path``; rename it over ``path`` on success.

    On any exception the temporary file is removed and ``path`` is untouched,
    so the previous version of an output survives a crash or a full disk.
    """
    final = Path(path)
    final.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp_name = tempfile.mkstemp(prefix=f".{final.name}.", suffix=".tmp", dir=final.parent)
    os.close(fd)
    tmp = Path(tmp_name)
    os.chmod(tmp, 0o666 & ~_umask())  # mkstemp makes 0600; outputs are shared files
    try:
        yield tmp
        with open(tmp, "rb+") as handle:  # data reaches the disk before the rename
            os.fsync(handle.fileno())
        os.replace(tmp, final)
    finally:
        tmp.unlink(missing_ok=True)


def atomic_write_bytes(path: str | os.PathLike[str], data: bytes) -> None:
    """Write ``data`` to ``path`` atomically."""
    with atomic_path(path) as tmp:
        tmp.write_bytes(data)
