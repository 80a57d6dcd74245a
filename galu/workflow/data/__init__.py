"""Datasets: verified raw files, offline mirrors, opt-in substitutes, converted arrays.

Two entry points, also behind ``galu data fetch`` / ``galu data prepare`` and
the Snakemake rules ``download`` / ``prepare``:

- ``fetch(name, raw_root, settings)`` puts every raw file of a dataset, verified
  against the published checksums, into ``raw_root/<name>/``;
- ``prepare(name, raw_root, processed_root, settings.substitutes)`` writes
  ``processed_root/<name>.npz`` (``x_train, y_train, x_test, y_test``) and its
  provenance sidecar.
"""

from galu.workflow.data.errors import (
    ChecksumMismatchError,
    DataError,
    DownloadError,
    FormatError,
    InsecureURLError,
    MissingFilesError,
    UnsafeArchiveError,
)
from galu.workflow.data.fetch import FetchReport, fetch, fetch_many, manifest_path
from galu.workflow.data.prepare import PrepareReport, load_processed, prepare, processed_path
from galu.workflow.data.registry import DATASETS, Dataset, RawFile, dataset_names, get_dataset
from galu.workflow.data.settings import DataSettings

__all__ = [
    "DATASETS",
    "ChecksumMismatchError",
    "DataError",
    "DataSettings",
    "Dataset",
    "DownloadError",
    "FetchReport",
    "FormatError",
    "InsecureURLError",
    "MissingFilesError",
    "PrepareReport",
    "RawFile",
    "UnsafeArchiveError",
    "dataset_names",
    "fetch",
    "fetch_many",
    "get_dataset",
    "load_processed",
    "manifest_path",
    "prepare",
    "processed_path",
]
