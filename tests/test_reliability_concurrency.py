"""Concurrency: a second workflow run in the same directory refuses; the first is unaffected.

Run A (tiny overlay, one core) is started; once it holds Snakemake's lock and a job is
running, run B is started with the same command in the same directory. B must stop at once
with Snakemake's lock message, start no job and touch no file (galu's pre-flight also stays
out of the way while a lock is held). A must then complete, and its CSVs must be byte for
byte those of the same command run alone in a fresh copy.
"""

from __future__ import annotations

import pytest
from test_reliability_support import (
    csv_bytes,
    incomplete,
    lock_files,
    smk,
    start,
    tiny_repo,
    wait_for,
)

from galu.workflow.trust.audit import audit_tree

pytestmark = pytest.mark.slow

TARGETS = [
    "results/scm/stability.csv",
    "results/normalization/isometry.csv",
    "results/generalization/accuracy.csv",
]


def test_a_second_run_refuses_and_the_first_completes_unaffected(tmp_path):
    first = tiny_repo(tmp_path / "first")
    alone = tiny_repo(tmp_path / "alone")
    log = tmp_path / "a.log"
    a = start(first, *TARGETS, "--cores", "1", log=log)
    try:
        holds = lambda: lock_files(first) and incomplete(first)
        wait_for(holds, 180, "run A held the lock with a job running", a, log)
        b = smk(first, *TARGETS, "--cores", "1", check=False)
        in_flight = incomplete(first)
        assert a.poll() is None and in_flight, "run A finished before B could collide with it"
    finally:
        code = a.wait(timeout=600)
    said = b.stdout + b.stderr
    assert b.returncode != 0 and "Traceback" not in said
    assert "Directory cannot be locked" in said
    assert "no other Snakemake process is trying to create the same files" in said
    assert "localrule" not in said and "galu:" not in said  # no job, no pre-flight action
    assert code == 0, log.read_text()[-3000:]
    assert not lock_files(first) and not incomplete(first)
    assert audit_tree(first) == []
    smk(alone, *TARGETS, "--cores", "1")
    ours, reference = csv_bytes(first), csv_bytes(alone)
    assert len(ours) >= 5 and ours == reference
