"""The data jobs' Snakemake records carried over to per-dataset params (#61), on records
written as Snakemake's file persistence writes them (galu/workflow/running/data_records.py)."""

from __future__ import annotations

import json
from pathlib import Path

from galu.workflow.running.data_records import carry_over
from galu.workflow.running.snakemake_metadata import METADATA, metadata_record_path

CIFAR = {"dataset": "cifar10", "file": "cifar-10-binary.tar.gz", "path": "c", "sha256": "ab"}
MNIST = {"dataset": "mnist", "file": "train-images-idx3-ubyte.gz", "path": "m", "sha256": "cd"}
CODE = "{'script': 'scripts/data_download.py', 'sha256': '00'}"


def write(root: Path, target: str, params: list[str]) -> Path:
    path = metadata_record_path(target, root / METADATA)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"rule": "download", "params": params, "record_format_version": 6}))
    return path


def params(root: Path, target: str) -> list[str]:
    return json.loads(metadata_record_path(target, root / METADATA).read_text())["params"]


def old_records(root: Path, substitutes: list[dict]) -> None:
    """Every data output and sidecar, recorded by the rules before #61 (the whole list)."""
    for name in ("mnist", "fashion_mnist", "cifar10"):
        for target in (f"data/raw/{name}/sources.json", f"data/processed/{name}.npz"):
            whole = {"substitutes": substitutes} if "raw" in target else substitutes
            for recorded in (target, target + ".meta.json"):
                write(root, recorded, sorted([repr(whole), CODE]))


def test_old_records_made_with_this_config_take_the_per_dataset_params(tmp_path):
    section = {"mirrors": ["/m"], "timeout_s": 9, "substitutes": [CIFAR]}
    old_records(tmp_path, [CIFAR])
    before = params(tmp_path, "data/raw/cifar10/sources.json")
    rewritten = carry_over(section, tmp_path)
    assert len(rewritten) == 8  # MNIST's and Fashion-MNIST's manifest, array and sidecars
    assert {t.split("/")[2].split(".")[0] for t in rewritten} == {"mnist", "fashion_mnist"}
    # Exactly what the rules record now: Snakemake's repr of each param, sorted.
    assert params(tmp_path, "data/raw/mnist/sources.json") == sorted(["{'substitutes': []}", CODE])
    assert params(tmp_path, "data/processed/fashion_mnist.npz.meta.json") == sorted(["[]", CODE])
    assert params(tmp_path, "data/raw/cifar10/sources.json") == before  # its own: unchanged
    assert carry_over(section, tmp_path) == []  # once


def test_records_made_with_other_substitutes_are_left_to_rerun(tmp_path):
    """A record from another configuration (MNIST's substitute dropped since) is a real
    change for MNIST: it is not rewritten, so Snakemake reruns that download."""
    old_records(tmp_path, [CIFAR, MNIST])
    section = {"substitutes": [CIFAR]}
    assert carry_over(section, tmp_path) == []
    assert params(tmp_path, "data/raw/mnist/sources.json") == sorted(
        [repr({"substitutes": [CIFAR, MNIST]}), CODE]
    )


def test_without_substitutes_or_records_nothing_is_written(tmp_path):
    old_records(tmp_path, [])
    assert carry_over({"substitutes": []}, tmp_path) == []
    assert carry_over({"substitutes": [CIFAR]}, tmp_path / "elsewhere") == []
    torn = write(tmp_path / "torn", "data/raw/mnist/sources.json", [])
    torn.write_text('{"params": [')  # Snakemake ignores a torn record; so does the carry-over
    assert carry_over({"substitutes": [CIFAR]}, tmp_path / "torn") == []
    assert torn.read_text() == '{"params": ['
