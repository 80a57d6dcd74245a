"""Parsing IDX and CIFAR binary files, safe tar reading, count checks, npz output."""

from __future__ import annotations

import hashlib
import json
import tarfile
from pathlib import Path

import numpy as np
import pytest
from test_data_fixtures import (
    CIFAR_DIR,
    CIFAR_NAME,
    IDX_NAMES,
    cifar_members,
    file_member,
    gzip_bytes,
    idx_bytes,
    tar_gz,
    tiny_cifar,
    tiny_idx,
)

from galu.workflow.data.convert import (
    IDX_IMAGES_MAGIC,
    IDX_LABELS_MAGIC,
    check_counts,
    convert,
    parse_cifar_records,
    parse_idx,
    read_tar_members,
)
from galu.workflow.data.errors import DataError, FormatError, UnsafeArchiveError
from galu.workflow.data.prepare import array_record, load_processed, prepare, write_npz
from galu.workflow.output import Run


def _write(folder: Path, blobs: dict[str, bytes]) -> dict[str, Path]:
    folder.mkdir(parents=True, exist_ok=True)
    paths = {}
    for name, blob in blobs.items():
        (folder / name).write_bytes(blob)
        paths[name] = folder / name
    return paths


def test_parse_idx_reads_header_dimensions() -> None:
    data = (
        b"\x00\x00\x08\x03"
        + b"\x00\x00\x00\x02\x00\x00\x00\x01\x00\x00\x00\x02"
        + b"\x05\x06\x07\x08"
    )
    array = parse_idx(data, IDX_IMAGES_MAGIC, "x")
    assert array.dtype == np.uint8
    assert array.tolist() == [[[5, 6]], [[7, 8]]]


def test_parse_idx_rejects_the_wrong_magic_number() -> None:
    with pytest.raises(FormatError, match="magic number 0x00000801, expected 0x00000803"):
        parse_idx(idx_bytes(np.array([1, 2])), IDX_IMAGES_MAGIC, "labels-as-images")


def test_parse_idx_rejects_a_body_that_disagrees_with_the_header() -> None:
    data = idx_bytes(np.zeros((2, 3), dtype=np.uint8))
    with pytest.raises(FormatError, match=r"promise 6 data bytes, file holds 5"):
        parse_idx(data[:-1], 0x00000802, "short")
    with pytest.raises(FormatError, match="too short"):
        parse_idx(b"\x00\x00", IDX_LABELS_MAGIC, "tiny")


def test_cifar_records_become_height_width_channel_images() -> None:
    record = bytes([3]) + bytes(range(256)) * 12  # 3072 pixel bytes
    images, labels = parse_cifar_records(record * 2, "batch")
    assert images.shape == (2, 32, 32, 3) and images.dtype == np.uint8
    assert labels.tolist() == [3, 3] and labels.dtype == np.int64
    # Pixel (row 1, column 2) is byte 34 of each 1024-byte plane.
    assert images[0, 1, 2].tolist() == [34, 34, 34]
    assert images[1, 0, 0].tolist() == [0, 0, 0]


def test_cifar_records_must_be_whole() -> None:
    with pytest.raises(FormatError, match="not a whole number of 3073-byte records"):
        parse_cifar_records(b"\x00" * 3074, "batch")


def test_check_counts_compares_with_the_published_counts() -> None:
    check_counts(np.array([0, 1, 1, 2]), (1, 2, 1), "ok")
    with pytest.raises(FormatError, match=r"per-class counts \[2, 1, 1\]; published: 4"):
        check_counts(np.array([0, 0, 1, 2]), (1, 2, 1), "split")
    with pytest.raises(FormatError, match=r"labels outside 0\.\.2"):
        check_counts(np.array([0, 3]), (1, 1, 0), "split")


def test_convert_tiny_idx_gives_the_original_arrays(tmp_path: Path) -> None:
    tiny = tiny_idx()
    paths = _write(tmp_path, tiny.blobs)
    by_role = {f.role: paths[f.name] for f in tiny.dataset.files}
    arrays = convert(tiny.dataset, by_role)
    for name, expected in tiny.arrays.items():
        assert arrays[name].dtype == expected.dtype
        np.testing.assert_array_equal(arrays[name], expected)


def test_convert_checks_the_counts(tmp_path: Path) -> None:
    tiny = tiny_idx()
    blobs = dict(tiny.blobs)
    labels = np.array([0, 1, 1, 2, 2])  # one 0 became a 2
    blobs[IDX_NAMES["train_labels"]] = gzip_bytes(idx_bytes(labels), None, 0)
    paths = _write(tmp_path, blobs)
    with pytest.raises(FormatError, match=r"tiny_idx train split: 5 examples .* \[1, 2, 2\]"):
        convert(tiny.dataset, {f.role: paths[f.name] for f in tiny.dataset.files})


def test_convert_tiny_cifar_gives_the_original_arrays(tmp_path: Path) -> None:
    tiny = tiny_cifar()
    paths = _write(tmp_path, tiny.blobs)
    arrays = convert(tiny.dataset, {"archive": paths[CIFAR_NAME]})
    for name, expected in tiny.arrays.items():
        assert arrays[name].dtype == expected.dtype
        np.testing.assert_array_equal(arrays[name], expected)


