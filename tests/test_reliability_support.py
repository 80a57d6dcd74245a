"""Shared by the workflow-level reliability tests (kill, concurrency, determinism); no tests.

``TINY`` (the overlay ``config/tiny.yaml``) shrinks every stage to seconds while keeping each
job real (same rules, scripts and library code as the quick scale). The helpers snapshot
outputs (mtime and sha256), read Snakemake's incomplete markers and start a run in its own
process group, so a test can SIGKILL the whole workflow the way a crashed login shell or a
power cut would.
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

from galu.workflow.provenance import sha256_file

from conftest import REPO, copy_repo, run, tool

OUTPUT_FOLDERS = ("results", "figures", "data/processed", "data/raw")
OVERLAY = "reliability.yaml"

# The tiny configuration, a file a person can run too (see its header).
TINY_FILE = "config/tiny.yaml"
TINY: dict[str, Any] = yaml.safe_load((REPO / TINY_FILE).read_text())


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


def start(root: Path, *args: str, log: Path, env: dict[str, str] | None = None) -> subprocess.Popen:
    """Start a workflow run in its own process group (so killpg reaches every job), with
    ``env`` added to the environment."""
    with open(log, "w") as out:
        return subprocess.Popen(
            smk_command(*args),
            cwd=root,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            env={**os.environ, "DVC_NO_ANALYTICS": "1", **NO_ENV_MIRRORS, **(env or {})},
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
