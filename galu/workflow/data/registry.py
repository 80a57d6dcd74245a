"""What the official datasets are: files, sizes, checksums, URLs and counts.

Checksums come from two places. The MD5s are the published ones (MNIST's as
listed by torchvision, since the original site lists none; Fashion-MNIST's in
its README; CIFAR-10's on its web page). The SHA-256s and the checksums of the
decompressed contents were computed here from byte-exact copies: the official
MNIST archives and the Debian ``dataset-fashion-mnist`` package, whose gzip
contents are the published data (its own gzip headers differ, see
``verify.py``). Where no copy of an official archive was available to hash, the
SHA-256 is ``None`` and verification relies on the published MD5 and the size.

URLs are https only (``download.py`` refuses plain http for remote hosts), so
MNIST's original home and Fashion-MNIST's S3 website endpoint, both plain http,
are not listed; the mirrors the major libraries use are.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

# In the closure of the jobs that import it (galu.workflow.closure): it writes their bytes.
RESULT_CODE = "each dataset's files and their layout, which the conversion reads"

RawFormat = Literal["idx", "cifar_binary"]
# What a raw file holds, so conversion does not have to guess from file names.
Role = Literal["train_images", "train_labels", "test_images", "test_labels", "archive"]


@dataclass(frozen=True)
class RawFile:
    """One downloadable file of a dataset, as its maintainers publish it."""

    name: str
    role: Role
    size: int
    md5: str
    sha256: str | None
    urls: tuple[str, ...]
    # Single-file gzip archives only: the decompressed bytes, which survive a re-gzip.
    content_size: int | None = None
    content_md5: str | None = None
    content_sha256: str | None = None

    @property
    def has_content_checksum(self) -> bool:
        """Whether a re-packed gzip can be accepted by its decompressed content."""
        return self.content_md5 is not None


@dataclass(frozen=True)
class Dataset:
    """A dataset: its raw files, their format, and the counts conversion must find."""

    name: str
    raw_format: RawFormat
    files: tuple[RawFile, ...]
    image_shape: tuple[int, ...]
    train_class_counts: tuple[int, ...]
    test_class_counts: tuple[int, ...]
    # Sub-folder names a mirror may use for this dataset (torchvision, Debian, ...).
    folder_aliases: tuple[str, ...] = ()

    @property
    def n_train(self) -> int:
        return sum(self.train_class_counts)

    @property
    def n_test(self) -> int:
        return sum(self.test_class_counts)

    def file(self, name: str) -> RawFile:
        """The raw file called ``name``; KeyError naming the known files otherwise."""
        for raw in self.files:
            if raw.name == name:
                return raw
        known = ", ".join(f.name for f in self.files)
        raise KeyError(f"dataset {self.name!r} has no file {name!r}; its files are: {known}")


def _urls(name: str, *bases: str) -> tuple[str, ...]:
    return tuple(f"{base.rstrip('/')}/{name}" for base in bases)


# Mirrors used by torchvision (ossci-datasets) and TensorFlow Datasets (cvdf-datasets).
_MNIST_BASES = (
    "https://ossci-datasets.s3.amazonaws.com/mnist",
    "https://storage.googleapis.com/cvdf-datasets/mnist",
)
# Keras' copy and the files committed to the project's GitHub repository.
_FASHION_BASES = (
    "https://storage.googleapis.com/tensorflow/tf-keras-datasets",
    "https://github.com/zalandoresearch/fashion-mnist/raw/master/data/fashion",
)

MNIST = Dataset(
    name="mnist",
    raw_format="idx",
    image_shape=(28, 28),
    # Digit counts 0..9 of the official training and test sets.
    train_class_counts=(5923, 6742, 5958, 6131, 5842, 5421, 5918, 6265, 5851, 5949),
    test_class_counts=(980, 1135, 1032, 1010, 982, 892, 958, 1028, 974, 1009),
    folder_aliases=("mnist", "MNIST", "MNIST/raw"),
    files=(
        RawFile(
            name="train-images-idx3-ubyte.gz",
            role="train_images",
            size=9912422,
            md5="f68b3c2dcbeaaa9fbdd348bbdeb94873",
            sha256="440fcabf73cc546fa21475e81ea370265605f56be210a4024d2ca8f203523609",
            urls=_urls("train-images-idx3-ubyte.gz", *_MNIST_BASES),
            content_size=47040016,
            content_md5="6bbc9ace898e44ae57da46a324031adb",
            content_sha256="ba891046e6505d7aadcbbe25680a0738ad16aec93bde7f9b65e87a2fc25776db",
        ),
        RawFile(
            name="train-labels-idx1-ubyte.gz",
            role="train_labels",
            size=28881,
            md5="d53e105ee54ea40749a09fcbcd1e9432",
            sha256="3552534a0a558bbed6aed32b30c495cca23d567ec52cac8be1a0730e8010255c",
            urls=_urls("train-labels-idx1-ubyte.gz", *_MNIST_BASES),
            content_size=60008,
            content_md5="a25bea736e30d166cdddb491f175f624",
            content_sha256="65a50cbbf4e906d70832878ad85ccda5333a97f0f4c3dd2ef09a8a9eef7101c5",
        ),
        RawFile(
            name="t10k-images-idx3-ubyte.gz",
            role="test_images",
            size=1648877,
            md5="9fb629c4189551a2d022fa330f9573f3",
            sha256="8d422c7b0a1c1c79245a5bcf07fe86e33eeafee792b84584aec276f5a2dbc4e6",
            urls=_urls("t10k-images-idx3-ubyte.gz", *_MNIST_BASES),
            content_size=7840016,
            content_md5="2646ac647ad5339dbf082846283269ea",
            content_sha256="0fa7898d509279e482958e8ce81c8e77db3f2f8254e26661ceb7762c4d494ce7",
        ),
        RawFile(
            name="t10k-labels-idx1-ubyte.gz",
            role="test_labels",
            size=4542,
            md5="ec29112dd5afa0611ce80d1b7f02629c",
            sha256="f7ae60f92e00ec6debd23a6088c31dbd2371eca3ffa0defaefb259924204aec6",
            urls=_urls("t10k-labels-idx1-ubyte.gz", *_MNIST_BASES),
            content_size=10008,
            content_md5="27ae3e4e09519cfbb04c329615203637",
            content_sha256="ff7bcfd416de33731a308c3f266cc351222c34898ecbeaf847f06e48f7ec33f2",
        ),
    ),
)

# sha256=None: the official archives were not available here to hash, only Debian's
# re-gzipped copies; the published MD5 and size pin the official bytes, and the content
# checksums (hashed from Debian's copies, whose content MD5s equal the published data's)
# accept any faithful re-gzip.
FASHION_MNIST = Dataset(
    name="fashion_mnist",
    raw_format="idx",
    image_shape=(28, 28),
    train_class_counts=(6000,) * 10,
    test_class_counts=(1000,) * 10,
    folder_aliases=(
        "fashion_mnist",
        "fashion-mnist",
        "fashionmnist",
        "FashionMNIST",
        "FashionMNIST/raw",
        "fashion",
    ),
    files=(
        RawFile(
            name="train-images-idx3-ubyte.gz",
            role="train_images",
            size=26421880,
            md5="8d4fb7e6c68d591d4c3dfef9ec88bf0d",
            sha256=None,
            urls=_urls("train-images-idx3-ubyte.gz", *_FASHION_BASES),
            content_size=47040016,
            content_md5="f4a8712d7a061bf5bd6d2ca38dc4d50a",
            content_sha256="c59f468a2f672dc815687fe0f83887768d799fd8a3f3276145d20f83aa44d888",
        ),
        RawFile(
            name="train-labels-idx1-ubyte.gz",
            role="train_labels",
            size=29515,
            md5="25c81989df183df01b3e8a0aad5dffbe",
            sha256=None,
            urls=_urls("train-labels-idx1-ubyte.gz", *_FASHION_BASES),
            content_size=60008,
            content_md5="9018921c3c673c538a1fc5bad174d6f9",
            content_sha256="bad3541b69d912435c50bb6ba87bec294ff4f6a2e1246121d8633921760443d9",
        ),
        RawFile(
            name="t10k-images-idx3-ubyte.gz",
            role="test_images",
            size=4422102,
            md5="bef4ecab320f06d8554ea6380940ec79",
            sha256=None,
            urls=_urls("t10k-images-idx3-ubyte.gz", *_FASHION_BASES),
            content_size=7840016,
            content_md5="8181f5470baa50b63fa0f6fddb340f0a",
            content_sha256="5b4141f0afbad91edebe8549f8fcffe087ea10ca49f1dbef5c9a5cd8815ce37b",
        ),
        RawFile(
            name="t10k-labels-idx1-ubyte.gz",
            role="test_labels",
            size=5148,
            md5="bb300cfdad3c16e7a12a480ee83cd310",
            sha256=None,
            urls=_urls("t10k-labels-idx1-ubyte.gz", *_FASHION_BASES),
            content_size=10008,
            content_md5="15d484375f8d13e6eb1aabb0c3f46965",
            content_sha256="0402a96d92fd2663957122ceb108a494c5af83dab82d92729df917d7dec38c34",
        ),
    ),
)

# The binary release, parsed with numpy; the python release is a pickle, and
# unpickling a downloaded file can run arbitrary code.
CIFAR10 = Dataset(
    name="cifar10",
    raw_format="cifar_binary",
    image_shape=(32, 32, 3),
    train_class_counts=(5000,) * 10,
    test_class_counts=(1000,) * 10,
    folder_aliases=("cifar10", "cifar-10", "CIFAR10", "CIFAR-10", "cifar-10-binary"),
    files=(
        RawFile(
            name="cifar-10-binary.tar.gz",
            role="archive",
            size=170052171,
            md5="c32a1d4ab5d03f1284b67883e8d87530",
            # No official copy was available here to hash; the published MD5 and size pin it.
            sha256=None,
            urls=("https://www.cs.toronto.edu/~kriz/cifar-10-binary.tar.gz",),
        ),
    ),
)

DATASETS: dict[str, Dataset] = {d.name: d for d in (MNIST, FASHION_MNIST, CIFAR10)}


def dataset_names() -> tuple[str, ...]:
    """The registry's dataset names, e.g. for a Snakemake wildcard constraint."""
    return tuple(DATASETS)


def get_dataset(name: str) -> Dataset:
    """The registry entry called ``name``, or a ValueError listing the valid names."""
    try:
        return DATASETS[name]
    except KeyError:
        valid = ", ".join(DATASETS)
        raise ValueError(f"unknown dataset {name!r}; choose one of: {valid}") from None
