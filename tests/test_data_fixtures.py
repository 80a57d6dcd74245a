"""Tiny datasets in the exact official formats, and a local HTTP server, for the data tests.

Other ``test_data_*`` modules import these helpers; the tests here pin the
helpers themselves (exact bytes, Range semantics), since a fixture that does
not match the official format or HTTP would make the real tests meaningless.
"""

from __future__ import annotations

import gzip
import hashlib
import http.server
import io
import re
import sys
import tarfile
import threading
import time
import urllib.request
from dataclasses import dataclass, field

import numpy as np

from galu.workflow.data.registry import Dataset, RawFile

IDX_NAMES = {
    "train_images": "train-images-idx3-ubyte.gz",
    "train_labels": "train-labels-idx1-ubyte.gz",
    "test_images": "t10k-images-idx3-ubyte.gz",
    "test_labels": "t10k-labels-idx1-ubyte.gz",
}
CIFAR_NAME = "cifar-10-binary.tar.gz"
CIFAR_DIR = "cifar-10-batches-bin"


# -- official formats ----------------------------------------------------------------------


def idx_bytes(array: np.ndarray) -> bytes:
    """An uncompressed IDX file: 00 00 08 <ndim>, big-endian dims, uint8 data."""
    array = np.asarray(array, dtype=np.uint8)
    header = bytes([0, 0, 8, array.ndim]) + np.asarray(array.shape, dtype=">u4").tobytes()
    return header + array.tobytes()


def gzip_bytes(data: bytes, stored_name: str | None, mtime: int) -> bytes:
    """Gzip ``data``; the official archives store a file name and a timestamp."""
    buffer = io.BytesIO()
    with gzip.GzipFile(filename=stored_name or "", mode="wb", fileobj=buffer, mtime=mtime) as gz:
        gz.write(data)
    return buffer.getvalue()


def cifar_records(images: np.ndarray, labels: np.ndarray) -> bytes:
    """CIFAR binary records: a label byte, then the R, G and B planes (row-major)."""
    planes = np.asarray(images, dtype=np.uint8).transpose(0, 3, 1, 2).reshape(len(labels), -1)
    return np.hstack([np.asarray(labels, dtype=np.uint8)[:, None], planes]).tobytes()


def tar_gz(members: list[tuple[tarfile.TarInfo, bytes | None]], mtime: int = 0) -> bytes:
    """A gzip-compressed tar of the given members (``None`` data for non-files)."""
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w", format=tarfile.GNU_FORMAT) as tar:
        for info, data in members:
            if data is not None:
                info.size = len(data)
            tar.addfile(info, io.BytesIO(data) if data is not None else None)
    return gzip_bytes(raw.getvalue(), None, mtime)


def file_member(name: str, data: bytes) -> tuple[tarfile.TarInfo, bytes]:
    info = tarfile.TarInfo(name)
    info.mtime = 1244000000
    return info, data


def _raw_file(
    name: str, role: str, blob: bytes, content: bytes | None, url_base: str | None
) -> RawFile:
    return RawFile(
        name=name,
        role=role,  # type: ignore[arg-type]
        size=len(blob),
        md5=hashlib.md5(blob).hexdigest(),
        sha256=hashlib.sha256(blob).hexdigest(),
        urls=(f"{url_base}/{name}",) if url_base else (),
        content_size=None if content is None else len(content),
        content_md5=None if content is None else hashlib.md5(content).hexdigest(),
        content_sha256=None if content is None else hashlib.sha256(content).hexdigest(),
    )


@dataclass
class TinySet:
    """A tiny dataset: its registry entry, the official bytes of each file, the arrays."""

    dataset: Dataset
    blobs: dict[str, bytes]
    arrays: dict[str, np.ndarray]
    contents: dict[str, bytes] = field(default_factory=dict)


