"""Whether a file the workflow made may be read: its provenance sidecar vouches for it.

A result table, a figure or a processed dataset array is trusted only through its sidecar
(``<file>.meta.json``, :mod:`galu.workflow.provenance`): the sidecar must be there, be well
formed (:func:`galu.workflow.sidecar_shape.shape_problem`), carry an intact seal, describe
*this* file (an array of one dataset copied with its sidecar over another's must not pass as
the other) and record the sha256 the bytes have now. The pre-flight applies this to every
dataset array and result before a run starts; every job applies it again to the inputs it
reads (:func:`unvouched_inputs`, called by ``Run.from_snakemake``), and ``load_processed`` to
the arrays it loads, so a file damaged or swapped after the pre-flight is refused where it
is used, not only by ``galu audit``.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable, Mapping
from pathlib import Path, PurePosixPath
from typing import Any

from galu.workflow.sidecar_seal import seal_problem, sha256_file, sidecar_path
from galu.workflow.sidecar_shape import output_shape_problem, shape_problem

# Where the workflow writes what its jobs read; a job input elsewhere (workflow/claims.yaml,
# README.md, a published copy, which the audit checks) is source, not a product.
PRODUCT_FOLDERS = ("results", "figures", "data")
NO_SIDECAR = "has no provenance sidecar (its job was killed, or it was made by hand)"


def is_product(path: str | os.PathLike[str]) -> bool:
    """Whether a job input (relative to the repository root) is a file the workflow made."""
    parts = PurePosixPath(Path(path).as_posix()).parts
    return bool(parts) and not Path(path).is_absolute() and parts[0] in PRODUCT_FOLDERS


def describes(described: str, path: str | os.PathLike[str]) -> bool:
    """Whether a sidecar that describes ``described`` (relative to the root where its job
    ran) belongs to the file at ``path``: the same path, or for an absolute ``path`` (a copy
    of a checkout elsewhere) one that ends with it."""
    here = Path(path).as_posix()
    return here == described or (Path(path).is_absolute() and here.endswith("/" + described))


def elsewhere_problem(described: str, path: str | os.PathLike[str]) -> str | None:
    """The problem of a sidecar that describes another file than ``path``."""
    if Path(described).is_absolute() or describes(described, path):
        return None
    return (
        f"its sidecar describes {described}, not this file (copied with its"
        " sidecar?): its provenance is not this file's"
    )


def sidecar_problem(
    path: Path, here: str | None = None, shape: Callable[[Any], str | None] = shape_problem
) -> tuple[str | None, dict[str, Any], str]:
    """(problem, record, key) of ``path``'s sidecar: the problem is None when it is there,
    well formed (``shape``: every field, by default), sealed and describes ``here``
    (default: ``path``); the key changes whenever the sidecar's bytes do. Raises OSError
    when the sidecar cannot be read."""
    side = sidecar_path(path)
    if not side.is_file():
        return NO_SIDECAR, {}, ""
    data = side.read_bytes()  # read once: parsed, sealed and keyed from the same bytes
    try:
        record = json.loads(data)
    except (ValueError, UnicodeDecodeError) as error:
        return f"its sidecar is unreadable or malformed ({error})", {}, ""
    malformed = shape(record)
    if malformed:
        return f"its sidecar is unreadable or malformed (it {malformed})", {}, ""
    elsewhere = elsewhere_problem(record["output"]["path"], path if here is None else here)
    if elsewhere:
        return elsewhere, {}, ""
    sealed = seal_problem(data)
    if sealed:
        return f"its sidecar {sealed}", {}, ""
    return None, record, f"{record['output']['sha256']}:{hashlib.sha256(data).hexdigest()}"


def bytes_problem(actual: str, recorded: str) -> str | None:
    """The problem of a file whose sha256 is ``actual`` where its sidecar records ``recorded``."""
    if actual == recorded:
        return None
    return f"changed after it was written (sha256 {actual[:12]}…, recorded {recorded[:12]}…)"


def vouch_problem(path: str | os.PathLike[str], sha256: str | None = None) -> str | None:
    """Why ``path`` may not be read (None when its sidecar vouches for its bytes); ``sha256``
    is the file's hash when the caller has it already."""
    try:
        problem, record, _ = sidecar_problem(Path(path), shape=output_shape_problem)
    except OSError as error:
        return f"its sidecar could not be read ({error.strerror or error})"
    if problem:
        return problem
    return bytes_problem(sha256 or sha256_file(path), record["output"]["sha256"])


def unvouched_inputs(hashes: Mapping[str, str]) -> list[str]:
    """``"<path> <problem>"`` for every workflow product among a job's inputs (path ->
    sha256 of its bytes) that its sidecar does not vouch for."""
    found = []
    for path, sha256 in hashes.items():
        if is_product(path):
            problem = vouch_problem(path, sha256)
            if problem:
                found.append(f"{path} {problem}")
    return found
