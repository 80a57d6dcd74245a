"""Kill -9 of the whole workflow in the middle of each kind of stage, then the documented rerun.

One workflow (the tiny overlay, one core) is started five times and SIGKILLed, process
group and all, while a job of the stage under test is running: a download, a dataset
conversion, a training, an ODE integration and a figure. After each kill:

- no file under its final name is half-written: every output is either consistent with its
  provenance sidecar or belongs to a job Snakemake marked as unfinished (and will redo);
- the stale lock makes the documented command fail with Snakemake's explanation, naming
  ``--unlock``; that failed run changes nothing, and ``snakemake --unlock`` clears it.

At the end the documented command (README: ``snakemake --cores 2``) completes the workflow;
every output that was finished at any kill is untouched (same mtime and sha256), every
output of a killed job has been redone, and the audit finds nothing.
"""

from __future__ import annotations

import copy
import time
from dataclasses import dataclass
from pathlib import Path

import pandas as pd
import pytest
from test_reliability_support import (
    TINY,
    incomplete,
    kill_group,
    lock_files,
    smk,
    snapshot,
    start,
    tiny_repo,
    wait_for,
)

from galu.workflow.trust.audit import audit_tree

pytestmark = pytest.mark.slow

FINAL = ["results/claims.csv", "figures/normalization/activations.png"]
DOCUMENTED = ["--cores", "2"]  # README, "Running parts of it" / "Rerunning after a change"


@dataclass(frozen=True)
class Phase:
    """A stage to kill: the target to favour, its outputs' prefix and its jobs' log files."""

    name: str
    prioritize: str
    outputs: tuple[str, ...]
    logs: str


PHASES = [
    Phase("download", "data/raw/cifar10/sources.json", ("data/raw/",), "logs/data/download_*"),
    Phase("conversion", "data/processed/cifar10.npz", ("data/processed/",), "logs/data/prepare_*"),
    Phase(
        "training",
        "results/normalization/runs/relu_depth2_curves.csv",
        ("results/normalization/lr_sweep/", "results/normalization/runs/"),
        "logs/normalization/[lt][rr]*",  # lr_sweep_*.log, train_*.log
    ),
    Phase("ode", "results/scm/runs/relu_k3m2_ode.csv", ("results/scm/runs/",), "logs/scm/*_ode*"),
    Phase(
        "figure",
        "figures/normalization/activations.png",
        ("figures/",),
        "logs/normalization/plot_*",
    ),
]


def _overlay() -> dict:
    tiny = copy.deepcopy(TINY)
    tiny["scm"]["relu_k3m2"]["alpha_max"] = 1000.0  # an ODE that runs a few seconds
    return tiny


def _job_running(root: Path, phase: Phase, since: float) -> bool:
    """A job of ``phase`` is marked unfinished and its script has logged that it started."""
    if not any(p.startswith(phase.outputs) for p in incomplete(root)):
        return False
    for log in root.glob(phase.logs):
        if log.stat().st_mtime >= since and "started" in log.read_text(errors="replace"):
            return True
    return False


def _all_files(root: Path) -> list[Path]:
    return [p for d in ("results", "figures", "data") for p in (root / d).rglob("*") if p.is_file()]


def _final_outputs(root: Path) -> list[Path]:
    """Files under their final names (not temporaries, partial downloads or set-aside files)."""
    skip = (".tmp", ".part", ".rejected")
    return [p for p in _all_files(root) if not p.name.endswith(skip)]


def _check_after_kill(root: Path, unfinished: set[str]) -> None:
    for finding in audit_tree(root):
        assert finding.path in unfinished, f"a killed run left {finding}"
    for path in _final_outputs(root):
        if path.suffix == ".csv":
            pd.read_csv(path)  # complete, parseable: never a half-written table


def test_kill_9_in_each_stage_then_the_documented_rerun(tmp_path):
    root = tiny_repo(tmp_path / "repo", _overlay())
    finished: dict[str, tuple[int, str]] = {}  # output -> (mtime, sha256) when first seen done
    redo: dict[str, int] = {}  # output of a killed job -> time of the kill (ns)
    for phase in PHASES:
        since = time.time() - 1
        log = tmp_path / f"{phase.name}.log"
        proc = start(root, *FINAL, "--cores", "1", "--prioritize", phase.prioritize, log=log)
        try:
            running = lambda p=phase, s=since: _job_running(root, p, s)
            wait_for(running, 240, f"a {phase.name} job was running", proc, log)
        finally:
            kill_group(proc)
        killed_at = time.time_ns()
        unfinished = incomplete(root)
        assert any(p.startswith(phase.outputs) for p in unfinished), (phase.name, unfinished)
        _check_after_kill(root, unfinished)
        redo.update({p: killed_at for p in unfinished if p not in redo})
        state = snapshot(root)
        for path, stamp in state.items():
            if path not in unfinished and not path.endswith((".tmp", ".part")):
                finished.setdefault(path, stamp)
        # The stale lock stops the documented command, which says how to clear it ...
        assert lock_files(root)
        blocked = smk(root, *FINAL, *DOCUMENTED, check=False)
        message = blocked.stdout + blocked.stderr
        assert blocked.returncode != 0 and "Directory cannot be locked" in message
        assert "--unlock" in message and "kill signal" in message
        assert snapshot(root) == state  # ... and touches nothing
        smk(root, "--unlock")
        assert not lock_files(root)
    # A kill that lands inside an atomic write leaves a hidden temporary (timing decides).
    leftovers = [p for p in _all_files(root) if p.name.endswith(".tmp")]
    done = smk(root, *FINAL, *DOCUMENTED)
    assert "Complete log" in done.stdout + done.stderr
    assert audit_tree(root) == []
    # The half-written temporaries of the killed jobs were deleted before the rerun started.
    assert [p for p in _all_files(root) if p.name.endswith(".tmp")] == []
    assert ("left by a job killed while writing; deleted it" in done.stderr) == bool(leftovers)
    after = snapshot(root)
    changed = [p for p, stamp in finished.items() if after.get(p) != stamp]
    assert changed == [], f"finished outputs recomputed or lost: {changed}"
    for path, killed_at in redo.items():
        assert path in after, f"{path} of a killed job was not redone"
        assert after[path][0] > killed_at, f"{path} of a killed job survived the rerun"
    assert {p.split("/")[0] for p in redo} >= {"data", "results", "figures"}
