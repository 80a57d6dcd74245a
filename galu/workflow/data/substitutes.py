"""Non-official copies of a dataset file, used only by explicit, pinned opt-in.

Some sites only have a re-packed or reconstructed copy of an archive (for
example a CIFAR-10 rebuilt from partial copies). A config entry under
``data.substitutes`` names the dataset, the file it stands in for, the local
path of the copy and that copy's SHA-256. The copy is accepted only if its
bytes hash to exactly that value, and everything made from it is marked as a
substitute. Without an entry such a file is rejected like any other mismatch.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from galu.workflow.data.errors import ChecksumMismatchError
from galu.workflow.data.registry import DATASETS, Dataset, RawFile
from galu.workflow.data.verify import Verified, file_digests, verify_official, verify_pinned

_SHA256 = re.compile(r"^[0-9a-fA-F]{64}$")
_REQUIRED = ("dataset", "file", "path", "sha256")
_OPTIONAL = ("note",)


@dataclass(frozen=True)
class Substitute:
    """An opted-in, checksum-pinned stand-in for one official file."""

    dataset: str
    file: str
    path: Path
    sha256: str
    note: str = ""


def _check_entry(index: int, entry: Mapping[str, Any], datasets: Mapping[str, Dataset]) -> None:
    where = f"data.substitutes[{index}]"
    if not isinstance(entry, Mapping):
        raise ValueError(f"{where} must be a mapping with keys {', '.join(_REQUIRED)}")
    missing = [k for k in _REQUIRED if k not in entry]
    unknown = sorted(set(entry) - set(_REQUIRED) - set(_OPTIONAL))
    if missing or unknown:
        raise ValueError(
            f"{where}: missing keys {missing}, unknown keys {unknown}; "
            f"an entry needs {', '.join(_REQUIRED)} (and optionally note)"
        )
    if entry["dataset"] not in datasets:
        raise ValueError(
            f"{where}.dataset {entry['dataset']!r} is not one of: {', '.join(datasets)}"
        )
    names = [f.name for f in datasets[entry["dataset"]].files]
    if entry["file"] not in names:
        raise ValueError(f"{where}.file {entry['file']!r} is not one of: {', '.join(names)}")
    if not _SHA256.match(str(entry["sha256"])):
        raise ValueError(f"{where}.sha256 must be 64 hex digits, got {entry['sha256']!r}")


def parse_substitutes(
    entries: Sequence[Mapping[str, Any]] | None,
    datasets: Mapping[str, Dataset] = DATASETS,
) -> tuple[Substitute, ...]:
    """Validate config entries (``data.substitutes``) into Substitute records."""
    parsed = []
    for index, entry in enumerate(entries or ()):
        _check_entry(index, entry, datasets)
        parsed.append(
            Substitute(
                dataset=entry["dataset"],
                file=entry["file"],
                path=Path(str(entry["path"])).expanduser(),
                sha256=str(entry["sha256"]).lower(),
                note=str(entry.get("note", "")),
            )
        )
    return tuple(parsed)


def substitutes_for(substitutes: Sequence[Substitute], dataset: str, file: str) -> list[Substitute]:
    """The opted-in substitutes for one file, in config order."""
    return [s for s in substitutes if s.dataset == dataset and s.file == file]


def accept_present(path: Path, spec: RawFile, substitutes: Sequence[Substitute]) -> Verified:
    """Accept a file as the official ``spec`` or as one of its opted-in substitutes.

    Raises the official check's ChecksumMismatchError, with the pinned
    substitute checksums added to what was expected, when neither matches.
    """
    digests = file_digests(path)  # one read serves every check below
    try:
        return verify_official(path, spec, str(path), digests)
    except ChecksumMismatchError as official:
        for sub in substitutes:
            try:
                return verify_pinned(path, spec.name, sub.sha256, str(path), digests)
            except ChecksumMismatchError:
                continue
        if not substitutes:
            raise
        pins = ", ".join(s.sha256 for s in substitutes)
        expected = f"{official.expected}; or a pinned substitute with sha256 {pins}"
        raise ChecksumMismatchError(spec.name, str(path), expected, official.actual) from None
