"""The warm job server (galu/workflow/running/warm_jobs.py): a script run through it behaves as
`python script` (streams, working directory, environment, argv, exit status, tracebacks), only
forked from a process that already imported the heavy libraries; a killed client takes its job with
it."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from galu.workflow.running.warm_jobs import PID_FILE, SOCKET_ENV, START_WAIT_S, start_server

PROBE = """
import json, os, sys
loaded = "torch" in sys.modules  # before this script imports anything heavy
print(json.dumps({"argv": sys.argv, "cwd": os.getcwd(), "env": os.environ.get("PROBE"),
                  "ppid": os.getppid(), "torch_loaded": loaded, "path0": sys.path[0],
                  "galu_loaded": "galu" in sys.modules}))
print("to stderr", file=sys.stderr)
sys.exit(int(os.environ.get("PROBE_EXIT", "0")))
"""


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    started = start_server(tmp_path_factory.mktemp("warm") / "server.log")
    assert started.ready(), "the warm server did not start"
    yield started
    started.stop()


def _client(script: Path, cwd: Path, socket: str, usage: Path | None = None, **env):
    """Start ``python -m galu.workflow.running.warm_jobs run script [usage]`` as a job's shell
    would."""
    args = [sys.executable, "-m", "galu.workflow.running.warm_jobs", "run", str(script)]
    environ = {**os.environ, SOCKET_ENV: socket, **env}
    return subprocess.Popen(
        [*args, *([str(usage)] if usage else [])],
        cwd=cwd, env=environ, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip


def test_a_script_runs_in_a_warm_child_as_it_would_alone(server, tmp_path):
    script, usage = tmp_path / "probe.py", tmp_path / "usage.json"
    script.write_text(PROBE)
    (tmp_path / "work").mkdir()
    client = _client(
        script, tmp_path / "work", str(server.socket), usage, PROBE="x", PROBE_EXIT="3"
    )
    out, err = client.communicate(timeout=60)
    assert client.returncode == 3, err
    seen = json.loads(out)
    assert seen["argv"] == [str(script)] and seen["cwd"] == str(tmp_path / "work")
    assert seen["env"] == "x" and seen["path0"] == str(tmp_path)
    # Forked from the server, torch already imported; galu left for the job to import.
    assert seen["ppid"] == server.process.pid and seen["torch_loaded"]
    assert not seen["galu_loaded"]
    assert err.strip() == "to stderr"
    recorded = json.loads(usage.read_text())
    assert recorded["code"] == 3 and recorded["cpu_s"] >= 0 and recorded["max_rss_kb"] > 10_000


def test_without_a_server_the_script_runs_cold(tmp_path):
    script = tmp_path / "probe.py"
    script.write_text(PROBE)
    client = _client(script, tmp_path, str(tmp_path / "no.sock"), PROBE_EXIT="0")
    out, err = client.communicate(timeout=60)
    assert client.returncode == 0, err
    seen = json.loads(out)
    assert seen["ppid"] == os.getpid() and not seen["torch_loaded"]  # the client exec'd it


def test_an_exception_prints_its_traceback_and_exits_1(server, tmp_path):
    script = tmp_path / "boom.py"
    script.write_text("def f():\n    raise ValueError('boom')\n\nf()\n")
    client = _client(script, tmp_path, str(server.socket))
    _, err = client.communicate(timeout=60)
    assert client.returncode == 1
    assert "Traceback" in err and "ValueError: boom" in err and 'boom.py", line 2' in err


def test_an_uncaught_exception_goes_to_the_scripts_own_hook_as_in_python(server, tmp_path):
    script = tmp_path / "hooked.py"
    script.write_text(
        "import sys\n"
        "sys.excepthook = lambda kind, value, tb: print('hooked:', value, file=sys.stderr)\n"
        "raise KeyError('k')\n"
    )
    client = _client(script, tmp_path, str(server.socket))
    _, err = client.communicate(timeout=60)
    cold = subprocess.run([sys.executable, str(script)], capture_output=True, text=True)
    assert (client.returncode, err) == (cold.returncode, cold.stderr) == (1, "hooked: 'k'\n")


def _wait_for_pid(path: Path) -> int:
    deadline = time.monotonic() + 60
    while not path.exists() or not path.read_text().strip():
        assert time.monotonic() < deadline, "the job never started"
        time.sleep(0.05)
    return int(path.read_text())


def _gone(pid: int, timeout: float = 10) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        time.sleep(0.05)
    return False


@pytest.mark.parametrize("how", ["SIGTERM forwarded", "SIGKILL of the client"])
def test_the_job_dies_with_its_client(server, tmp_path, how):
    script, pidfile = tmp_path / "sleep.py", tmp_path / "pid"
    script.write_text(f"import os, time\nopen({str(pidfile)!r}, 'w').write(str(os.getpid()))\n"
                      "time.sleep(120)\n")  # fmt: skip
    client = _client(script, tmp_path, str(server.socket))
    child = _wait_for_pid(pidfile)
    assert child != client.pid
    client.send_signal(signal.SIGTERM if how.startswith("SIGTERM") else signal.SIGKILL)
    client.wait(timeout=30)
    assert _gone(child)
    if how.startswith("SIGTERM"):
        assert client.returncode == 128 + signal.SIGTERM


def test_a_job_started_while_the_server_imports_waits_for_it(tmp_path):
    """The first jobs of a run start beside the server: they wait for it instead of paying
    for the same imports cold (the ones a warm child skips)."""
    script = tmp_path / "probe.py"
    script.write_text(PROBE)
    started = start_server(tmp_path / "server.log")
    try:
        assert not started.socket.exists()  # still importing torch and the rest
        client = _client(script, tmp_path, str(started.socket))
        out, err = client.communicate(timeout=120)
        assert client.returncode == 0, err
        seen = json.loads(out)
        assert seen["ppid"] == started.process.pid and seen["torch_loaded"]
    finally:
        started.stop()
    assert not started.socket.parent.exists()  # socket, pid file and folder removed


def test_a_job_whose_server_died_starting_runs_cold_at_once(tmp_path):
    """A server that crashed before answering (here: a zombie its run has not reaped yet)
    is not waited for."""
    script, folder = tmp_path / "probe.py", tmp_path / "warm"
    script.write_text(PROBE)
    folder.mkdir()
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    try:
        deadline = time.monotonic() + 30
        while not Path(f"/proc/{dead.pid}").exists() or "Z" not in _state(dead.pid):
            assert time.monotonic() < deadline
            time.sleep(0.05)
        (folder / PID_FILE).write_text(str(dead.pid))
        began = time.monotonic()
        client = _client(script, tmp_path, str(folder / "jobs.sock"))
        out, err = client.communicate(timeout=120)
        assert client.returncode == 0, err
        assert time.monotonic() - began < START_WAIT_S / 4
        assert json.loads(out)["ppid"] == os.getpid()  # cold: the client exec'd it
    finally:
        dead.wait()


def _state(pid: int) -> str:
    """The process state letter from /proc (``Z``: a zombie)."""
    return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]


FINALIZERS = """
import weakref
preloaded = [f for f in weakref.finalize._registry if f.atexit]
class Thing: pass
kept = Thing()
weakref.finalize(kept, print, "the job's own finalizer ran")
print(len(preloaded))
"""


def test_a_warm_child_skips_the_servers_exit_finalizers_but_runs_its_own(server, tmp_path):
    script = tmp_path / "finalizers.py"
    script.write_text(FINALIZERS)
    client = _client(script, tmp_path, str(server.socket))
    out, err = client.communicate(timeout=60)
    assert client.returncode == 0, err
    assert out.split("\n")[:2] == ["0", "the job's own finalizer ran"]