def _malicious(kind: str) -> tarfile.TarInfo:
    names = {"absolute": "/tmp/evil", "dotdot": f"{CIFAR_DIR}/../../evil"}
    info = tarfile.TarInfo(names.get(kind, f"{CIFAR_DIR}/evil"))
    if kind == "symlink":
        info.type, info.linkname = tarfile.SYMTYPE, "/etc/passwd"
    elif kind == "hardlink":
        info.type, info.linkname = tarfile.LNKTYPE, f"{CIFAR_DIR}/test_batch.bin"
    elif kind == "chardev":
        info.type, info.devmajor, info.devminor = tarfile.CHRTYPE, 1, 3
    elif kind == "fifo":
        info.type = tarfile.FIFOTYPE
    return info


@pytest.mark.parametrize(
    ("kind", "message"),
    [
        ("absolute", "absolute path"),
        ("dotdot", r"climbs out with '\.\.'"),
        ("symlink", "is a link to '/etc/passwd'"),
        ("hardlink", "is a link to"),
        ("chardev", "device, FIFO"),
        ("fifo", "device, FIFO"),
    ],
)
def test_malicious_tar_members_are_refused(tmp_path: Path, kind: str, message: str) -> None:
    tiny = tiny_cifar()
    regular = kind in ("absolute", "dotdot")
    members = cifar_members(tiny.arrays) + [(_malicious(kind), b"x" if regular else None)]
    archive = tmp_path / CIFAR_NAME
    archive.write_bytes(tar_gz(members))
    before = sorted(p.name for p in tmp_path.iterdir())
    with pytest.raises(UnsafeArchiveError, match=message):
        convert(tiny.dataset, {"archive": archive})
    assert sorted(p.name for p in tmp_path.iterdir()) == before


def test_tar_members_missing_duplicated_or_mis_sized_are_refused(tmp_path: Path) -> None:
    batch = f"{CIFAR_DIR}/test_batch.bin"
    archive = tmp_path / "a.tar.gz"
    archive.write_bytes(tar_gz([file_member(batch, b"abc"), file_member(batch, b"abd")]))
    with pytest.raises(FormatError, match=r"duplicated \['cifar-10-batches-bin/test_batch.bin'\]"):
        read_tar_members(archive, {batch: 3})
    archive.write_bytes(tar_gz([file_member(batch, b"abc")]))
    with pytest.raises(FormatError, match="has 3 bytes, expected 4"):
        read_tar_members(archive, {batch: 4})
    with pytest.raises(FormatError, match=r"missing members \['other'\]"):
        read_tar_members(archive, {batch: 3, "other": 1})
    assert read_tar_members(archive, {batch: 3}) == {batch: b"abc"}


def test_write_npz_is_reproducible_and_loads_without_pickles(tmp_path: Path) -> None:
    arrays = {
        "x_train": np.arange(6, dtype=np.uint8).reshape(2, 3),
        "y_train": np.array([1, 0], dtype=np.int64),
        "x_test": np.zeros((1, 3), dtype=np.uint8),
        "y_test": np.array([1], dtype=np.int64),
    }
    first, second = tmp_path / "a.npz", tmp_path / "b.npz"
    write_npz(first, arrays)
    write_npz(second, arrays)
    assert first.read_bytes() == second.read_bytes()
    with pytest.raises(DataError, match="has no provenance sidecar"):
        load_processed(first)  # nothing vouches for these bytes yet
    Run("write").stamp(first)
    loaded = load_processed(first)
    for name, expected in arrays.items():
        np.testing.assert_array_equal(loaded[name], expected)
        assert loaded[name].dtype == expected.dtype
    record = array_record(arrays["y_train"])
    assert record == {
        "sha256": hashlib.sha256(np.array([1, 0], dtype=np.int64).tobytes()).hexdigest(),
        "shape": [2],
        "dtype": "int64",
    }


def test_prepare_writes_arrays_and_a_sidecar_with_their_hashes(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)  # as `galu data prepare` runs: paths inside the checkout
    tiny = tiny_idx()
    _write(tmp_path / "raw" / tiny.dataset.name, tiny.blobs)
    report = prepare(tiny.dataset, Path("raw"), Path("processed"))
    assert report.path == Path("processed/tiny_idx.npz")
    assert report.substitute is False
    sidecar = json.loads(report.sidecar.read_text())
    assert report.sidecar.name == "tiny_idx.npz.meta.json"
    assert sidecar["data_substitute"] is False
    for name, array in tiny.arrays.items():
        assert sidecar["arrays"][name] == array_record(array)
    assert sidecar["output"]["sha256"] == hashlib.sha256(report.path.read_bytes()).hexdigest()
    assert {f["accepted_by"] for f in sidecar["raw_files"]} == {"archive"}
    np.testing.assert_array_equal(load_processed(report.path)["x_test"], tiny.arrays["x_test"])


def test_prepare_refuses_a_missing_or_altered_raw_file(tmp_path: Path) -> None:
    tiny = tiny_idx()
    paths = _write(tmp_path / "raw" / tiny.dataset.name, tiny.blobs)
    paths[IDX_NAMES["test_labels"]].unlink()
    with pytest.raises(DataError, match="t10k-labels-idx1-ubyte.gz is missing; run the download"):
        prepare(tiny.dataset, tmp_path / "raw", tmp_path / "processed")
    blob = bytearray(tiny.blobs[IDX_NAMES["test_labels"]])
    blob[-9] ^= 0xFF  # inside the deflate stream / CRC
    paths[IDX_NAMES["test_labels"]].write_bytes(bytes(blob))
    with pytest.raises(DataError, match="t10k-labels-idx1-ubyte.gz from .* failed verification"):
        prepare(tiny.dataset, tmp_path / "raw", tmp_path / "processed")
    assert not (tmp_path / "processed" / "tiny_idx.npz").exists()
