"""Shared by the workflow-level reliability tests (kill, concurrency, determinism); no tests.

``TINY`` shrinks every stage to seconds while keeping each job real (same rules, scripts and
library code as the quick scale). The helpers snapshot outputs (mtime and sha256), read
Snakemake's incomplete markers and start a run in its own process group, so a test can
SIGKILL the whole workflow the way a crashed login shell or a power cut would.
"""

from __future__ import annotations

import base64
import os
import signal
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

from galu.provenance import sha256_file

from conftest import copy_repo, run, tool

OUTPUT_FOLDERS = ("results", "figures", "data/processed", "data/raw")
OVERLAY = "reliability.yaml"

_SCM_START = {
    "etas": [0.5],
    "forms": ["exact"],
    "alpha_max": 2.0,
    "sim_etas": [0.5],
    "sim_alpha_max": 1.0,
}
TINY: dict[str, Any] = {
    "scale": "quick",
    "data": {"link": False, "download": False},
    "normalization": {
        "coefficients": {"activations": ["relu", "tanh"]},
        "isometry": {"activations": ["relu", "tanh"], "n": 60, "seeds": 2, "bins": 10},
        "trainability": {
            "activations": ["relu"],
            "widths": [10],
            "depths": [2],
            "seeds": 1,
            "n_train": 200,
            "n_test": 100,
            "epochs": 1,
            "batch_size": 50,
            "lr_sweep": {"lrs": [0.01], "depth": 2, "epochs": 1},
        },
        "spectra": {"activations": ["relu"], "jacobian_samples": 4},
        "correlations": {"activations": ["relu"], "depth": 3, "width": 10, "samples": 8},
    },
    "scm": {
        "ode": {"points": 12},
        "simulation": {"N": 40, "seeds": 1, "n_test": 50, "points": 6, "block": 32},
        "stability": {"eta_points": 6, "plateau_alpha": 2.0},
        "perceptron": {**_SCM_START, "etas": [0.5, 2.5]},
        "relu_k2m2": _SCM_START,
        "relu_k3m2": _SCM_START,
        "erf_k3m2": _SCM_START,
        "relu_k2m3": _SCM_START,
        "schedules": {"settings": ["relu_k2m2"], "constant_etas": [0.5, 1.0], "alpha_max": 2.0,
                      "points": 8, "sim_alpha_max": 1.0},
    },
    "memorization": {
        "underparam": {"ms": [32], "ds": [4], "ks": [2, 4], "seeds": 1, "steps": 30,
                       "batch_size": 0},
        "min_width": {
            "mse": {"m": 32, "d": 4, "out_dims": [1], "models": ["relu", "galu_exact"],
                    "probe_seeds": 1, "width_max": 16, "probes_per_round": 2, "steps": 30,
                    "batch_size": 0},
            "zero_error": {"ms": [32], "ds": [4], "models": ["relu"], "probe_seeds": 1,
                           "width_max": 16, "probes_per_round": 2, "steps": 30,
                           "batch_size": 0},
        },
    },
    "generalization": {
        "datasets": ["clusters", "linear", "parity"],
        "clusters": {"sigma_ys": [0.0, 0.5], "n_train": 60, "n_test": 60, "n_centres": 5,
                     "dim": 5, "width": 8, "seeds": 1, "steps": 20},
        "linear": {"n_trains": [10, 30], "n_test": 60, "dim": 5, "width": 8, "seeds": 1,
                   "steps": 20},
        "parity": {"subset_sizes": [2], "n_train": 60, "n_test": 60, "dim": 6, "width": 8,
                   "seeds": 1, "steps": 20, "batch_size": 0},
    },
}  # fmt: skip


def tiny_repo(dest: Path, overlay: dict[str, Any] | None = None) -> Path:
    """A fresh copy of the repository with ``TINY`` (or ``overlay``) saved as its overlay."""
    root = copy_repo(dest)
    (root / OVERLAY).write_text(yaml.safe_dump(TINY if overlay is None else overlay))
    return root


def smk_command(*args: str) -> list[str]:
    """Snakemake with the overlay; targets first, since --configfile takes several files."""
    return [tool("snakemake"), *args, "--configfile", OVERLAY]


# The overlay names its own mirrors; a site's GALU_DATA_MIRRORS is searched first and would
# change where the tests' files come from.
NO_ENV_MIRRORS = {"GALU_DATA_MIRRORS": ""}


def smk(root: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess:
    return run(smk_command(*args), root, check=check, env=NO_ENV_MIRRORS)


def start(root: Path, *args: str, log: Path) -> subprocess.Popen:
    """Start a workflow run in its own process group (so killpg reaches every job)."""
    with open(log, "w") as out:
        return subprocess.Popen(
            smk_command(*args),
            cwd=root,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            env={**os.environ, "DVC_NO_ANALYTICS": "1", **NO_ENV_MIRRORS},
        )


def kill_group(proc: subprocess.Popen) -> None:
    """SIGKILL Snakemake and every job it started, at once."""
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait(timeout=30)


def wait_for(
    condition: Callable[[], Any],
    timeout: float,
    what: str,
    proc: subprocess.Popen | None = None,
    log: Path | None = None,
) -> Any:
    """Poll ``condition`` until it holds; fail early (with the log) if ``proc`` ends first."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        if proc is not None and proc.poll() is not None:
            tail = log.read_text()[-3000:] if log is not None and log.is_file() else ""
            raise AssertionError(f"the run ended (exit {proc.returncode}) before {what}:\n{tail}")
        time.sleep(0.1)
    raise AssertionError(f"timed out after {timeout:.0f} s waiting for {what}")


def outputs(root: Path) -> list[Path]:
    """Every file under the output folders (temporaries and set-aside files included)."""
    found = []
    for folder in OUTPUT_FOLDERS:
        base = root / folder
        if base.is_dir():
            found += [p for p in base.rglob("*") if p.is_file()]
    return sorted(found)


def snapshot(root: Path) -> dict[str, tuple[int, str]]:
    """Relative path -> (mtime in ns, sha256) of every file under the output folders."""
    return {
        p.relative_to(root).as_posix(): (p.stat().st_mtime_ns, sha256_file(p))
        for p in outputs(root)
    }


def csv_bytes(root: Path) -> dict[str, bytes]:
    """Relative path -> bytes of every CSV under results/."""
    return {
        p.relative_to(root).as_posix(): p.read_bytes()
        for p in sorted((root / "results").rglob("*.csv"))
    }


def incomplete(root: Path) -> set[str]:
    """Outputs Snakemake marks as being made by a job that has not finished.

    The file persistence keeps one marker per output under .snakemake/incomplete/, named by
    the urlsafe base64 of the path (long names split into folders).
    """
    base = root / ".snakemake" / "incomplete"
    if not base.is_dir():
        return set()
    found = set()
    for marker in base.rglob("*"):
        if marker.is_file() and marker.name != "migration_underway":
            encoded = "".join(marker.relative_to(base).parts)
            found.add(base64.urlsafe_b64decode(encoded).decode())
    return found


def lock_files(root: Path) -> list[Path]:
    locks = root / ".snakemake" / "locks"
    return sorted(locks.glob("*.lock")) if locks.is_dir() else []
