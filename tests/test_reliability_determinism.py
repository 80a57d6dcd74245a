"""Determinism: same configuration and seeds, same bytes; another seed, other numbers.

Two fresh copies of the repository run the claims table and everything it needs at the
tiny scale (config/tiny.yaml: every stage, real jobs, about a minute; the quick
scale itself takes too long to run twice in a test), side by side. Then:

- every CSV under results/ (results/claims.csv included) is byte-identical between the
  copies, one run with --cores 1 and one with --cores 2: no timing, host detail or degree of
  parallelism leaks into a table;
- the sidecars differ only in the fields that must differ (start and finish time, and the
  git commit of each copy); everything else, hashes included, is identical;
- a run with another seed reruns only the seeded jobs (of the stages that need no dataset
  download): every table made from seeds gets other numbers, not merely another seed
  column, and every table made without seeds keeps its bytes and its mtime.
"""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest
from test_reliability_support import csv_bytes, smk, snapshot, start, tiny_repo

from galu.workflow.running.warm_jobs import ENABLE_ENV

pytestmark = pytest.mark.slow

CLAIMS = "results/claims.csv"
RESEEDED = [  # the seeded stages that need no dataset, and unseeded ones beside them
    "results/scm/trajectories.csv",
    "results/scm/stability.csv",
    "results/normalization/isometry.csv",
    "results/normalization/coefficients.csv",
    "results/generalization/accuracy.csv",
]
# The only sidecar fields allowed to differ (the seal hashes the sidecar's bytes, times too).
VARYING = ("started", "finished", "git", "sidecar_sha256")
SEED_COLUMNS = ["seed", "seeds", "data_seed"]


def _sidecars(root: Path) -> dict[str, dict]:
    found = {}
    for path in sorted((root / "results").rglob("*.meta.json")):
        record = json.loads(path.read_text())
        found[path.relative_to(root).as_posix()] = {
            k: v for k, v in record.items() if k not in VARYING
        }
    return found


def _seeds(root: Path, csv: str) -> list[int]:
    return json.loads((root / f"{csv}.meta.json").read_text())["seeds"]


def _numbers(root: Path, csv: str) -> pd.DataFrame:
    """A table without its seed columns: what the seed should change."""
    table = pd.read_csv(root / csv)
    return table.drop(columns=[c for c in SEED_COLUMNS if c in table.columns])


def test_same_seeds_same_bytes_and_another_seed_changes_only_seeded_tables(tmp_path):
    first, second = tiny_repo(tmp_path / "first"), tiny_repo(tmp_path / "second")
    # One copy on one core, the other on two (jobs side by side, BLAS pools of two threads):
    # the tables must not depend on the machine's parallelism. The first runs every job in a
    # fresh interpreter, the second forks them from the warm server
    # (galu/workflow/running/warm_jobs.py).
    runs = [
        start(r, CLAIMS, "--cores", cores, log=tmp_path / f"{r.name}.log", env=env)
        for r, cores, env in ((first, "1", {ENABLE_ENV: "0"}), (second, "2", {}))
    ]
    codes = [run.wait(timeout=900) for run in runs]
    assert codes == [0, 0], (tmp_path / "first.log").read_text()[-2000:]
    warm_log = ".snakemake/galu/warm-jobs.log"
    assert not (first / warm_log).exists() and (second / warm_log).exists()
    tables = csv_bytes(first)
    assert CLAIMS in tables and len(tables) >= 20
    assert tables == csv_bytes(second)
    assert _sidecars(first) == _sidecars(second)

    before = snapshot(second)
    smk(second, *RESEEDED, "--cores", "2", "--config", "seed=1")
    after = snapshot(second)
    rerun = sorted(csv for csv in tables if after[csv] != before[csv])
    seeded = sorted(csv for csv in rerun if _seeds(first, csv))
    assert rerun == seeded and len(seeded) >= 8  # nothing without seeds was recomputed
    assert all(_seeds(second, csv) != _seeds(first, csv) for csv in seeded)
    same_numbers = [
        csv
        for csv in seeded
        if "seed" in pd.read_csv(first / csv).columns
        and _numbers(first, csv).equals(_numbers(second, csv))
    ]
    assert same_numbers == []
    unseeded = [csv for csv in tables if csv != CLAIMS and not _seeds(first, csv)]
    assert {"results/scm/stability.csv", "results/normalization/coefficients.csv"} <= set(unseeded)
    assert all(after[csv] == before[csv] for csv in unseeded)
