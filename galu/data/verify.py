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

from galu.data.errors import ChecksumMismatchError
from galu.data.registry import RawFile

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


def _expected_archive(spec: RawFile) -> str:
    sha = spec.sha256 or "not recorded"
    return f"size {spec.size}, md5 {spec.md5}, sha256 {sha}"


def _archive_matches(spec: RawFile, got: Digests) -> bool:
    if got.size != spec.size or got.md5 != spec.md5:
        return False
    return spec.sha256 is None or got.sha256 == spec.sha256


def _content_matches(spec: RawFile, got: Digests) -> bool:
    if got.size != spec.content_size or got.md5 != spec.content_md5:
        return False
    return spec.content_sha256 is None or got.sha256 == spec.content_sha256


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
    if _archive_matches(spec, got):
        return Verified(spec.name, path, got.sha256, "archive", substitute=False)
    expected, actual = _expected_archive(spec), got.describe()
    if spec.has_content_checksum:
        content = _content_digests_or_reason(path)
        if isinstance(content, Digests) and _content_matches(spec, content):
            return Verified(spec.name, path, got.sha256, "gzip_content", substitute=False)
        want_sha = spec.content_sha256 or "not recorded"
        expected += (
            f"; or decompressed content of size {spec.content_size}, "
            f"md5 {spec.content_md5}, sha256 {want_sha}"
        )
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
