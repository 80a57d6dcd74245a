"""Fetch one file over HTTPS: progress bar, timeout, retries, resume, verify, rename.

Bytes go to ``<name>.part`` beside the destination. An interrupted transfer
keeps that partial file and the next attempt asks for the rest with an HTTP
``Range`` header. Only once the complete file has passed verification is it
renamed to its final name; a file that fails verification is deleted, so no
unverified bytes ever sit under the final name.
"""

from __future__ import annotations

import errno
import http.client
import os
import socket
import ssl
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

from tqdm import tqdm

from galu.workflow.data.errors import ChecksumMismatchError, DownloadError, InsecureURLError
from galu.workflow.data.registry import RawFile
from galu.workflow.data.verify import Verified, verify_official

_CHUNK = 1 << 16
LOOPBACK_HOSTS = frozenset({"127.0.0.1", "localhost", "::1"})
# Server-side conditions that usually clear up; other HTTP errors will not.
_RETRY_STATUS = frozenset({408, 425, 429, 500, 502, 503, 504})
# Conditions that mean "offline": retrying them only delays the offline message.
_OFFLINE_ERRNOS = frozenset({errno.ENETUNREACH, errno.EHOSTUNREACH, errno.ECONNREFUSED})


@dataclass(frozen=True)
class RetryPolicy:
    """How hard to try one URL: socket timeout, extra attempts, first back-off delay."""

    timeout: float = 60.0
    retries: int = 4
    backoff: float = 2.0
    sleep: Callable[[float], None] = field(default=time.sleep, compare=False, repr=False)

    def delay(self, attempt: int) -> float:
        """Seconds to wait before retry number ``attempt`` (0-based): doubling back-off."""
        return self.backoff * (2**attempt)


class _Transient(Exception):
    """A failure worth retrying (timeout, dropped connection, 5xx)."""


class _RangeNotSatisfiable(Exception):
    """HTTP 416: the partial file is not a prefix the server can continue."""


def check_url(url: str) -> None:
    """Refuse anything but https, except plain http to this machine (test servers)."""
    parts = urlsplit(url)
    if parts.scheme == "https":
        return
    if parts.scheme == "http" and parts.hostname in LOOPBACK_HOSTS:
        return
    raise InsecureURLError(
        f"refusing to download {url}: only https URLs are allowed for remote hosts "
        "(plain http only for 127.0.0.1/localhost); use the https form of the URL"
    )


def partial_path(dest: Path) -> Path:
    """Where the bytes of ``dest`` accumulate until verified."""
    return dest.with_name(dest.name + ".part")


def _is_permanent(reason: object) -> bool:
    """Name lookup failed, network unreachable, refused, or a bad certificate."""
    if isinstance(reason, (socket.gaierror, ssl.SSLCertVerificationError)):
        return True
    return isinstance(reason, OSError) and reason.errno in _OFFLINE_ERRNOS


def _open(url: str, offset: int, timeout: float) -> http.client.HTTPResponse:
    headers = {"User-Agent": "galu-data"}
    if offset:
        headers["Range"] = f"bytes={offset}-"
    request = urllib.request.Request(url, headers=headers)
    try:
        return urllib.request.urlopen(request, timeout=timeout)
    except urllib.error.HTTPError as exc:
        if exc.code == 416 and offset:
            raise _RangeNotSatisfiable from exc
        if exc.code in _RETRY_STATUS:
            raise _Transient(f"HTTP {exc.code}") from exc
        gone = exc.code in (404, 410)
        raise DownloadError(f"{url}: HTTP {exc.code} {exc.reason}", not_found=gone) from exc
    except urllib.error.URLError as exc:
        if _is_permanent(exc.reason):
            raise DownloadError(f"{url}: unreachable ({exc.reason})", unreachable=True) from exc
        raise _Transient(str(exc.reason)) from exc


def _resume_offset(response: http.client.HTTPResponse, offset: int) -> int:
    """The offset the response's body starts at: ``offset`` if honoured, else 0."""
    if offset and response.status == 206:
        content_range = response.headers.get("Content-Range", "")
        if content_range.startswith(f"bytes {offset}-"):
            return offset
    return 0


def _check_complete(response: http.client.HTTPResponse, received: int) -> None:
    """Raise if the connection closed before Content-Length bytes arrived.

    ``read(amount)`` returns ``b""`` at a premature end instead of raising, so
    the count is checked here; the bytes that did arrive are kept for a resume.
    """
    announced = response.headers.get("Content-Length")
    if announced is not None and announced.isdigit() and received < int(announced):
        raise _Transient(f"connection closed after {received} of {announced} bytes")


def _transfer(
    url: str, part: Path, spec: RawFile, policy: RetryPolicy, progress: bool | None
) -> None:
    """Append the missing bytes of ``url`` to ``part`` (restarting if Range is ignored)."""
    offset = part.stat().st_size if part.exists() else 0
    if offset >= spec.size:
        return  # nothing left to ask for; verification decides
    try:
        with _open(url, offset, policy.timeout) as response:
            start = _resume_offset(response, offset)
            with (
                open(part, "ab" if start else "wb") as out,
                tqdm(
                    total=spec.size,
                    initial=start,
                    desc=spec.name,
                    unit="B",
                    unit_scale=True,
                    unit_divisor=1024,
                    disable=None if progress is None else not progress,
                    leave=False,
                ) as bar,
            ):
                received = 0
                for chunk in iter(lambda: response.read(_CHUNK), b""):
                    out.write(chunk)
                    bar.update(len(chunk))
                    received += len(chunk)
                out.flush()
                os.fsync(out.fileno())
        _check_complete(response, received)
    except _RangeNotSatisfiable as exc:
        part.unlink()
        raise _Transient("HTTP 416 for the resume request; starting over") from exc
    except (TimeoutError, ConnectionError, http.client.HTTPException) as exc:
        # A dropped or stalled transfer: what arrived stays in ``part`` for the resume.
        raise _Transient(f"{type(exc).__name__}: {exc}") from exc


def _transfer_with_retries(
    url: str, part: Path, spec: RawFile, policy: RetryPolicy, progress: bool | None
) -> None:
    for attempt in range(policy.retries + 1):
        try:
            _transfer(url, part, spec, policy, progress)
            return
        except _Transient as exc:
            if attempt == policy.retries:
                raise DownloadError(
                    f"{url}: gave up after {policy.retries + 1} attempts (last error: {exc})"
                ) from exc
            policy.sleep(policy.delay(attempt))


def download(
    url: str,
    dest: Path,
    spec: RawFile,
    policy: RetryPolicy | None = None,
    progress: bool | None = None,
) -> Verified:
    """Download ``url`` to ``dest`` and verify it as the official ``spec``.

    Resumes from ``dest``'s partial file when one exists. If a resumed file
    fails verification the stale prefix may be to blame, so it is fetched once
    more from scratch. Raises DownloadError (unreachable, HTTP error, retries
    exhausted), ChecksumMismatchError or InsecureURLError. ``progress=None``
    shows the bar only on a terminal.
    """
    check_url(url)
    policy = policy or RetryPolicy()
    dest.parent.mkdir(parents=True, exist_ok=True)
    part = partial_path(dest)
    resumed = part.exists() and part.stat().st_size > 0
    while True:
        _transfer_with_retries(url, part, spec, policy, progress)
        try:
            verified = verify_official(part, spec, url)
        except ChecksumMismatchError:
            part.unlink(missing_ok=True)
            if not resumed:
                raise
            resumed = False
            continue
        os.replace(part, dest)
        return Verified(verified.name, dest, verified.sha256, verified.method, False)