def tiny_idx(name: str = "tiny_idx", url_base: str | None = None) -> TinySet:
    """Five training and two test images of 2x3 pixels, labels in 0..2, as IDX gzips."""
    rng = np.random.default_rng(7)
    arrays = {
        "x_train": rng.integers(0, 256, (5, 2, 3), dtype=np.uint8),
        "y_train": np.array([0, 1, 1, 2, 0], dtype=np.int64),
        "x_test": rng.integers(0, 256, (2, 2, 3), dtype=np.uint8),
        "y_test": np.array([2, 0], dtype=np.int64),
    }
    by_role = {
        "train_images": arrays["x_train"],
        "train_labels": arrays["y_train"],
        "test_images": arrays["x_test"],
        "test_labels": arrays["y_test"],
    }
    contents = {IDX_NAMES[r]: idx_bytes(a) for r, a in by_role.items()}
    blobs = {f: gzip_bytes(c, f.removesuffix(".gz"), mtime=1000000000) for f, c in contents.items()}
    files = tuple(
        _raw_file(IDX_NAMES[r], r, blobs[IDX_NAMES[r]], contents[IDX_NAMES[r]], url_base)
        for r in by_role
    )
    dataset = Dataset(
        name=name,
        raw_format="idx",
        files=files,
        image_shape=(2, 3),
        train_class_counts=(2, 2, 1),
        test_class_counts=(1, 0, 1),
        folder_aliases=(name.replace("_", "-"),),
    )
    return TinySet(dataset, blobs, arrays, contents)


def cifar_members(arrays: dict[str, np.ndarray]) -> list[tuple[tarfile.TarInfo, bytes | None]]:
    """The official layout: a folder, five one-record training batches, one test batch."""
    folder = tarfile.TarInfo(CIFAR_DIR)
    folder.type = tarfile.DIRTYPE
    members: list[tuple[tarfile.TarInfo, bytes | None]] = [(folder, None)]
    for i in range(5):
        records = cifar_records(arrays["x_train"][i : i + 1], arrays["y_train"][i : i + 1])
        members.append(file_member(f"{CIFAR_DIR}/data_batch_{i + 1}.bin", records))
    members.append(
        file_member(
            f"{CIFAR_DIR}/test_batch.bin", cifar_records(arrays["x_test"], arrays["y_test"])
        )
    )
    members.append(file_member(f"{CIFAR_DIR}/batches.meta.txt", b"airplane\nautomobile\n"))
    return members


def tiny_cifar(name: str = "tiny_cifar", url_base: str | None = None) -> TinySet:
    """Five training images (one per batch) and two test images in CIFAR binary format."""
    rng = np.random.default_rng(11)
    arrays = {
        "x_train": rng.integers(0, 256, (5, 32, 32, 3), dtype=np.uint8),
        "y_train": np.array([0, 1, 2, 1, 0], dtype=np.int64),
        "x_test": rng.integers(0, 256, (2, 32, 32, 3), dtype=np.uint8),
        "y_test": np.array([2, 1], dtype=np.int64),
    }
    blob = tar_gz(cifar_members(arrays), mtime=1244000000)
    dataset = Dataset(
        name=name,
        raw_format="cifar_binary",
        files=(_raw_file(CIFAR_NAME, "archive", blob, None, url_base),),
        image_shape=(32, 32, 3),
        train_class_counts=(2, 2, 1),
        test_class_counts=(0, 1, 1),
    )
    return TinySet(dataset, {CIFAR_NAME: blob}, arrays)


# -- a local HTTP server with Range support and scripted faults ----------------------------


class _QuietServer(http.server.ThreadingHTTPServer):
    """Does not print a traceback when a client hangs up (the timeout test does so)."""

    def handle_error(self, request: object, client_address: object) -> None:
        if not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)


