"""Checkpoints of long jobs (galu.checkpoints, galu.workflow.job_checkpoints): saved
atomically, loaded only by their own job."""

from __future__ import annotations

import time
from pathlib import Path
from types import SimpleNamespace

import pytest
import torch

from galu.checkpoints import FOLDER, Checkpoint
from galu.workflow.job_checkpoints import job_checkpoint


def test_a_saved_state_comes_back_and_clear_removes_it(tmp_path: Path) -> None:
    path = tmp_path / "deep" / "job.pt"
    state = {"done": 7, "J": torch.arange(6.0).reshape(2, 3), "runs": [[torch.ones(2)]]}
    Checkpoint(path, "k").save(state)
    loaded = Checkpoint(path, "k").load()
    assert loaded is not None and loaded["done"] == 7
    assert torch.equal(loaded["J"], state["J"]) and torch.equal(loaded["runs"][0][0], torch.ones(2))
    assert [p.name for p in path.parent.iterdir()] == ["job.pt"]  # no temporary left behind
    Checkpoint(path, "k").clear()
    assert not path.exists() and Checkpoint(path, "k").load() is None
    Checkpoint(path, "k").clear()  # nothing to remove: fine


def test_another_key_or_a_damaged_file_is_ignored(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "job.pt"
    Checkpoint(path, "settings A").save({"done": 1})
    with caplog.at_level("INFO", logger="galu.checkpoints"):
        assert Checkpoint(path, "settings B").load() is None
        path.write_bytes(b"not a checkpoint")
        assert Checkpoint(path, "settings A").load() is None
    assert "another job's" in caplog.text and "unreadable" in caplog.text


def test_due_counts_from_the_last_save(tmp_path: Path) -> None:
    assert Checkpoint(tmp_path / "a.pt", "k", every_s=0.0).due()
    slow = Checkpoint(tmp_path / "b.pt", "k", every_s=3600.0)
    assert not slow.due()
    slow._last = time.monotonic() - 3601.0  # an hour since the last save
    assert slow.due()
    slow.save({"done": 1})
    assert not slow.due()
    with pytest.raises(ValueError, match="every_s"):
        Checkpoint(tmp_path / "c.pt", "k", every_s=-1.0)


def _run(tmp_path: Path, **changes: object) -> SimpleNamespace:
    data = tmp_path / "input.npz"
    if not data.exists():
        data.write_bytes(b"inputs")
    fields = dict(
        rule="scm_simulation",
        wildcards={"scm_setting": "relu_k2m3"},
        params={"simulation": {"N": 10000}},
        code={"sha256": "c0de"},
        inputs=[str(data)],
        device="cpu",
    )
    return SimpleNamespace(**{**fields, **changes})


def test_a_jobs_checkpoint_is_keyed_to_what_decides_its_numbers(tmp_path: Path) -> None:
    output = "results/paper-cpu/scm/runs/relu_k2m3_sim.csv"
    base = job_checkpoint(_run(tmp_path), output)
    assert base.path == FOLDER / f"{output}.pt"
    assert job_checkpoint(_run(tmp_path), output).key == base.key  # the same job: the same key
    for change in (
        {"params": {"simulation": {"N": 3000}}},
        {"wildcards": {"scm_setting": "relu_k2m2"}},
        {"code": {"sha256": "other"}},
        {"device": "cuda"},
        {"rule": "scm_schedules"},
    ):
        assert job_checkpoint(_run(tmp_path, **change), output).key != base.key, change
    # code recorded as number-neutral to an earlier closure keeps that closure's key
    equivalent = {"sha256": "new", "canonical": "c0de"}
    assert job_checkpoint(_run(tmp_path, code=equivalent), output).key == base.key
    (tmp_path / "input.npz").write_bytes(b"other inputs")
    assert job_checkpoint(_run(tmp_path), output).key != base.key
    assert job_checkpoint(_run(tmp_path), "/abs/out.csv").path == FOLDER / "abs/out.csv.pt"
