"""A failed rerun keeps the last good result: outputs linked at the start of a run are put back
(with their sidecars) when the run fails, and the next run still redoes their jobs."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from test_reliability_support import incomplete, smk, tiny_repo

from galu.atomic import atomic_write_bytes
from galu.workflow.lastgood import SNAPSHOT, restore_missing, snapshot

CSV = "results/normalization/coefficients.csv"
TARGETS = [CSV, "figures/normalization/activations.png"]


def test_snapshot_links_without_copying_and_restore_puts_back_only_what_is_missing(tmp_path):
    for rel, data in [("results/a.csv", b"a1"), ("figures/b.png", b"b1"), ("data/c.npz", b"c")]:
        atomic_write_bytes(tmp_path / rel, data)
    (tmp_path / "results/.a.csv.x.tmp").write_bytes(b"half")  # a killed write: not an output
    (tmp_path / "results/d.csv.rejected").write_bytes(b"bad")  # set aside: not an output
    (tmp_path / "data/e.gz.part").write_bytes(b"par")  # a partial download: never restored
    assert snapshot(tmp_path) == 3
    kept = tmp_path / SNAPSHOT / "results/a.csv"
    assert os.stat(kept).st_ino == os.stat(tmp_path / "results/a.csv").st_ino  # a link
    # A job rewrites a.csv (atomically: a new file) and b.png is deleted by a failed job.
    atomic_write_bytes(tmp_path / "results/a.csv", b"a2")
    (tmp_path / "figures/b.png").unlink()
    assert restore_missing(tmp_path) == ["figures/b.png"]
    assert (tmp_path / "figures/b.png").read_bytes() == b"b1"
    assert (tmp_path / "results/a.csv").read_bytes() == b"a2"  # the new output stays
    assert not list(tmp_path.rglob("*.restore.tmp"))
    # The next snapshot replaces the previous one.
    (tmp_path / "data/c.npz").unlink()
    assert snapshot(tmp_path) == 2 and not (tmp_path / SNAPSHOT / "data/c.npz").exists()
    assert restore_missing(tmp_path) == []


@pytest.mark.slow
def test_a_failed_rerun_keeps_the_last_good_output_and_is_redone_next_time(tmp_path):
    root = tiny_repo(tmp_path / "repo")
    smk(root, *TARGETS, "--cores", "1")
    made = (CSV, "results/normalization/coefficients_summary.json")
    good = {p: (root / p).read_bytes() for rel in made for p in (rel, f"{rel}.meta.json")}
    # A code change reruns the job (Snakemake's code trigger), and the job now crashes.
    script = root / "scripts/normalization_coefficients.py"
    original = script.read_text()
    script.write_text("raise RuntimeError('injected crash')\n" + original)
    failed = smk(root, *TARGETS, "--cores", "1", check=False)
    assert failed.returncode != 0 and "injected crash" in failed.stdout + failed.stderr
    said = failed.stderr
    assert "galu: the run failed; put back the last good version of 4 file(s)" in said, said
    assert "normalization_coefficients" in said
    # The previous output and its sidecar keep their bytes under their names ...
    assert {p: (root / p).read_bytes() for p in good} == good
    assert not list(root.rglob("*.restore.tmp"))
    # ... and the job is still due: marked incomplete, so the next run redoes it.
    assert CSV in incomplete(root)
    plan = smk(root, *TARGETS, "-n", "--cores", "1")
    assert "normalization_coefficients" in plan.stdout
    script.write_text(original)
    smk(root, *TARGETS, "--cores", "1")
    assert (root / CSV).read_bytes() == good[CSV]  # same code, same bytes
    again = smk(root, *TARGETS, "-n", "--cores", "1")
    assert "Nothing to be done" in again.stdout + again.stderr
    assert Path(root / SNAPSHOT).is_dir()
