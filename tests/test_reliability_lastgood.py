"""A failed rerun keeps the last good result: outputs linked at the start of a run are put back
(with their sidecars) when the run fails, and the next run still redoes their jobs."""

from __future__ import annotations

import json
import multiprocessing
import os
from pathlib import Path

import pandas as pd
import pytest
from test_reliability_support import incomplete, kill_group, smk, start, tiny_repo, wait_for

from galu.atomic import atomic_write_bytes
from galu.workflow.output import Run
from galu.workflow.provenance import sealed_sidecar, sha256_file
from galu.workflow.running.lastgood import (
    SNAPSHOT,
    PutBack,
    Snapshot,
    put_back,
    restore_missing,
    snapshot,
)

CSV = "results/normalization/coefficients.csv"
TARGETS = [CSV, "figures/normalization/activations.png"]


TABLE, FIGURE = "results/s/table.csv", "figures/s/plot.png"
MINE = [TABLE, f"{TABLE}.meta.json"]


@pytest.fixture
def tree(tmp_path, monkeypatch):
    """A table and a figure drawn from it, each with its sidecar, as a workflow makes them."""
    monkeypatch.chdir(tmp_path)
    Run("make").write_csv(pd.DataFrame({"x": [1, 2, 3]}), TABLE)
    atomic_write_bytes(tmp_path / FIGURE, b"png bytes")
    Run("plot", inputs=[TABLE]).stamp(FIGURE)
    return tmp_path


def sums(root: Path, rels=(*MINE, FIGURE, f"{FIGURE}.meta.json")) -> dict[str, str | None]:
    """sha256 of each file (None where it is missing)."""
    return {r: sha256_file(root / r) if (root / r).is_file() else None for r in rels}


def lose(root: Path, rels=MINE) -> None:
    """What Snakemake does to a job's outputs before the job starts (and a kill -9 leaves)."""
    for rel in rels:
        (root / rel).unlink()


def test_snapshot_links_without_copying_and_restore_puts_back_only_what_is_missing(tmp_path):
    for rel, data in [("results/a.csv", b"a1"), ("data/raw/d/c.gz", b"c")]:
        atomic_write_bytes(tmp_path / rel, data)
    (tmp_path / "results/.a.csv.x.tmp").write_bytes(b"half")  # a killed write: not an output
    (tmp_path / "results/d.csv.rejected").write_bytes(b"bad")  # set aside: not an output
    (tmp_path / "data/raw/d/e.gz.part").write_bytes(b"par")  # a partial download: never restored
    assert snapshot(tmp_path) == Snapshot(2, ())
    kept = tmp_path / SNAPSHOT / "results/a.csv"
    assert os.stat(kept).st_ino == os.stat(tmp_path / "results/a.csv").st_ino  # a link
    (tmp_path / "data/raw/d/c.gz").unlink()  # deleted by a failed job
    assert restore_missing(tmp_path) == ["data/raw/d/c.gz"]  # no manifest: nothing to judge
    assert (tmp_path / "data/raw/d/c.gz").read_bytes() == b"c"
    assert not list(tmp_path.rglob("*.restore.tmp"))
    assert not (tmp_path / "results/.a.csv.x.tmp.restore.tmp").exists()


def test_a_good_new_version_replaces_the_last_good_one(tree):
    snapshot(tree)
    Run("make").write_csv(pd.DataFrame({"x": [4, 5]}), TABLE)  # a rerun that succeeded
    new = sums(tree)
    assert snapshot(tree).carried == ()
    lose(tree)
    back = put_back(tree, MINE)
    assert back == PutBack(tuple(MINE), ()) and sums(tree) == new


def test_a_kill_during_a_rerun_then_a_failed_rerun_keeps_the_output(tree):
    """Run 2 deletes the table and is killed (no onerror); run 3 starts (its snapshot) and
    fails: the table's last good version survives run 3's snapshot and is put back."""
    good = sums(tree)
    snapshot(tree)  # run 2 starts
    lose(tree)  # its job's outputs deleted; kill -9
    assert snapshot(tree).carried == (TABLE,)  # run 3 starts: an absence replaces nothing
    back = put_back(tree, MINE)  # run 3 fails
    assert back == PutBack(tuple(MINE), ())
    assert sums(tree) == good
    assert os.stat(tree / TABLE).st_ino == os.stat(tree / SNAPSHOT / TABLE).st_ino


def test_two_killed_runs_in_a_row_still_keep_the_output(tree):
    good = sums(tree)
    for _ in range(3):  # every later start finds the table missing
        snapshot(tree)
        if (tree / TABLE).exists():
            lose(tree)
    assert put_back(tree, MINE).restored == tuple(MINE) and sums(tree) == good


