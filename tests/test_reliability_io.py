"""Faults at the file level: a full disk and a kill -9 in the middle of writing an output."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pandas as pd
import pytest

from galu.workflow.output import Run
from galu.workflow.trust.audit import audit_tree


@pytest.fixture
def tiny_disk(tmp_path: Path):
    """A 64 KiB tmpfs, so a write runs out of space (needs root; skipped with the reason)."""
    mount = tmp_path / "disk"
    mount.mkdir()
    proc = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(mount)],
        capture_output=True,
        text=True,
    )
    if proc.returncode != 0:
        pytest.skip(f"cannot mount a small tmpfs here ({proc.stderr.strip() or 'not root'})")
    yield mount
    subprocess.run(["umount", str(mount)], check=False)


def test_full_disk_keeps_the_previous_output_and_reports_the_error(tiny_disk, monkeypatch):
    monkeypatch.chdir(tiny_disk)
    run = Run("r")
    run.write_csv(pd.DataFrame({"x": [1, 2, 3]}), "results/x.csv")
    before = {p.name: p.read_bytes() for p in (tiny_disk / "results").iterdir()}
    big = pd.DataFrame({"x": range(50_000), "y": [0.123456789] * 50_000})
    with pytest.raises(OSError) as error:
        run.write_csv(big, "results/x.csv")
    assert error.value.errno == 28  # ENOSPC, reported as such
    after = {p.name: p.read_bytes() for p in (tiny_disk / "results").iterdir()}
    assert after == before  # the old CSV and its sidecar are intact, no temporary file left
    assert audit_tree(".") == []


CHILD = textwrap.dedent(
    """
    import sys, time
    from galu.atomic import atomic_path
    with atomic_path(sys.argv[1]) as tmp:
        tmp.write_text("x\\n1\\n2\\n")  # half of the new output...
        print("writing", flush=True)
        time.sleep(60)                   # ...when the job is killed
    """
)


def test_kill_during_a_write_leaves_the_old_output_under_its_name(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    Run("r").write_csv(pd.DataFrame({"x": [7]}), "results/x.csv")
    old = (tmp_path / "results/x.csv").read_bytes()
    child = subprocess.Popen(
        [sys.executable, "-c", CHILD, "results/x.csv"], stdout=subprocess.PIPE, text=True
    )
    assert child.stdout.readline().strip() == "writing"
    os.kill(child.pid, signal.SIGKILL)
    child.wait(timeout=10)
    time.sleep(0.05)
    assert (tmp_path / "results/x.csv").read_bytes() == old
    leftovers = [p.name for p in (tmp_path / "results").iterdir() if p.name.endswith(".tmp")]
    assert len(leftovers) == 1 and leftovers[0].startswith(".x.csv.")
    assert audit_tree(".") == []  # the in-flight file is not mistaken for an output
