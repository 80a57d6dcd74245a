"""Errors raised by the dataset layer; each names what is wrong and how to fix it."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any


class DataError(RuntimeError):
    """Base class for every dataset problem the user has to act on."""


class ChecksumMismatchError(DataError):
    """A file's bytes are not the published ones (nor a pinned substitute)."""

    def __init__(self, file: str, source: str, expected: str, actual: str) -> None:
        self.file = file
        self.source = source
        self.expected = expected
        self.actual = actual
        super().__init__(
            f"{file} from {source} failed verification: expected {expected}; got {actual}. "
            "The copy is corrupt, truncated or not the official file; delete it or use "
            "another source."
        )


class InsecureURLError(DataError):
    """A remote URL that is not https (plain http is allowed only on loopback)."""


class DownloadError(DataError):
    """A URL could not be fetched (HTTP error, network down, too many retries).

    ``not_found`` marks an HTTP 404/410, ``unreachable`` a host that cannot be
    reached at all (no point trying its other URLs).
    """

    def __init__(self, message: str, *, not_found: bool = False, unreachable: bool = False):
        self.not_found = not_found
        self.unreachable = unreachable
        super().__init__(message)


class UnsafeArchiveError(DataError):
    """A tar archive holds a member that could write outside its folder."""


class FormatError(DataError):
    """A raw file does not have the structure or counts its format promises."""


class MissingFilesError(DataError):
    """No source held a verified copy of one or more files (see ``offline.py``).

    ``missing`` holds one ``offline.MissingFile`` per file, with every place tried.
    """

    def __init__(self, message: str, missing: Sequence[Any] = ()) -> None:
        self.missing = tuple(missing)
        super().__init__(message)