def test_a_run_on_other_targets_keeps_a_killed_runs_outputs_and_leaves_them_alone(tree):
    """Run A (the table) is killed; run B (the figure) starts and fails: B's snapshot keeps
    A's table, and B puts back only its own outputs; A's rerun then gets its table back."""
    good = sums(tree)
    snapshot(tree)  # A starts
    lose(tree)  # A's job deletes the table; A is killed
    snapshot(tree)  # B starts
    lose(tree, [FIGURE])  # B's job deletes the figure, then fails
    b = put_back(tree, [FIGURE, f"{FIGURE}.meta.json"])
    assert b.restored == (FIGURE,) and not (tree / TABLE).exists()  # A's file: not B's business
    assert put_back(tree, MINE).restored == tuple(MINE)  # A's rerun fails
    assert sums(tree) == good


def test_a_new_version_without_a_matching_sidecar_does_not_replace_the_last_good_one(tree):
    """A job killed between writing its output and its sidecar: the new bytes do not match
    the (old) sidecar, so the snapshot keeps the old pair, which a failure puts back."""
    good = sums(tree)
    snapshot(tree)
    atomic_write_bytes(tree / TABLE, b"x\n7\n")  # the new table; its sidecar never came
    assert snapshot(tree).carried == (TABLE,)
    lose(tree)
    assert put_back(tree, MINE).restored == tuple(MINE) and sums(tree) == good


def test_a_new_version_with_no_sidecar_does_not_replace_the_last_good_one(tree):
    good = sums(tree)
    snapshot(tree)
    atomic_write_bytes(tree / TABLE, b"x\n7\n")
    (tree / f"{TABLE}.meta.json").unlink()
    assert snapshot(tree).carried == (TABLE,)
    lose(tree, [TABLE])
    assert put_back(tree, MINE).restored == tuple(MINE) and sums(tree) == good


def test_a_last_good_copy_damaged_in_place_is_refused_not_put_back(tree):
    """A hard link shares its bytes: a flip in place damages the last good copy too. The
    pre-flight sets the table aside; the failed run must not put the damaged copy back."""
    snapshot(tree)
    with open(tree / TABLE, "r+b") as handle:  # in place: the same inode
        handle.seek(2)
        handle.write(b"9")
    for rel in MINE:  # what the pre-flight does with it
        os.replace(tree / rel, tree / f"{rel}.rejected")
    snapshot(tree)
    back = put_back(tree, MINE)
    assert back.restored == ()
    ((output, why),) = back.refused
    assert output == TABLE and why.startswith("its bytes do not match its sidecar (sha256 ")
    assert sums(tree, MINE) == {rel: None for rel in MINE}


def test_a_last_good_sidecar_edited_in_place_is_refused(tree):
    snapshot(tree)
    side = tree / f"{TABLE}.meta.json"
    with open(side, "r+b") as handle:  # in place, through the link
        handle.seek(side.stat().st_size - 3)
        handle.write(b" ")
    lose(tree)
    ((output, why),) = put_back(tree, MINE).refused
    assert output == TABLE and why == (
        "its sidecar changed after it was written (its bytes do not match its seal)"
    )
    assert not (tree / TABLE).exists()


def test_a_sidecar_of_another_version_is_never_paired_with_an_old_output(tree):
    snapshot(tree)
    (tree / TABLE).unlink()
    side = tree / f"{TABLE}.meta.json"
    record = json.loads(side.read_text())
    record["output"]["sha256"] = "0" * 64  # the sidecar of a newer table, whose table is gone
    atomic_write_bytes(side, sealed_sidecar(record))
    back = put_back(tree, MINE)
    assert back.restored == ()
    assert back.refused == ((TABLE, f"{TABLE}.meta.json is there now, another version"),)
    assert not (tree / TABLE).exists()


def test_a_raw_archive_is_judged_by_its_dataset_manifest(tree):
    raw = "data/raw/d/a.gz"
    atomic_write_bytes(tree / raw, b"archive")
    manifest = {"files": [{"name": "a.gz", "sha256": sha256_file(tree / raw)}]}
    atomic_write_bytes(tree / "data/raw/d/sources.json", json.dumps(manifest).encode())
    snapshot(tree)
    atomic_write_bytes(tree / raw, b"truncat")  # a bad new copy: the old one stays
    assert snapshot(tree).carried == (raw,)
    (tree / raw).unlink()
    assert put_back(tree, [raw]).restored == (raw,)
    assert (tree / raw).read_bytes() == b"archive"