class FileServer:
    """Serve in-memory files on http://127.0.0.1:<port>/ (started by the tests).

    ``faults[path]`` is a queue of faults for successive requests of ``path``:
    ``"drop"`` (send half the body, then close), ``"ignore_range"`` (answer 200
    with the whole file), ``"stall"`` (wait ``stall_s`` before answering) or an
    HTTP status such as ``"503"``. ``requests`` logs (path, Range header).
    """

    def __init__(self, files: dict[str, bytes], stall_s: float = 0.6) -> None:
        self.files = dict(files)
        self.faults: dict[str, list[str]] = {}
        self.requests: list[tuple[str, str | None]] = []
        self.stall_s = stall_s
        self._httpd = _QuietServer(("127.0.0.1", 0), self._handler())
        # A short poll interval keeps shutdown (once per test) fast.
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self._httpd.server_address[1]}"

    def __enter__(self) -> FileServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()

    def _handler(self) -> type[http.server.BaseHTTPRequestHandler]:
        server = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, *args: object) -> None:
                pass  # keep test output clean

            def do_GET(self) -> None:
                server.requests.append((self.path, self.headers.get("Range")))
                queue = server.faults.get(self.path, [])
                fault = queue.pop(0) if queue else None
                if fault == "stall":
                    time.sleep(server.stall_s)
                if fault and fault.isdigit():
                    self.send_error(int(fault))
                    return
                data = server.files.get(self.path)
                if data is None:
                    self.send_error(404)
                    return
                self._send(
                    data, None if fault == "ignore_range" else self.headers.get("Range"), fault
                )

            def _send(self, data: bytes, range_header: str | None, fault: str | None) -> None:
                match = re.fullmatch(r"bytes=(\d+)-", range_header or "")
                start = int(match.group(1)) if match else 0
                if match and start >= len(data):
                    self.send_error(416)
                    return
                self.send_response(206 if match else 200)
                if match:
                    self.send_header("Content-Range", f"bytes {start}-{len(data) - 1}/{len(data)}")
                body = data[start:]
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body[: len(body) // 2] if fault == "drop" else body)

        return Handler


# -- the helpers' own tests -----------------------------------------------------------------


def test_idx_bytes_matches_the_published_layout() -> None:
    labels = idx_bytes(np.array([7, 2, 1]))
    assert labels == b"\x00\x00\x08\x01" + b"\x00\x00\x00\x03" + b"\x07\x02\x01"
    images = idx_bytes(np.arange(4).reshape(1, 2, 2))
    assert images[:16] == b"\x00\x00\x08\x03\x00\x00\x00\x01\x00\x00\x00\x02\x00\x00\x00\x02"
    assert images[16:] == b"\x00\x01\x02\x03"


def test_official_style_gzip_stores_name_and_time_repack_does_not() -> None:
    official = gzip_bytes(b"data", "file-idx1-ubyte", mtime=1000000000)
    repacked = gzip_bytes(b"data", None, mtime=0)
    assert official[3] & 0x08 and not repacked[3] & 0x08  # FNAME flag
    assert b"file-idx1-ubyte\x00" in official
    assert official != repacked
    assert gzip.decompress(official) == gzip.decompress(repacked) == b"data"


def test_cifar_record_is_label_then_channel_planes() -> None:
    image = np.zeros((1, 32, 32, 3), dtype=np.uint8)
    image[0, 0, 1] = (10, 20, 30)  # row 0, column 1
    record = cifar_records(image, np.array([9]))
    assert len(record) == 3073
    assert record[0] == 9
    assert (record[1 + 1], record[1 + 1024 + 1], record[1 + 2048 + 1]) == (10, 20, 30)


def test_tiny_sets_are_self_consistent() -> None:
    idx = tiny_idx()
    assert [f.size for f in idx.dataset.files] == [
        len(idx.blobs[f.name]) for f in idx.dataset.files
    ]
    assert idx.dataset.n_train == 5 and idx.dataset.n_test == 2
    cifar = tiny_cifar()
    with tarfile.open(fileobj=io.BytesIO(cifar.blobs[CIFAR_NAME])) as tar:
        names = tar.getnames()
    assert names[0] == CIFAR_DIR and f"{CIFAR_DIR}/test_batch.bin" in names
    assert len(names) == 8


def test_file_server_honours_range_and_scripted_faults() -> None:
    with FileServer({"/f": b"0123456789"}) as server:
        request = urllib.request.Request(f"{server.base}/f", headers={"Range": "bytes=4-"})
        with urllib.request.urlopen(request, timeout=5) as response:
            assert response.status == 206
            assert response.headers["Content-Range"] == "bytes 4-9/10"
            assert response.read() == b"456789"
        server.faults["/f"] = ["ignore_range"]
        with urllib.request.urlopen(request, timeout=5) as response:
            assert (response.status, response.read()) == (200, b"0123456789")
    assert server.requests == [("/f", "bytes=4-"), ("/f", "bytes=4-")]
