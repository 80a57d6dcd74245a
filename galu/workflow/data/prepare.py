"""Turn a dataset's verified raw files into ``<processed_root>/<dataset>.npz``.

The raw files are verified again (official, or an opted-in substitute), so a
file changed or swapped after the download step is caught here. The arrays
are written as an uncompressed ``.npz`` with fixed zip timestamps, so the same
data gives the same bytes on every machine. The sidecar ``<dataset>.npz.meta.json``
(via ``galu.workflow.provenance.Run``) records each array's SHA-256, shape and dtype,
each raw file's SHA-256 and source, and ``data_substitute``: whether anything
descends from a non-official copy.
"""

from __future__ import annotations

import hashlib
import json
import zipfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from galu.workflow.data.convert import convert
from galu.workflow.data.errors import DataError
from galu.workflow.data.fetch import manifest_path, raw_dir, read_manifest
from galu.workflow.data.registry import Dataset, get_dataset
from galu.workflow.data.substitutes import Substitute, accept_present, substitutes_for
from galu.workflow.data.verify import Verified
from galu.atomic import atomic_path
from galu.workflow.provenance import Run
from galu.workflow.vouch import vouch_problem

# In the closure of the jobs that import it (galu.workflow.closure): it writes their bytes.
RESULT_CODE = "how a processed array is made from the raw archives, written and read back"

ARRAY_NAMES = ("x_train", "y_train", "x_test", "y_test")
# Zip entries carry a modification time; a fixed one keeps the file reproducible.
_ZIP_EPOCH = (1980, 1, 1, 0, 0, 0)


@dataclass(frozen=True)
class PrepareReport:
    """What ``prepare`` wrote."""

    dataset: str
    path: Path
    sidecar: Path
    substitute: bool
    arrays: dict[str, dict[str, Any]]


def processed_path(processed_root: Path, dataset: str) -> Path:
    """Where ``dataset``'s arrays go."""
    return Path(processed_root) / f"{dataset}.npz"


def array_record(array: np.ndarray) -> dict[str, Any]:
    """SHA-256 of an array's C-order bytes, with the shape and dtype that give them meaning."""
    data = np.ascontiguousarray(array)
    return {
        "sha256": hashlib.sha256(data.tobytes()).hexdigest(),
        "shape": list(data.shape),
        "dtype": str(data.dtype),
    }


def write_npz(path: Path, arrays: Mapping[str, np.ndarray]) -> None:
    """Write ``arrays`` as an uncompressed, byte-reproducible ``.npz``, atomically."""
    with atomic_path(path) as tmp:
        with zipfile.ZipFile(tmp, "w", zipfile.ZIP_STORED, allowZip64=True) as archive:
            for name, array in arrays.items():
                info = zipfile.ZipInfo(f"{name}.npy", date_time=_ZIP_EPOCH)
                with archive.open(info, "w", force_zip64=True) as handle:
                    np.lib.format.write_array(
                        handle, np.ascontiguousarray(array), allow_pickle=False
                    )


def _verify_raw(
    ds: Dataset, folder: Path, substitutes: Sequence[Substitute]
) -> dict[str, Verified]:
    verified = {}
    for spec in ds.files:
        path = folder / spec.name
        if not path.is_file():
            raise DataError(
                f"{path} is missing; run the download step first "
                f"(`galu data fetch {ds.name}` or the Snakemake target {path.parent}/sources.json)"
            )
        subs = substitutes_for(substitutes, ds.name, spec.name)
        verified[spec.role] = accept_present(path, spec, subs)
    return verified


def _sources(raw_root: Path, dataset: str) -> dict[str, str]:
    """File name -> where the download step got it, from its manifest (if any)."""
    manifest = manifest_path(raw_root, dataset)
    if not manifest.is_file():
        return {}
    return {f["name"]: f["source"] for f in read_manifest(manifest)}


def prepare(
    dataset: str | Dataset,
    raw_root: Path = Path("data/raw"),
    processed_root: Path = Path("data/processed"),
    substitutes: Sequence[Substitute] = (),
    run: Run | None = None,
) -> PrepareReport:
    """Verify, convert and write ``dataset``; return what was written.

    ``substitutes`` are the opted-in stand-ins (``DataSettings.substitutes``);
    a raw file that is neither official nor one of them is rejected. ``run``
    is the job's provenance record (Snakemake scripts pass
    ``Run.from_snakemake``); without one, a record for the raw inputs is made.
    """
    ds = get_dataset(dataset) if isinstance(dataset, str) else dataset
    verified = _verify_raw(ds, raw_dir(raw_root, ds.name), substitutes)
    arrays = convert(ds, {role: v.path for role, v in verified.items()})
    arrays = {name: arrays[name] for name in ARRAY_NAMES}
    records = {name: array_record(a) for name, a in arrays.items()}
    sources = _sources(raw_root, ds.name)
    substitute = any(v.substitute for v in verified.values())
    raw_files = [
        {
            "name": v.name,
            "sha256": v.sha256,
            "accepted_by": v.method,
            "substitute": v.substitute,
            "source": sources.get(v.name),
        }
        for v in verified.values()
    ]
    run = run or Run(
        "galu data prepare", params={"dataset": ds.name}, inputs=[v.path for v in verified.values()]
    )
    run.extra.update(
        {
            "dataset": ds.name,
            "arrays": records,
            "raw_files": raw_files,
            "data_substitute": substitute,
        }
    )
    path = processed_path(processed_root, ds.name)
    write_npz(path, arrays)
    sidecar = run.stamp(path)
    return PrepareReport(ds.name, path, sidecar, substitute, records)


def load_processed(path: Path) -> dict[str, np.ndarray]:
    """Load a processed ``.npz`` (no pickles) as a dict of the four arrays.

    Only an array its provenance sidecar vouches for is loaded (:mod:`galu.workflow.vouch`):
    one without a sidecar, whose sidecar describes another file (another dataset's array
    copied over it with its sidecar) or records other bytes is refused (DataError), and
    nothing is computed from it.
    """
    problem = vouch_problem(path)
    if problem:
        raise DataError(
            f"{path} is not what its provenance sidecar says ({problem}), so it is not used."
            f" Rebuild it: move it aside and run `snakemake --cores 2 {path}` (every workflow"
            " run sets such a file aside and rebuilds it before its jobs start)."
        )
    with np.load(path, allow_pickle=False) as data:
        missing = [n for n in ARRAY_NAMES if n not in data.files]
        if missing:
            raise DataError(f"{path} lacks arrays {missing}; re-run the prepare step")
        return {n: data[n] for n in ARRAY_NAMES}