def test_a_snapshot_killed_between_its_renames_is_recovered(tree):
    """kill -9 after the previous snapshot was renamed aside and before the new one took its
    place (and a half-built one left behind): the next run finds the previous one."""
    good = sums(tree)
    snapshot(tree)
    lose(tree)  # a killed rerun deleted the table
    final = tree / SNAPSHOT
    final.rename(final.with_name("last-good.old.4242"))
    (final.with_name("last-good.new.x1") / "results").mkdir(parents=True)
    kept = snapshot(tree)
    assert kept.carried == (TABLE,)
    assert sorted(p.name for p in final.parent.iterdir()) == ["last-good", "last-good.lock"]
    assert put_back(tree, MINE).restored == tuple(MINE) and sums(tree) == good


def _snapshots(root: str, rounds: int) -> None:
    for _ in range(rounds):
        snapshot(root)
        put_back(root, [])


def test_two_runs_starting_at_once_never_break_each_others_snapshot(tree):
    """Runs on disjoint targets may start together: their snapshots take turns (a lock);
    before, one deleted the other's half-built snapshot or renamed it away mid-restore."""
    for i in range(60):
        atomic_write_bytes(tree / f"results/many/{i}.csv", b"%d" % i)
    good = sums(tree)
    snapshot(tree)
    lose(tree)
    ctx = multiprocessing.get_context("fork")
    procs = [ctx.Process(target=_snapshots, args=(str(tree), 15)) for _ in range(2)]
    for proc in procs:
        proc.start()
    for proc in procs:
        proc.join(120)
    assert [proc.exitcode for proc in procs] == [0, 0]
    assert len(list((tree / SNAPSHOT / "results/many").iterdir())) == 60
    assert put_back(tree, MINE).restored == tuple(MINE) and sums(tree) == good


@pytest.mark.slow
def test_a_killed_then_failed_rerun_keeps_the_last_good_output_and_a_stuck_one_stops_the_run(
    tmp_path,
):
    """A rerun killed after its job deleted the outputs, then a rerun that fails: the last
    good outputs come back (and their job is redone next time). Then a table that fails its
    check and cannot be set aside: the run stops before any job, the figure is not redrawn."""
    root = tiny_repo(tmp_path / "repo")
    smk(root, *TARGETS, "--cores", "1")
    made = (CSV, "results/normalization/coefficients_summary.json")
    good = {p: (root / p).read_bytes() for rel in made for p in (rel, f"{rel}.meta.json")}
    # A code change reruns the job (Snakemake's code trigger); kill -9 while it runs.
    script = root / "scripts/normalization_coefficients.py"
    original = script.read_text()
    script.write_text("import time\ntime.sleep(300)\n" + original)
    log = tmp_path / "killed.log"
    proc = start(root, *TARGETS, "--cores", "1", log=log)
    wait_for(lambda: not (root / CSV).exists(), 120, "the job to start", proc, log)
    kill_group(proc)
    smk(root, "--unlock")
    # The next rerun's job crashes.
    script.write_text("raise RuntimeError('injected crash')\n" + original)
    failed = smk(root, *TARGETS, "--cores", "1", check=False)
    assert failed.returncode != 0 and "injected crash" in failed.stdout + failed.stderr
    said = failed.stderr
    assert (
        f"galu: 2 output(s) of this run are missing or fail their check now (e.g. {CSV});"
        f" their last good version stays in {SNAPSHOT}/ and is put back if the run fails."
    ) in said, said
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
    # The table fails its check, and its set-aside name is taken by a folder.
    figure = {p: sha256_file(root / p) for p in (TARGETS[1], f"{TARGETS[1]}.meta.json")}
    bad = good[CSV].replace(b"0.", b"1.", 1)
    (root / CSV).write_bytes(bad)  # newer than the figure: Snakemake would redraw it
    (root / f"{CSV}.rejected").mkdir()
    stopped = smk(root, *TARGETS, "--cores", "1", check=False)
    assert stopped.returncode == 2, stopped.stderr
    assert (
        f"could not move it to {CSV}.rejected (the set-aside name is taken by a folder);"
        f" nothing started, so that no job reads it: remove or rename {CSV}.rejected, which"
        " is in the way, then run again"
    ) in stopped.stderr
    assert (
        "galu: nothing started: 1 file(s) fail their check and are still where a job would"
        f" read them ({CSV})" in stopped.stderr
    )
    assert "Traceback" not in stopped.stdout + stopped.stderr
    assert {p: sha256_file(root / p) for p in figure} == figure  # not redrawn
    assert (root / CSV).read_bytes() == bad  # left for the person to see
    (root / f"{CSV}.rejected").rmdir()  # what the message says: then the run repairs it
    smk(root, *TARGETS, "--cores", "1")
    assert (root / CSV).read_bytes() == good[CSV]
    assert (root / f"{CSV}.rejected").read_bytes() == bad
