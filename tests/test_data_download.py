"""Downloads from a local HTTP server: verify, resume with Range, retries, faults."""

from __future__ import annotations

from pathlib import Path

import pytest
from test_data_fixtures import IDX_NAMES, FileServer, tiny_idx

from galu.workflow.data.download import RetryPolicy, check_url, download, partial_path
from galu.workflow.data.errors import ChecksumMismatchError, DownloadError, InsecureURLError

NAME = IDX_NAMES["train_images"]
PATH = f"/{NAME}"


class Sleeps(list):
    """Records back-off delays instead of sleeping."""

    def __call__(self, seconds: float) -> None:
        self.append(seconds)


@pytest.fixture
def tiny():
    return tiny_idx()


@pytest.fixture
def server(tiny):
    with FileServer({f"/{n}": b for n, b in tiny.blobs.items()}) as srv:
        yield srv


def _policy(sleeps: Sleeps, **kwargs) -> RetryPolicy:
    return RetryPolicy(**{"timeout": 5.0, "retries": 3, "backoff": 0.5, "sleep": sleeps, **kwargs})


def test_happy_path_leaves_only_the_verified_file(tmp_path, tiny, server) -> None:
    dest = tmp_path / NAME
    verified = download(f"{server.base}{PATH}", dest, tiny.dataset.file(NAME), _policy(Sleeps()))
    assert dest.read_bytes() == tiny.blobs[NAME]
    assert (verified.path, verified.method) == (dest, "archive")
    assert not partial_path(dest).exists()
    assert server.requests == [(PATH, None)]


def test_a_dropped_connection_is_resumed_with_a_range_request(tmp_path, tiny, server) -> None:
    tiny_blob = tiny.blobs[NAME]
    server.faults[PATH] = ["drop"]
    sleeps = Sleeps()
    dest = tmp_path / NAME
    download(f"{server.base}{PATH}", dest, tiny.dataset.file(NAME), _policy(sleeps))
    assert dest.read_bytes() == tiny_blob
    assert server.requests == [(PATH, None), (PATH, f"bytes={len(tiny_blob) // 2}-")]
    assert sleeps == [0.5]


def test_a_partial_file_from_an_earlier_run_is_resumed(tmp_path, tiny, server) -> None:
    dest = tmp_path / NAME
    partial_path(dest).write_bytes(tiny.blobs[NAME][:40])
    download(f"{server.base}{PATH}", dest, tiny.dataset.file(NAME), _policy(Sleeps()))
    assert dest.read_bytes() == tiny.blobs[NAME]
    assert server.requests == [(PATH, "bytes=40-")]


def test_a_server_ignoring_range_restarts_from_zero(tmp_path, tiny, server) -> None:
    dest = tmp_path / NAME
    partial_path(dest).write_bytes(tiny.blobs[NAME][:40])
    server.faults[PATH] = ["ignore_range"]
    download(f"{server.base}{PATH}", dest, tiny.dataset.file(NAME), _policy(Sleeps()))
    assert dest.read_bytes() == tiny.blobs[NAME]


def test_a_stale_partial_file_is_discarded_and_fetched_afresh(tmp_path, tiny, server) -> None:
    dest = tmp_path / NAME
    partial_path(dest).write_bytes(b"\xff" * 40)  # not a prefix of the real file
    download(f"{server.base}{PATH}", dest, tiny.dataset.file(NAME), _policy(Sleeps()))
    assert dest.read_bytes() == tiny.blobs[NAME]
    assert server.requests == [(PATH, "bytes=40-"), (PATH, None)]


def test_corrupt_bytes_never_reach_the_final_name(tmp_path, tiny, server) -> None:
    blob = bytearray(tiny.blobs[NAME])
    blob[-9] ^= 0x01
    server.files[PATH] = bytes(blob)
    dest = tmp_path / NAME
    url = f"{server.base}{PATH}"
    with pytest.raises(ChecksumMismatchError, match=f"{NAME} from {url} failed verification"):
        download(url, dest, tiny.dataset.file(NAME), _policy(Sleeps()))
    assert not dest.exists() and not partial_path(dest).exists()


def test_a_truncated_response_body_is_rejected(tmp_path, tiny, server) -> None:
    # The server sends fewer bytes than the registry's size, and says so in Content-Length.
    server.files[PATH] = tiny.blobs[NAME][:-20]
    dest = tmp_path / NAME
    with pytest.raises(ChecksumMismatchError, match="not a complete gzip stream"):
        download(f"{server.base}{PATH}", dest, tiny.dataset.file(NAME), _policy(Sleeps()))
    assert not dest.exists() and not partial_path(dest).exists()


def test_server_errors_are_retried_with_doubling_backoff(tmp_path, tiny, server) -> None:
    server.faults[PATH] = ["503", "503"]
    sleeps = Sleeps()
    download(f"{server.base}{PATH}", tmp_path / NAME, tiny.dataset.file(NAME), _policy(sleeps))
    assert sleeps == [0.5, 1.0]
    assert len(server.requests) == 3


def test_retries_run_out_with_a_clear_error(tmp_path, tiny, server) -> None:
    server.faults[PATH] = ["503"] * 3
    sleeps = Sleeps()
    policy = _policy(sleeps, retries=2)
    with pytest.raises(DownloadError, match=r"gave up after 3 attempts \(last error: HTTP 503\)"):
        download(f"{server.base}{PATH}", tmp_path / NAME, tiny.dataset.file(NAME), policy)
    assert sleeps == [0.5, 1.0]


def test_a_stalled_server_times_out_and_is_retried(tmp_path, tiny, server) -> None:
    server.faults[PATH] = ["stall"]
    sleeps = Sleeps()
    policy = _policy(sleeps, timeout=0.2)
    download(f"{server.base}{PATH}", tmp_path / NAME, tiny.dataset.file(NAME), policy)
    assert sleeps == [0.5] and len(server.requests) == 2


def test_not_found_is_not_retried(tmp_path, tiny, server) -> None:
    sleeps = Sleeps()
    with pytest.raises(DownloadError, match="HTTP 404") as err:
        download(f"{server.base}/nope", tmp_path / NAME, tiny.dataset.file(NAME), _policy(sleeps))
    assert err.value.not_found and sleeps == [] and len(server.requests) == 1


def test_an_unreachable_host_fails_at_once(tmp_path, tiny) -> None:
    sleeps = Sleeps()
    # Port 1 on loopback: connection refused, which is what an offline node sees.
    with pytest.raises(DownloadError, match="unreachable") as err:
        download("http://127.0.0.1:1/f", tmp_path / NAME, tiny.dataset.file(NAME), _policy(sleeps))
    assert err.value.unreachable and sleeps == []


@pytest.mark.parametrize(
    ("url", "allowed"),
    [
        ("https://ossci-datasets.s3.amazonaws.com/mnist/x.gz", True),
        ("http://127.0.0.1:8000/x.gz", True),
        ("http://localhost/x.gz", True),
        ("http://yann.lecun.com/exdb/mnist/x.gz", False),
        ("ftp://example.org/x.gz", False),
    ],
)
def test_only_https_is_allowed_for_remote_hosts(url: str, allowed: bool, tmp_path: Path) -> None:
    if allowed:
        check_url(url)
    else:
        with pytest.raises(InsecureURLError, match="only https URLs are allowed"):
            check_url(url)
