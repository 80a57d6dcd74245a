"""Feedback: heartbeat lines of long jobs, progress in the logs, the end-of-run summary and
a report archive whose members unpack readable (0644)."""

from __future__ import annotations

import io
import logging
import stat
import time
import zipfile

import pandas as pd

from galu.memorization.width_search import MinWidthSearch, run_searches
from galu.progress import Throttle, log_progress
from galu.workflow.feedback import (
    heartbeat_interval,
    heartbeat_line,
    last_line,
    normalize_zip_modes,
    start_heartbeat,
)
from galu.workflow.landing import run_summary


def test_heartbeat_line_names_the_job_its_age_and_its_last_progress(tmp_path):
    log = tmp_path / "job.log"
    log.write_text("started\nepoch 3/15: train_loss 1.2\n\n")
    assert last_line(log) == "epoch 3/15: train_loss 1.2"
    assert heartbeat_line("normalization_train", {"depth": 30}, 185.0, str(log)) == (
        "galu: normalization_train (depth=30) still running after 3 min; "
        "last log line: epoch 3/15: train_loss 1.2"
    )
    log.write_text("2026-11-30 22:27:40,775 INFO galu.progress: depth 30, seed 0, epoch 3/15\n")
    assert heartbeat_line("r", {}, 30.0, str(log)).endswith(
        "after 30 s; last log line: depth 30, seed 0, epoch 3/15"
    )
    assert heartbeat_line("r", {}, 61.0, str(tmp_path / "none.log")) == (
        "galu: r still running after 61 s"
    )


def test_heartbeat_thread_beats_until_stopped():
    out = io.StringIO()
    stop = start_heartbeat("r", {"w": 1}, interval=0.05, stream=out)
    time.sleep(0.3)
    stop.set()
    time.sleep(0.1)
    beats = out.getvalue().splitlines()
    assert len(beats) >= 2 and all(b.startswith("galu: r (w=1) still running") for b in beats)
    assert start_heartbeat("r", {}, interval=0) is None
    assert heartbeat_interval({"GALU_HEARTBEAT_S": "0"}) == 0.0
    assert heartbeat_interval({}) == 60.0


def test_progress_lines_reach_the_log(caplog):
    with caplog.at_level(logging.INFO, logger="galu.progress"):
        log_progress("depth 30, seed 0, epoch", 3, 15, train_loss=1.23456, test_error=0.5)
        searches = [MinWidthSearch(lo=1, hi=64)]
        run_searches(searches, lambda requests: [w >= 5 for _, w in requests])
    lines = caplog.messages
    assert lines[0] == "depth 30, seed 0, epoch 3/15: train_loss 1.235, test_error 0.5"
    rounds = [m for m in lines if m.startswith("width search round")]
    assert rounds[0].startswith("width search round 1: open 1, probes")
    assert len(rounds) >= 2


def test_run_summary_counts_verdicts_names_failures_and_points_to_the_report(tmp_path):
    assert "No claims table yet" in run_summary(tmp_path)
    (tmp_path / "results").mkdir()
    pd.DataFrame(
        dict(
            claim_id=["a", "b", "c"],
            verdict=["pass", "fail", "not_run"],
            measured=[1.0, 0.5123, float("nan")],
            precision=[0.1, 0.01, float("nan")],  # shown at the claims table's precision
            scale="quick",
            figure=["figures/x.png", "figures/y.png", "figures/z.png"],
        )
    ).to_csv(tmp_path / "results/claims.csv", index=False)
    text = run_summary(tmp_path)
    assert "Claims at the quick scale" in text and "1 pass, 1 fail, 1 not_run." in text
    assert "  FAIL b: measured 0.51 (figures/y.png)" in text.splitlines()
    assert "No report yet" in text
    (tmp_path / "results/report.zip").write_bytes(b"")
    assert text.splitlines()[-1] != run_summary(tmp_path).splitlines()[-1]
    assert run_summary(tmp_path).endswith(
        "Report: results/report.zip (unzip it, open report/report.html)."
    )


def test_report_zip_members_unpack_with_mode_0644(tmp_path):
    path = tmp_path / "report.zip"
    with zipfile.ZipFile(path, "w") as archive:
        for name in ("report/report.html", "report/data/x.js"):
            info = zipfile.ZipInfo(name)
            info.external_attr = (stat.S_IFREG | 0o600) << 16  # as Snakemake writes them
            info.create_system = 3
            archive.writestr(info, f"content of {name}")
        archive.writestr(zipfile.ZipInfo("report/data/"), "")
    assert normalize_zip_modes(path) == 3
    with zipfile.ZipFile(path) as archive:
        modes = {i.filename: stat.S_IMODE(i.external_attr >> 16) for i in archive.infolist()}
        assert archive.read("report/report.html") == b"content of report/report.html"
        archive.extractall(tmp_path / "out")
    assert modes == {"report/report.html": 0o644, "report/data/x.js": 0o644, "report/data/": 0o755}
    assert normalize_zip_modes(path) == 0  # already normal: left as it is


def test_run_summary_of_an_unreadable_claims_table_says_so(tmp_path):
    (tmp_path / "results").mkdir()
    (tmp_path / "results/claims.csv").write_text("")
    assert "results/claims.csv could not be read" in run_summary(tmp_path)
    (tmp_path / "results/claims.csv").write_text("a,b\n1,2\n")
    assert "could not be read ('verdict')" in run_summary(tmp_path)


def test_a_throttle_lets_a_long_loop_write_a_line_a_minute(monkeypatch):
    clock = [1000.0]
    monkeypatch.setattr("galu.progress.time.monotonic", lambda: clock[0])
    throttle = Throttle(every_s=60.0)
    assert not throttle()  # not at once
    clock[0] += 59.9
    assert not throttle()
    clock[0] += 0.1
    assert throttle() and not throttle()  # a minute after it was made, then not again
    clock[0] += 60.0
    assert throttle()
    assert Throttle(every_s=0.0)()


def test_a_long_training_and_a_long_simulation_log_their_progress(caplog, monkeypatch):
    from galu.ensembles import training
    from galu.scm import simulation

    # every call of a throttle is due: each step (block) writes its line
    monkeypatch.setattr(training, "Throttle", lambda: lambda: True)
    monkeypatch.setattr(simulation, "Throttle", lambda: lambda: True)
    model = training.nn.Linear(2, 1)
    x, y = training.torch.randn(8, 2), training.torch.randn(8, 1)
    with caplog.at_level(logging.INFO, logger="galu.progress"):
        training.train_ensemble(
            model, lambda out, target: ((out - target) ** 2).mean().reshape(1), x, y, [0],
            training.EnsembleSettings(steps=3, lr=0.01, description="mnist relu"),
        )  # fmt: skip
        simulation.simulate(1, 1, "erf", 0.5, [[0.1]], [[0.2]], 40, [0.0, 1.0], [1], 5, block=16)
    assert caplog.messages == [
        "mnist relu of 1, step 1/3",
        "mnist relu of 1, step 2/3",
        "mnist relu of 1, step 3/3",
        "simulated steps 16/40: alpha 0.4",
        "simulated steps 32/40: alpha 0.8",
        "simulated steps 40/40: alpha 1",
    ]
