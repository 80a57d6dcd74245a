"""The bytes of provenance sidecars: file hashes, where a sidecar lies, and its seal.

The lowest layer of :mod:`galu.workflow.provenance` (which re-exports all of it), kept apart
so that :mod:`galu.workflow.vouch` can check sidecars without importing the writer that
calls it.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

SIDECAR_SUFFIX = ".meta.json"
# Each sidecar carries the sha256 of its own bytes under this key (see sealed_sidecar).
SEAL_KEY = "sidecar_sha256"
_CHUNK = 1 << 20


def sha256_file(path: str | os.PathLike[str]) -> str:
    """Hex SHA-256 of a file's bytes, read in 1 MiB chunks."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(_CHUNK), b""):
            digest.update(block)
    return digest.hexdigest()


def sidecar_path(path: str | os.PathLike[str]) -> Path:
    """The sidecar that belongs to ``path``."""
    return Path(f"{os.fspath(path)}{SIDECAR_SUFFIX}")


_PLACEHOLDER = "0" * 64
_SEAL = re.compile(rb'"' + SEAL_KEY.encode() + rb'": "([0-9a-f]{64})"')


def sealed_sidecar(record: Mapping[str, Any]) -> bytes:
    """The bytes of a sidecar for ``record`` that carry the sha256 of those very bytes.

    The JSON is written with a placeholder in ``sidecar_sha256``, hashed, and the placeholder
    replaced by the hash, so any changed bit anywhere in the file (a value, a key, a number's
    spelling, the seal itself) makes :func:`seal_problem` report it.
    """
    body = {**{k: v for k, v in record.items() if k != SEAL_KEY}, SEAL_KEY: _PLACEHOLDER}
    text = (json.dumps(body, indent=2, sort_keys=True) + "\n").encode()
    digest = hashlib.sha256(text).hexdigest()
    blank = f'"{SEAL_KEY}": "{_PLACEHOLDER}"'.encode()
    return text.replace(blank, f'"{SEAL_KEY}": "{digest}"'.encode(), 1)


def seal_problem(data: bytes) -> str | None:
    """Why a sidecar's bytes do not match the seal they carry (None when they do)."""
    seals = _SEAL.findall(data)
    if len(seals) != 1:
        return "carries no intact seal (made by an older galu, or the seal itself was changed)"
    blank = _SEAL.sub(f'"{SEAL_KEY}": "{_PLACEHOLDER}"'.encode(), data)
    if hashlib.sha256(blank).hexdigest().encode() != seals[0]:
        return "changed after it was written (its bytes do not match its seal)"
    return None
