"""Which commits a set of outputs was made on, from their provenance sidecars.

A run that spans several sittings, or resumes a publication, can be made of outputs from
several commits, some from a tree with uncommitted changes. The publication
(:mod:`galu.publish`) and the report's landing page (:mod:`galu.landing`) state all of them,
not only the commit of the last job.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def made_on(records: Mapping[str, Mapping[str, Any]]) -> tuple[dict[str, int], list[str]]:
    """The commits a run's files were made on (commit -> how many files) and the files made
    from a tree with uncommitted changes, from their sidecars (``records``: file -> record)."""
    commits: dict[str, int] = {}
    dirty = []
    for path, record in sorted(records.items()):
        git = record.get("git") or {}
        commit = git.get("commit") or "unknown"
        commits[commit] = commits.get(commit, 0) + 1
        if git.get("dirty"):
            dirty.append(path)
    return commits, dirty
