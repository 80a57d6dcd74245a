"""benchmarks/plan_vs_run.py: a resumed job's measured time scaled to all its epochs."""

from __future__ import annotations

import importlib.util

from conftest import REPO

RESUMED_LOG = """\
2026-12-06 18:54:13,223 INFO galu.checkpoints: resuming from checkpoint x.pt
2026-12-06 18:54:21,180 INFO galu.progress: gelu depth 50 width 128 of 1, epoch 38/50: loss 0.95
2026-12-06 18:54:28,709 INFO galu.progress: gelu depth 50 width 128 of 1, epoch 39/50: loss 0.93
"""


def _module():
    spec = importlib.util.spec_from_file_location("plan_vs_run", REPO / "benchmarks/plan_vs_run.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_a_resumed_job_ran_the_epochs_from_its_first_logged_one(tmp_path):
    log = tmp_path / "train.log"
    log.write_text(RESUMED_LOG)
    assert _module().resumed_share(log) == 13 / 50  # epochs 38 to 50 of 50


def test_a_job_that_ran_whole_or_left_no_log_counts_whole(tmp_path):
    log = tmp_path / "train.log"
    log.write_text(RESUMED_LOG.replace("resuming from checkpoint x.pt", "started"))
    share = _module().resumed_share
    assert share(log) == 1.0
    assert share(tmp_path / "missing.log") == 1.0
