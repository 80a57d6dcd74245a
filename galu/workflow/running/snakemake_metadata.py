"""Snakemake's own record of each output it made, read and written as Snakemake does.

Snakemake decides whether to rerun a job whose outputs exist from its metadata record of each
output (``.snakemake/metadata``, the file persistence): the rule, the hashes of its code and
parameters, its input set. A file copied into a checkout without its record is trusted
blindly: a later code edit would not rerun it. :mod:`galu.workflow.publishing.resume` therefore
carries the records of a published run along with its files.
"""

from __future__ import annotations

import json
import os
from base64 import urlsafe_b64encode
from collections.abc import Iterable
from pathlib import Path
from typing import Any

METADATA = Path(".snakemake/metadata")


def metadata_record_path(target: str, metadata: Path = METADATA) -> Path:
    """Where Snakemake's file persistence keeps the record of ``target``: its URL-safe
    base64, cut into names of at most NAME_MAX - 1 characters, each but the last a folder
    marked with ``@`` (``snakemake/persistence/file.py``, ``_record_path``)."""
    existing = next((p for p in (metadata, *metadata.parents) if p.exists()), Path("."))
    step = (os.pathconf(existing, "PC_NAME_MAX") or 255) - 1
    encoded = urlsafe_b64encode(target.encode()).decode()
    pieces = [encoded[i : i + step] for i in range(0, len(encoded), step)]
    return metadata.joinpath(*(f"@{p}" for p in pieces[:-1]), pieces[-1])


def read_metadata(targets: Iterable[str], metadata: Path = METADATA) -> dict[str, Any]:
    """Snakemake's metadata record of each target that has one (target -> record)."""
    records = {}
    for target in targets:
        path = metadata_record_path(target, metadata)
        if path.is_file():
            try:
                records[target] = json.loads(path.read_text())
            except ValueError:
                continue  # a torn record: Snakemake would ignore it too
    return records
