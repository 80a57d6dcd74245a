"""The suite's warm commands (tests/warm_commands.py): a `snakemake` or `galu` command forked from
the worker's server prints, exits and sees what the same command run as a fresh process does."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
import warm_commands

from galu.workflow.running.warm_jobs import SOCKET_ENV

from conftest import REPO, tool

PROBE = """
import json, os, sys
import snakemake.workflow
print(json.dumps({"argv": sys.argv, "cwd": os.getcwd(), "env": os.environ.get("PROBE"),
                  "ppid": os.getppid(), "path0": sys.path[0], "main": __name__,
                  "rundir": snakemake.workflow.Workflow._rundir,
                  "galu_loaded": any(m.split(".")[0] == "galu" for m in sys.modules)}))
"""


@pytest.fixture(scope="module")
def warm():
    started = warm_commands.server()
    if started is None:
        pytest.skip(f"{warm_commands.ENABLE_ENV}=0: every command runs cold")
    return started


def _cold(cmd: list[str], cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run(cmd, cwd=cwd, env=dict(os.environ), capture_output=True, text=True)


@pytest.mark.parametrize(
    "cmd",
    [
        [tool("galu"), "--help"],
        [tool("galu"), "audit", "--folders", "no-such-folder"],  # exit 2, one line
        [sys.executable, "-m", "galu.workflow.cli", "plan", "--speed", "inf"],
        [tool("snakemake"), "--version"],
        [sys.executable, "-m", "snakemake", "-n", "--configfile", "config/tiny.yaml", "nope"],
    ],
    ids=["galu_help", "galu_usage_error", "galu_module", "snakemake", "snakemake_module"],
)
def test_a_warm_command_prints_and_exits_as_a_fresh_one(warm, cmd):
    forked, cold = warm_commands.run(cmd, REPO, dict(os.environ)), _cold(cmd, REPO)
    assert (forked.returncode, forked.stdout) == (cold.returncode, cold.stdout)
    # Snakemake's log names its date and the run's times: compare the lines without digits.
    assert _no_digits(forked.stderr) == _no_digits(cold.stderr)
    assert forked.stdout or forked.stderr


def _no_digits(text: str) -> list[str]:
    return [line for line in text.splitlines() if not any(c.isdigit() for c in line)]


def test_the_launched_script_sees_argv_cwd_env_and_path_of_a_fresh_python(warm, tmp_path):
    script, work = tmp_path / "probe.py", tmp_path / "work"
    script.write_text(PROBE)
    work.mkdir()
    argv = [warm_commands.LAUNCH, str(script), "a", "b c"]
    done = warm_commands.forked(warm, argv, work, {**os.environ, "PROBE": "x"})
    assert done.returncode == 0, done.stderr
    seen = json.loads(done.stdout)
    assert seen["argv"] == [str(script), "a", "b c"] and seen["main"] == "__main__"
    assert seen["cwd"] == seen["rundir"] == str(work) and seen["env"] == "x"
    assert seen["path0"] == str(tmp_path) and seen["ppid"] == warm.process.pid
    assert not seen["galu_loaded"]  # a copy's galu is imported from disk, never the server's


def test_python_m_puts_the_working_directory_first_on_the_path(warm, tmp_path):
    (tmp_path / "probe_module.py").write_text(PROBE)
    argv = [warm_commands.LAUNCH, "-m", "probe_module", "x"]
    done = warm_commands.forked(warm, argv, tmp_path, dict(os.environ))
    assert done.returncode == 0, done.stderr
    seen = json.loads(done.stdout)
    assert seen["argv"] == [str(tmp_path / "probe_module.py"), "x"]
    assert seen["path0"] == str(tmp_path) and seen["main"] == "__main__"


def test_a_command_past_its_timeout_is_killed(warm, tmp_path):
    script = tmp_path / "sleep.py"
    script.write_text("import os, time\nprint(os.getpid(), flush=True)\ntime.sleep(60)\n")
    with pytest.raises(subprocess.TimeoutExpired) as expired:
        warm_commands.forked(warm, [str(script)], tmp_path, dict(os.environ), timeout=2)
    pid = int(expired.value.stdout)
    deadline = time.monotonic() + 10
    while _alive(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _alive(pid)


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def test_runs_use_the_workers_server_for_their_jobs_unless_the_caller_chose(warm):
    env = dict(os.environ)
    assert warm_commands.job_socket(env) == {**env, SOCKET_ENV: str(warm.socket)}
    own = {**env, SOCKET_ENV: ""}  # the run starts its own server
    assert warm_commands.job_socket(own) == own


def test_an_environment_the_interpreter_reads_at_start_gets_a_fresh_one(warm, tmp_path):
    # PYTHONPATH is read as an interpreter starts: a forked child would keep the server's
    # sys.path and import the installed galu instead of this one.
    fake = tmp_path / "fake" / "galu" / "workflow"
    fake.mkdir(parents=True)
    for folder in (fake, fake.parent):
        (folder / "__init__.py").write_text("")
    (fake / "cli.py").write_text("print('the galu on PYTHONPATH')\n")
    env = {**os.environ, "PYTHONPATH": str(tmp_path / "fake")}
    cmd = [sys.executable, "-m", "galu.workflow.cli", "--help"]
    done = warm_commands.run(cmd, tmp_path, env)
    assert (done.returncode, done.stdout) == (0, "the galu on PYTHONPATH\n")
    assert SOCKET_ENV not in warm_commands.job_socket(env)  # nor do its runs' jobs go warm
