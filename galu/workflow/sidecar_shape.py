"""What the audit, ``galu audit --explain``, ``galu explain`` and ``galu publish`` accept as
a provenance sidecar: every field they read has the type they expect, and every path in it
names a file inside the repository. A sidecar is data like any other file, so one edited by
hand, truncated or written by a broken tool must be named as malformed, never crash a
command nor make it read ``/etc/passwd`` or ``../../secret`` (:func:`shape_problem`).
"""

from __future__ import annotations

import re
from pathlib import PurePosixPath
from typing import Any

# A module a script imports by name (galu.scm.figures).
_MODULE = re.compile(r"[A-Za-z_]\w*(\.[A-Za-z_]\w*)*")


def is_hash(value: Any) -> bool:
    """A sha256 in hex: 64 hexadecimal digits."""
    return isinstance(value, str) and len(value) == 64 and not value.strip("0123456789abcdef")


def inside_problem(path: Any) -> str | None:
    """Why ``path`` (a sidecar's path, relative to the repository root) does not name a file
    inside the repository: not a string, empty, absolute, through ``..``, or with a NUL."""
    if not isinstance(path, str) or not path:
        return "is not a path"
    if "\0" in path or "\\" in path:
        return "is not a plain path"
    pure = PurePosixPath(path)
    if pure.is_absolute() or ".." in pure.parts:
        return "lies outside the repository"
    return None


def plain_name(value: Any) -> bool:
    """A single file or folder name: no separator, not ``.`` or ``..``."""
    return (
        isinstance(value, str)
        and value not in ("", ".", "..")
        and not any(c in value for c in "/\\\0")
    )


def _inputs_problem(inputs: Any) -> str | None:
    if not isinstance(inputs, list) or not all(
        isinstance(i, dict) and isinstance(i.get("path"), str) and is_hash(i.get("sha256"))
        for i in inputs
    ):
        return "has malformed inputs (a list of {path, sha256} expected)"
    for item in inputs:
        why = inside_problem(item["path"])
        if why:
            return f"has an input whose path {item['path']!r} {why}"
    return None


def _code_problem(code: Any) -> str | None:
    if code is None:
        return None
    if not (
        isinstance(code, dict)
        and isinstance(code.get("script"), str)
        and isinstance(code.get("sha256"), str)
        and isinstance(code.get("files"), dict)
        and all(isinstance(k, str) and isinstance(v, str) for k, v in code["files"].items())
        and isinstance(code.get("imports", []), list)
        and all(isinstance(m, str) and _MODULE.fullmatch(m) for m in code.get("imports", []))
    ):
        return (
            "has a malformed code record (script, sha256, files {path: sha256} and imports"
            " [module names] expected)"
        )
    why = inside_problem(code["script"])
    return f"has a code script {code['script']!r} that {why}" if why else None


def _git_problem(git: Any) -> str | None:
    if git is None:
        return None
    if not (
        isinstance(git, dict)
        and isinstance(git.get("commit"), (str, type(None)))
        and isinstance(git.get("dirty"), (bool, type(None)))
    ):
        return "has a malformed git record ({commit: text or null, dirty: bool or null})"
    return None


def _raw_files_problem(record: dict[str, Any]) -> str | None:
    raw = record.get("raw_files", [])
    if not isinstance(raw, list) or not all(
        isinstance(r, dict) and plain_name(r.get("name")) for r in raw
    ):
        return "has malformed raw_files (a list of {name: a file name} expected)"
    if raw:
        wildcards = record.get("wildcards")
        dataset = (wildcards if isinstance(wildcards, dict) else {}).get("dataset") or record.get(
            "dataset"
        )
        if not plain_name(dataset):
            return "has raw_files but no dataset name (a folder of data/raw) to find them in"
    return None


def output_shape_problem(record: Any) -> str | None:
    """What is wrong with the fields that vouch for a file's bytes (its ``output``): all a
    job or a loader needs (:mod:`galu.workflow.vouch`); the rest of the record is the
    audit's and the pre-flight's to judge (:func:`shape_problem`)."""
    if not isinstance(record, dict):
        return f"is a {type(record).__name__}, not a mapping"
    output = record.get("output")
    if not isinstance(output, dict) or not is_hash(output.get("sha256")):
        return "has no output.sha256 (a 64-digit hash)"
    return None if isinstance(output.get("path"), str) else "has no output.path"


def shape_problem(record: Any) -> str | None:
    """What is wrong with the shape of a sidecar record (None when it is well formed): every
    field the audit, the explanations and the publication read has the type they expect,
    and every path names a file inside the repository, so no sidecar can crash them or make
    them read elsewhere."""
    return output_shape_problem(record) or (
        _inputs_problem(record.get("inputs", []))
        or _code_problem(record.get("code"))
        or _git_problem(record.get("git"))
        or _raw_files_problem(record)
    )
