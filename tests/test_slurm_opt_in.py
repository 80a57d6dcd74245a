"""Without GALU_TEST_SLURM=1 the SLURM tests install nothing and start nothing: they skip,
saying how to enable them (even with CI=true and as root)."""

from __future__ import annotations

import os
import sys

from conftest import REPO, run

# Commands start.sh would run to install or start the cluster: stand-ins that leave a mark.
WATCHED = ("apt-get", "munged", "mariadbd", "slurmdbd", "slurmctld", "slurmd")


def test_without_the_opt_in_the_slurm_tests_skip_saying_how_to_enable_them(tmp_path):
    shims, marks, state = tmp_path / "bin", tmp_path / "marks", tmp_path / "state"
    shims.mkdir()
    marks.mkdir()
    for name in WATCHED:
        shim = shims / name
        shim.write_text(f"#!/bin/sh\ntouch {marks / name}\n")
        shim.chmod(0o755)
    path = f"{shims}:{os.environ['PATH']}"
    env = {"GALU_TEST_SLURM": "", "CI": "true", "PATH": path, "GALU_SLURM_STATE": str(state)}
    out = run(
        [sys.executable, "-m", "pytest", "tests/test_slurm.py", "-rs", "-p", "no:cacheprovider",
         "-o", "addopts=", "--basetemp", str(tmp_path / "pytest")],
        REPO, env=env,
    ).stdout  # fmt: skip
    assert "passed" not in out and "failed" not in out, out
    assert " 6 skipped" in out, out
    assert "set GALU_TEST_SLURM=1 to run them" in out, out
    assert "slurm-wlm, slurmdbd, munge and mariadb-server" in out, out
    assert sorted(p.name for p in marks.iterdir()) == []  # nothing installed or started
    assert not state.exists()
