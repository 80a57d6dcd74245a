"""Checksum verification and the registry's invariants."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

import pytest
from test_data_fixtures import IDX_NAMES, gzip_bytes, tiny_idx

from galu.workflow.data.errors import ChecksumMismatchError
from galu.workflow.data.registry import DATASETS, dataset_names, get_dataset
from galu.workflow.data.verify import file_digests, verify_official, verify_pinned

LABELS = IDX_NAMES["train_labels"]


@pytest.fixture
def tiny_labels(tmp_path: Path):
    tiny = tiny_idx()
    spec = tiny.dataset.file(LABELS)
    return tiny, spec, tmp_path / LABELS


def test_file_digests_of_known_bytes(tmp_path: Path) -> None:
    path = tmp_path / "abc"
    path.write_bytes(b"abc")
    got = file_digests(path)
    assert got.size == 3
    assert got.md5 == "900150983cd24fb0d6963f7d28e17f72"
    assert got.sha256 == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"


def test_the_official_bytes_are_accepted_as_the_archive(tiny_labels) -> None:
    tiny, spec, path = tiny_labels
    path.write_bytes(tiny.blobs[LABELS])
    verified = verify_official(path, spec, "mirror-x")
    assert (verified.method, verified.substitute, verified.sha256) == (
        "archive",
        False,
        spec.sha256,
    )


def test_a_corrupt_byte_is_rejected_naming_file_source_and_checksums(tiny_labels) -> None:
    tiny, spec, path = tiny_labels
    blob = bytearray(tiny.blobs[LABELS])
    blob[-9] ^= 0x01  # last byte of the deflate stream (the 8-byte trailer follows)
    path.write_bytes(bytes(blob))
    with pytest.raises(ChecksumMismatchError) as err:
        verify_official(path, spec, "https://mirror.example/x")
    message = str(err.value)
    assert message.startswith(f"{LABELS} from https://mirror.example/x failed verification")
    assert f"md5 {spec.md5}" in message
    assert f"md5 {file_digests(path).md5}" in message
    assert err.value.file == LABELS and err.value.source == "https://mirror.example/x"


def test_a_truncated_file_is_rejected(tiny_labels) -> None:
    tiny, spec, path = tiny_labels
    path.write_bytes(tiny.blobs[LABELS][:-5])
    with pytest.raises(ChecksumMismatchError, match="not a complete gzip stream"):
        verify_official(path, spec, "folder")


def test_a_rebuilt_gzip_header_with_intact_content_is_accepted(tiny_labels) -> None:
    tiny, spec, path = tiny_labels
    repacked = gzip_bytes(tiny.contents[LABELS], None, mtime=0)  # Debian-style header
    assert repacked != tiny.blobs[LABELS]
    path.write_bytes(repacked)
    verified = verify_official(path, spec, "debian")
    assert verified.method == "gzip_content"
    assert verified.sha256 == file_digests(path).sha256 != spec.sha256


def test_changed_content_in_a_rebuilt_gzip_is_rejected(tiny_labels) -> None:
    tiny, spec, path = tiny_labels
    content = bytearray(tiny.contents[LABELS])
    content[-1] = (content[-1] + 1) % 3
    path.write_bytes(gzip_bytes(bytes(content), None, mtime=0))
    with pytest.raises(ChecksumMismatchError, match=f"decompressed content of size {len(content)}"):
        verify_official(path, spec, "debian")


def test_without_a_recorded_sha256_the_published_md5_and_size_decide(tiny_labels) -> None:
    tiny, spec, path = tiny_labels
    spec = dataclasses.replace(spec, sha256=None, content_md5=None)
    path.write_bytes(tiny.blobs[LABELS])
    assert verify_official(path, spec, "x").method == "archive"
    path.write_bytes(tiny.blobs[LABELS] + b"\x00")
    with pytest.raises(ChecksumMismatchError, match="sha256 not recorded"):
        verify_official(path, spec, "x")


def test_a_pinned_substitute_is_accepted_only_with_its_exact_sha256(tmp_path: Path) -> None:
    path = tmp_path / "copy"
    path.write_bytes(b"abc")
    sha = "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
    verified = verify_pinned(path, "f.tar.gz", sha.upper(), "site copy")
    assert (verified.method, verified.substitute) == ("substitute", True)
    with pytest.raises(ChecksumMismatchError, match="pinned substitute"):
        verify_pinned(path, "f.tar.gz", "0" * 64, "site copy")


# -- registry -------------------------------------------------------------------------------


def test_registry_names_and_lookup() -> None:
    assert dataset_names() == ("mnist", "fashion_mnist", "cifar10")
    assert get_dataset("mnist") is DATASETS["mnist"]
    with pytest.raises(ValueError, match="unknown dataset 'cifar100'; choose one of: mnist"):
        get_dataset("cifar100")


@pytest.mark.parametrize("name", ["mnist", "fashion_mnist"])
def test_idx_registry_entries_match_the_published_shapes(name: str) -> None:
    ds = get_dataset(name)
    assert (ds.n_train, ds.n_test) == (60000, 10000)
    header = {"images": 16, "labels": 8}
    expected = {
        "train_images": header["images"] + 60000 * 784,
        "train_labels": header["labels"] + 60000,
        "test_images": header["images"] + 10000 * 784,
        "test_labels": header["labels"] + 10000,
    }
    assert {f.role: f.content_size for f in ds.files} == expected


def test_cifar10_registry_entry_is_the_binary_release() -> None:
    ds = get_dataset("cifar10")
    assert (ds.n_train, ds.n_test, ds.image_shape) == (50000, 10000, (32, 32, 3))
    (archive,) = ds.files
    assert archive.name == "cifar-10-binary.tar.gz"
    assert archive.md5 == "c32a1d4ab5d03f1284b67883e8d87530"


def test_registry_checksums_are_well_formed_and_urls_https() -> None:
    for ds in DATASETS.values():
        assert len({f.name for f in ds.files}) == len(ds.files)
        for raw in ds.files:
            assert re.fullmatch(r"[0-9a-f]{32}", raw.md5)
            assert raw.sha256 is None or re.fullmatch(r"[0-9a-f]{64}", raw.sha256)
            assert raw.urls and all(u.startswith("https://") for u in raw.urls)
            assert all(u.endswith("/" + raw.name) for u in raw.urls)
    # MNIST's official site is unreliable: more than one mirror per file.
    assert all(len(f.urls) >= 2 for f in get_dataset("mnist").files)
