"""The pre-flight checks every intermediate result, not only the datasets: whatever the audit
would reject (changed bytes, a missing, malformed or edited sidecar, a result made from
bytes that have since changed) is set aside before any job can read it, so its job remakes
it; a dry run only reports; a clean tree is hashed once, not on every call."""

from __future__ import annotations

import json
import os

import pandas as pd
import pytest

import galu.workflow.preflight
from galu.workflow.preflight import preflight
from galu.workflow.provenance import Run, sealed_sidecar

TABLE = "results/s/table.csv"
FIGURE = "figures/s/plot.png"


@pytest.fixture
def tree(tmp_path, monkeypatch):
    """A table and a figure drawn from it, each with its sidecar, as a workflow makes them."""
    monkeypatch.chdir(tmp_path)
    Run("make").write_csv(pd.DataFrame({"x": [1, 2, 3]}), TABLE)
    (tmp_path / "figures/s").mkdir(parents=True)
    (tmp_path / FIGURE).write_bytes(b"png bytes")
    Run("plot", inputs=[TABLE]).stamp(FIGURE)
    return tmp_path


def rejected(root):
    return sorted(p.relative_to(root).as_posix() for p in root.rglob("*.rejected"))


def test_a_clean_tree_passes_and_is_hashed_once(tree, monkeypatch):
    assert preflight(tree) == []
    calls = []
    real = galu.workflow.preflight.sha256_file
    monkeypatch.setattr(
        galu.workflow.preflight, "sha256_file", lambda p: calls.append(p) or real(p)
    )
    assert preflight(tree) == [] and calls == []  # size, mtime, inode unchanged: no rehash


def test_a_truncated_result_is_set_aside_with_its_sidecar_and_a_dry_run_only_says_so(tree):
    (tree / TABLE).write_text("x\n1\n")  # truncated; the sidecar is untouched
    (finding,) = preflight(tree, dry_run=True)
    assert finding.path == TABLE and "changed after it was written" in finding.problem
    assert "a real run moves it to results/s/table.csv.rejected" in finding.action
    assert rejected(tree) == [] and (tree / TABLE).read_text() == "x\n1\n"
    (finding,) = preflight(tree)
    assert "this run remakes it" in finding.action
    assert rejected(tree) == [f"{TABLE}.meta.json.rejected", f"{TABLE}.rejected"]
    assert not (tree / TABLE).exists()
    # The figure drawn from it is not judged on a table that is gone: its job reruns anyway.
    assert (tree / FIGURE).exists()


@pytest.mark.parametrize(
    ("sidecar", "problem"),
    [
        (None, "has no provenance sidecar"),
        (b"{not json", "its sidecar is unreadable or malformed"),
        (b"null", "its sidecar is unreadable or malformed"),
        (b'{"output": "a string"}', "its sidecar is unreadable or malformed"),
        (b'{"output": {"sha256": null}}', "has no output.sha256"),
        (b'["a", "list"]', "its sidecar is unreadable or malformed"),
    ],
)
def test_a_missing_or_malformed_sidecar_never_crashes_and_its_output_is_remade(
    tree, sidecar, problem
):
    side = tree / f"{FIGURE}.meta.json"
    if sidecar is None:
        side.unlink()
    else:
        side.write_bytes(sidecar)
    (finding,) = preflight(tree)
    assert finding.path == FIGURE and problem in finding.problem
    assert not (tree / FIGURE).exists() and f"{FIGURE}.rejected" in rejected(tree)


def test_an_edited_sidecar_fails_its_seal(tree):
    side = tree / f"{TABLE}.meta.json"
    record = json.loads(side.read_text())
    record["params"] = {"edited": True}
    side.write_text(json.dumps(record))  # valid JSON, but not what the job wrote
    (finding,) = preflight(tree)
    assert finding.path == TABLE and finding.problem.startswith("its sidecar ")


def test_a_result_resealed_by_hand_makes_its_consumers_stale(tree):
    """The table edited, its sidecar rewritten to match and its old mtime put back: the table
    itself passes, and Snakemake sees nothing newer, but the figure recorded other bytes for
    it, so the figure is remade."""
    stamp = (tree / TABLE).stat()
    (tree / TABLE).write_text("x\n9\n")
    record = json.loads((tree / f"{TABLE}.meta.json").read_text())
    record["output"]["sha256"] = galu.workflow.preflight.sha256_file(tree / TABLE)
    (tree / f"{TABLE}.meta.json").write_bytes(sealed_sidecar(record))
    os.utime(tree / TABLE, ns=(stamp.st_atime_ns, stamp.st_mtime_ns))
    (finding,) = preflight(tree)
    assert finding.path == FIGURE
    assert finding.problem.startswith(f"was made from {TABLE}, whose bytes have changed")
    assert (tree / TABLE).exists() and not (tree / FIGURE).exists()


def test_a_result_remade_by_its_job_is_no_problem_for_its_consumers(tree):
    """An incremental run remade the table (newer than the figure): Snakemake reruns the
    figure by itself, so the pre-flight says nothing."""
    Run("make").write_csv(pd.DataFrame({"x": [4, 5]}), TABLE)
    later = (tree / FIGURE).stat().st_mtime_ns + 10**9
    os.utime(tree / TABLE, ns=(later, later))
    assert preflight(tree) == [] and (tree / FIGURE).exists()
