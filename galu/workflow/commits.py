"""Which commits a set of outputs was made on, from their provenance sidecars.

A run that spans several sittings, or resumes a publication, can be made of outputs from
several commits, some from a tree with uncommitted changes. The publication
(:mod:`galu.workflow.publishing.publish`) and the report's landing page
(:mod:`galu.workflow.landing`) state all of them, not only the commit of the last job.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from galu.workflow.provenance import sidecar_path

# In the closure of the jobs that import it (galu.workflow.closure): it writes their bytes.
RESULT_CODE = "the landing page's account of the commits the tables were made on"


def made_on(records: Mapping[str, Mapping[str, Any]]) -> tuple[dict[str, int], list[str]]:
    """The commits a run's files were made on (commit -> how many files) and the files made
    from a tree with uncommitted changes, from their sidecars (``records``: file -> record)."""
    commits: dict[str, int] = {}
    dirty = []
    for path, record in sorted(records.items()):
        git = record.get("git") if isinstance(record, Mapping) else None
        git = git if isinstance(git, Mapping) else {}
        commit = git.get("commit")
        commit = commit if isinstance(commit, str) and commit else "unknown"
        commits[commit] = commits.get(commit, 0) + 1
        if git.get("dirty") is True:
            dirty.append(path)
    return commits, dirty


def made_on_files(files: Mapping[str, Path]) -> tuple[dict[str, int], list[str]]:
    """:func:`made_on` of the outputs ``files`` (name -> path on disk) that have a sidecar."""
    records = {}
    for name, path in files.items():
        side = sidecar_path(path)
        if side.is_file():
            try:
                records[name] = json.loads(side.read_text())
            except (OSError, ValueError):
                records[name] = {}  # the audit names it; its commit is unknown
    return made_on(records)
