"""Parse the raw archives into arrays, checking their structure on the way.

IDX (MNIST, Fashion-MNIST): a magic number ``00 00 08 <ndim>`` (unsigned
bytes), ``ndim`` big-endian uint32 dimensions, then the data. CIFAR-10 binary:
records of one label byte and 3072 pixel bytes (1024 red, 1024 green, 1024
blue, each row-major 32x32), in ``cifar-10-batches-bin/*.bin`` inside a
tar.gz. Tar members are read into memory, never written to disk, and the
archive is refused if any member is a link, a device or a path that could
escape its folder.
"""

from __future__ import annotations

import gzip
import struct
import tarfile
from collections.abc import Mapping, Sequence
from pathlib import Path, PurePosixPath

import numpy as np

from galu.workflow.data.errors import FormatError, UnsafeArchiveError
from galu.workflow.data.registry import Dataset

# In the closure of the jobs that import it (galu.workflow.closure): it writes their bytes.
RESULT_CODE = "the conversion of raw archives (IDX, CIFAR binary) into arrays"

IDX_LABELS_MAGIC = 0x00000801
IDX_IMAGES_MAGIC = 0x00000803
CIFAR_FOLDER = "cifar-10-batches-bin"
CIFAR_TRAIN_MEMBERS = tuple(f"{CIFAR_FOLDER}/data_batch_{i}.bin" for i in range(1, 6))
CIFAR_TEST_MEMBERS = (f"{CIFAR_FOLDER}/test_batch.bin",)
CIFAR_RECORD_BYTES = 1 + 32 * 32 * 3


def parse_idx(data: bytes, expected_magic: int, source: str) -> np.ndarray:
    """An IDX file's uint8 array, after checking magic number and header dimensions."""
    if len(data) < 4:
        raise FormatError(f"{source}: {len(data)} bytes is too short for an IDX header")
    (magic,) = struct.unpack(">I", data[:4])
    if magic != expected_magic:
        raise FormatError(
            f"{source}: IDX magic number 0x{magic:08x}, expected 0x{expected_magic:08x}; "
            "the file is not the expected images/labels file"
        )
    ndim = magic & 0xFF
    header = 4 + 4 * ndim
    if len(data) < header:
        raise FormatError(f"{source}: truncated IDX header ({len(data)} of {header} bytes)")
    dims = struct.unpack(f">{ndim}I", data[4:header])
    body = int(np.prod(dims, dtype=np.int64))
    if len(data) - header != body:
        raise FormatError(
            f"{source}: header dimensions {dims} promise {body} data bytes, "
            f"file holds {len(data) - header}"
        )
    return np.frombuffer(data, dtype=np.uint8, offset=header).reshape(dims)


def read_idx_gz(path: Path, expected_magic: int) -> np.ndarray:
    """Parse a gzip-compressed IDX file."""
    with gzip.open(path, "rb") as handle:
        return parse_idx(handle.read(), expected_magic, str(path))


def check_member(member: tarfile.TarInfo, archive: str) -> None:
    """Refuse a tar member that is not a plain file or folder safely inside the archive."""
    name = member.name
    parts = PurePosixPath(name.replace("\\", "/")).parts
    if name.startswith(("/", "\\")) or (len(name) > 1 and name[1] == ":"):
        raise UnsafeArchiveError(f"{archive}: member {name!r} has an absolute path; refusing")
    if ".." in parts:
        raise UnsafeArchiveError(f"{archive}: member {name!r} climbs out with '..'; refusing")
    if member.issym() or member.islnk():
        raise UnsafeArchiveError(
            f"{archive}: member {name!r} is a link to {member.linkname!r}; refusing"
        )
    if not (member.isfile() or member.isdir()):
        raise UnsafeArchiveError(
            f"{archive}: member {name!r} is a device, FIFO or other special file; refusing"
        )


def read_tar_members(path: Path, sizes: Mapping[str, int]) -> dict[str, bytes]:
    """The bytes of the members named in ``sizes``, each checked against its size.

    Every member of the archive is checked with ``check_member`` first, so a
    malicious archive is refused as a whole. A duplicated or missing member,
    or one of the wrong size, raises FormatError before its bytes are read.
    """
    archive = str(path)
    with tarfile.open(path, "r:*") as tar:
        members = tar.getmembers()
        for member in members:
            check_member(member, archive)
        wanted = [m for m in members if m.name in sizes]
        names = [m.name for m in wanted]
        duplicated = sorted({n for n in names if names.count(n) > 1})
        missing = sorted(set(sizes) - set(names))
        if duplicated or missing:
            raise FormatError(f"{archive}: missing members {missing}, duplicated {duplicated}")
        contents = {}
        for member in wanted:
            if member.size != sizes[member.name]:
                raise FormatError(
                    f"{archive}: {member.name} has {member.size} bytes, "
                    f"expected {sizes[member.name]}"
                )
            handle = tar.extractfile(member)
            if handle is None:
                raise FormatError(f"{archive}: {member.name} is not a regular file")
            contents[member.name] = handle.read()
    return contents


