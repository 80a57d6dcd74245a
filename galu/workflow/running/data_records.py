"""Snakemake's records of the data jobs carried over to per-dataset params, once.

Until #61, a download's and a prepare job's params held every dataset's substitutes
(``data.substitutes`` whole); now each holds only its own dataset's
(:func:`galu.workflow.settings.sitekeys.dataset_substitutes`). A checkout whose config opts
into the CIFAR-10 reconstruction would otherwise see the MNIST and Fashion-MNIST downloads'
params change and, Snakemake rerunning everything below a job that reruns, retrain every
job made from them (2 h of CPU at the paper-cpu scale) for bytes that cannot change: a
job's bytes depend on its own dataset's substitutes only, before and after.

:func:`carry_over` rewrites a data job's record only where it was made with this same
configuration in the old form (its params hold the whole list exactly as the configuration
has it now): then the new params are what the job would have recorded. Any other record is
left alone, so a real change of substitutes still reruns its dataset. Records only: no byte
of any data file or result changes.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from galu.atomic import atomic_write_bytes
from galu.workflow.data import dataset_names
from galu.workflow.provenance import SIDECAR_SUFFIX
from galu.workflow.running.snakemake_metadata import METADATA, metadata_record_path
from galu.workflow.settings.sitekeys import data_result_settings, dataset_substitutes


def _old_and_new(section: Mapping[str, Any]) -> Iterator[tuple[str, str, str]]:
    """(output, the param as the old rule serialized it, as the rule does now) per data job
    output, in Snakemake's serialization of a param (its ``repr``)."""
    substitutes = section.get("substitutes") or []
    for name in dataset_names():
        yield (
            f"data/raw/{name}/sources.json",
            repr(data_result_settings(section)),
            repr(data_result_settings(section, name)),
        )
        yield (
            f"data/processed/{name}.npz",
            repr(substitutes),
            repr(dataset_substitutes(substitutes, name)),
        )


def carry_over(section: Mapping[str, Any], root: Path = Path(".")) -> list[str]:
    """Rewrite the old-form records of the data jobs' outputs (and their sidecars) made with
    ``section`` (the config's ``data:``); return the outputs whose records were rewritten."""
    rewritten = []
    for output, old, new in _old_and_new(section):
        if old == new:
            continue  # this dataset's params did not change form
        for target in (output, output + SIDECAR_SUFFIX):
            path = metadata_record_path(target, root / METADATA)
            try:
                record = json.loads(path.read_text())
            except (OSError, ValueError):
                continue  # no record, or a torn one: Snakemake decides as it would
            params = record.get("params")
            if not isinstance(params, list) or old not in params:
                continue
            record["params"] = sorted(new if p == old else p for p in params)
            atomic_write_bytes(path, json.dumps(record).encode())
            rewritten.append(target)
    return rewritten
