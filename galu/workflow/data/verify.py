"""Check that a file holds exactly the published bytes.

A file is accepted when the archive itself matches (size, published MD5 and,
where known, SHA-256), or, for a single-file gzip archive, when its
decompressed content matches. The second route exists because a gzip header
stores a file name and a timestamp: re-packagers such as Debian rebuild it, so
the archive's checksum changes while the data inside is byte-for-byte the
published data. Anything else is rejected with both expected and actual
checksums in the message.
"""

from __future__ import annotations

import gzip
import hashlib
import zlib
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO, Literal

from galu.workflow.data.errors import ChecksumMismatchError
from galu.workflow.data.registry import RawFile

_CHUNK = 1 << 20

Method = Literal["archive", "gzip_content", "substitute"]


@dataclass(frozen=True)
class Digests:
    """Size and checksums of a byte stream."""

    size: int
    md5: str
    sha256: str

    def describe(self) -> str:
        return f"size {self.size}, md5 {self.md5}, sha256 {self.sha256}"


@dataclass(frozen=True)
class Verified:
    """A file that passed verification, and which check accepted it."""

    name: str
    path: Path
    sha256: str
    method: Method
    substitute: bool


def _digest_chunks(chunks: Iterable[bytes]) -> Digests:
    md5, sha, size = hashlib.md5(), hashlib.sha256(), 0
    for chunk in chunks:
        md5.update(chunk)
        sha.update(chunk)
        size += len(chunk)
    return Digests(size, md5.hexdigest(), sha.hexdigest())


def _chunks(handle: BinaryIO) -> Iterable[bytes]:
    return iter(lambda: handle.read(_CHUNK), b"")


def file_digests(path: Path) -> Digests:
    """Size, MD5 and SHA-256 of a file's bytes."""
    with open(path, "rb") as handle:
        return _digest_chunks(_chunks(handle))


def gzip_content_digests(path: Path) -> Digests:
    """Size, MD5 and SHA-256 of a gzip file's decompressed bytes.

    Raises OSError or EOFError when the file is not a complete gzip stream.
    """
    with gzip.open(path, "rb") as handle:
        return _digest_chunks(_chunks(handle))


def _published(spec: RawFile, content: bool) -> tuple[int | None, str | None, str | None]:
    """Published size, MD5 and SHA-256 of the archive, or of its decompressed content."""
    if content:
        return spec.content_size, spec.content_md5, spec.content_sha256
    return spec.size, spec.md5, spec.sha256


def _matches(got: Digests, size: int | None, md5: str | None, sha256: str | None) -> bool:
    """Size and MD5 must match; the SHA-256 too where one is recorded."""
    return got.size == size and got.md5 == md5 and (sha256 is None or got.sha256 == sha256)


def _describe(size: int | None, md5: str | None, sha256: str | None) -> str:
    return f"size {size}, md5 {md5}, sha256 {sha256 or 'not recorded'}"


def _content_digests_or_reason(path: Path) -> Digests | str:
    try:
        return gzip_content_digests(path)
    except (OSError, EOFError, zlib.error) as exc:
        # Truncated or corrupt gzip: report why rather than crash, so every source is listed.
        return f"not a complete gzip stream ({exc})"


def verify_official(
    path: Path, spec: RawFile, source: str, digests: Digests | None = None
) -> Verified:
    """Accept ``path`` as the official ``spec`` or raise ChecksumMismatchError.

    ``source`` (a URL, a mirror folder) only serves the error message;
    ``digests`` of ``path``, when the caller has them, save a second read.
    """
    got = digests or file_digests(path)
    if _matches(got, *_published(spec, content=False)):
        return Verified(spec.name, path, got.sha256, "archive", substitute=False)
    expected, actual = _describe(*_published(spec, content=False)), got.describe()
    if spec.has_content_checksum:
        content = _content_digests_or_reason(path)
        if isinstance(content, Digests) and _matches(content, *_published(spec, content=True)):
            return Verified(spec.name, path, got.sha256, "gzip_content", substitute=False)
        expected += f"; or decompressed content of {_describe(*_published(spec, content=True))}"
        shown = content.describe() if isinstance(content, Digests) else content
        actual += f"; decompressed content: {shown}"
    raise ChecksumMismatchError(spec.name, source, expected, actual)


def verify_pinned(
    path: Path, name: str, sha256: str, source: str, digests: Digests | None = None
) -> Verified:
    """Accept ``path`` only if its SHA-256 is ``sha256`` (an opted-in substitute)."""
    got = digests or file_digests(path)
    if got.sha256 != sha256.lower():
        expected = f"sha256 {sha256.lower()} (pinned substitute)"
        raise ChecksumMismatchError(name, source, expected, got.describe())
    return Verified(name, path, got.sha256, "substitute", substitute=True)