def parse_cifar_records(data: bytes, source: str) -> tuple[np.ndarray, np.ndarray]:
    """Images (N x 32 x 32 x 3, uint8) and labels (int64) from CIFAR binary records."""
    if len(data) % CIFAR_RECORD_BYTES:
        raise FormatError(
            f"{source}: {len(data)} bytes is not a whole number of "
            f"{CIFAR_RECORD_BYTES}-byte records"
        )
    records = np.frombuffer(data, dtype=np.uint8).reshape(-1, CIFAR_RECORD_BYTES)
    labels = records[:, 0].astype(np.int64)
    # Channel-major planes in the file; height x width x channel in memory, like other images.
    images = records[:, 1:].reshape(-1, 3, 32, 32).transpose(0, 2, 3, 1)
    return np.ascontiguousarray(images), labels


def check_counts(labels: np.ndarray, expected: Sequence[int], where: str) -> None:
    """Labels must lie in ``0..len(expected)-1`` with exactly the published per-class counts."""
    n_classes = len(expected)
    if labels.size and (labels.min() < 0 or labels.max() >= n_classes):
        raise FormatError(f"{where}: labels outside 0..{n_classes - 1}")
    counts = np.bincount(labels, minlength=n_classes).tolist()
    if counts != list(expected):
        raise FormatError(
            f"{where}: {labels.size} examples with per-class counts {counts}; "
            f"published: {sum(expected)} examples, {list(expected)}"
        )


def _check_images(images: np.ndarray, ds: Dataset, where: str) -> None:
    if images.shape[1:] != ds.image_shape:
        raise FormatError(f"{where}: images of shape {images.shape[1:]}, expected {ds.image_shape}")


def _convert_idx(paths: Mapping[str, Path]) -> dict[str, np.ndarray]:
    arrays = {}
    for split in ("train", "test"):
        images = read_idx_gz(paths[f"{split}_images"], IDX_IMAGES_MAGIC)
        labels = read_idx_gz(paths[f"{split}_labels"], IDX_LABELS_MAGIC).astype(np.int64)
        arrays[f"x_{split}"], arrays[f"y_{split}"] = images, labels
    return arrays


def _cifar_member_sizes(ds: Dataset) -> dict[str, int]:
    """Bytes each batch must hold: the training set splits evenly over five batches."""
    if ds.n_train % len(CIFAR_TRAIN_MEMBERS):
        raise ValueError(f"{ds.name}: {ds.n_train} training images do not split into 5 batches")
    per_batch = ds.n_train // len(CIFAR_TRAIN_MEMBERS)
    sizes = dict.fromkeys(CIFAR_TRAIN_MEMBERS, per_batch * CIFAR_RECORD_BYTES)
    sizes.update(dict.fromkeys(CIFAR_TEST_MEMBERS, ds.n_test * CIFAR_RECORD_BYTES))
    return sizes


def _convert_cifar(ds: Dataset, paths: Mapping[str, Path]) -> dict[str, np.ndarray]:
    contents = read_tar_members(paths["archive"], _cifar_member_sizes(ds))
    arrays = {}
    for split, names in (("train", CIFAR_TRAIN_MEMBERS), ("test", CIFAR_TEST_MEMBERS)):
        parts = [parse_cifar_records(contents.pop(n), n) for n in names]
        arrays[f"x_{split}"] = np.concatenate([p[0] for p in parts])
        arrays[f"y_{split}"] = np.concatenate([p[1] for p in parts])
    return arrays


def convert(ds: Dataset, paths: Mapping[str, Path]) -> dict[str, np.ndarray]:
    """``x_train, y_train, x_test, y_test`` from the raw files, by role (see registry).

    Checks image shapes, that images and labels pair up, and the published
    per-class counts of both splits.
    """
    if ds.raw_format == "idx":
        arrays = _convert_idx(paths)
    else:
        arrays = _convert_cifar(ds, paths)
    for split, counts in (("train", ds.train_class_counts), ("test", ds.test_class_counts)):
        images, labels = arrays[f"x_{split}"], arrays[f"y_{split}"]
        where = f"{ds.name} {split} split"
        _check_images(images, ds, where)
        if len(images) != len(labels):
            raise FormatError(f"{where}: {len(images)} images but {len(labels)} labels")
        check_counts(labels, counts, where)
    return arrays
