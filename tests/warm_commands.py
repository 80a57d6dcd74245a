"""The suite's `snakemake` and `galu` commands, forked from a warm interpreter.

Each of the suite's ~250 `snakemake` and `galu` calls used to be a fresh Python: `snakemake`
alone spends about 1 s of CPU importing itself and its plugins before it reads our Snakefile,
and each run started its own warm job server (torch, pandas, SciPy, matplotlib: 1-2 s) for a
handful of jobs. A pytest worker instead keeps one server of galu/workflow/running/warm_jobs.py,
with Snakemake's command line imported too, and :func:`run` asks it to fork each command: the child
runs the console script as `python <script> args` would (argv, working directory,
environment, standard streams, exit status; galu imported from disk, never preloaded). The
runs these commands start send their script jobs to the same server (``GALU_WARM_SOCKET``)
instead of starting their own.

What keeps real processes: commands a test starts in the background to signal or kill
(`test_reliability_support.start`), any call that sets ``GALU_WARM_SOCKET`` itself (the tests
of a run's own server), and any whose environment sets what an interpreter reads as it starts
(``PYTHONPATH``, the locale: :data:`STARTUP_PREFIXES`) otherwise than the server's.
``GALU_TEST_WARM=0`` runs every command cold, as before.
"""

from __future__ import annotations

import io
import os
import signal
import socket
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

from galu.workflow.running.warm_jobs import SOCKET_ENV, Server, job_result, start_server, submit

ENABLE_ENV = "GALU_TEST_WARM"
BIN = Path(sys.executable).parent
# The commands this server runs (console scripts, or ``python -m`` of these modules); anything
# else is a plain subprocess.
SCRIPTS = {str(BIN / "snakemake"), str(BIN / "galu")}
MODULES = {"snakemake", "galu.workflow.cli"}
# Imported by `snakemake` before it reads a Snakefile (its command line, API, scheduler and
# every installed plugin's registry entry).
PRELOAD = ("snakemake.cli", "snakemake.api", "snakemake.workflow", "psutil")
LAUNCH = str(Path(__file__).with_name("warm_launch.py"))
# Read by an interpreter as it starts (sys.path, hash seed, encodings, warnings): a command or
# run whose environment sets them otherwise than the server's gets a fresh interpreter.
STARTUP_PREFIXES = ("PYTHON", "LANG", "LC_")
_SERVER: dict[int, Server | None] = {}
_STARTED_WITH: dict[int, dict[str, str]] = {}
_STARTING = threading.Lock()  # tests run commands from several threads


def server() -> Server | None:
    """This worker's server, started on first use; ``None`` when it cannot start."""
    if os.environ.get(ENABLE_ENV, "1") == "0":
        return None
    with _STARTING:
        return _server()


def _server() -> Server | None:
    if os.getpid() not in _SERVER:  # keyed by pid: a forked worker starts its own
        log = Path(tempfile.mkdtemp(prefix="galu-test-warm-")) / "server.log"
        _STARTED_WITH[os.getpid()] = _startup(os.environ)
        started = start_server(log, PRELOAD)
        _SERVER[os.getpid()] = started if started.ready(timeout=120) else None
    return _SERVER[os.getpid()]


def job_socket(env: dict[str, str]) -> dict[str, str]:
    """``env`` with this worker's server as the job server of the runs it starts, unless the
    caller chose one (or none: an empty value) itself."""
    warm = server() if SOCKET_ENV not in env else None
    return {**env, SOCKET_ENV: str(warm.socket)} if warm and _same_startup(env) else env


def run(cmd: list[str], cwd: Path, env: dict[str, str], timeout: float | None = None):
    """``subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=...)``,
    forked from the warm server when ``cmd`` is `snakemake` or `galu` and the server runs."""
    cmd = list(map(str, cmd))
    warm = server() if _launchable(cmd) else None
    if warm is None or not _same_startup(env):
        return subprocess.run(
            cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout
        )
    args = cmd[1:] if cmd[0] == sys.executable else cmd
    done = forked(warm, [LAUNCH, *args], cwd, env, timeout)
    return subprocess.CompletedProcess(cmd, done.returncode, done.stdout, done.stderr)


def forked(warm: Server, argv: list[str], cwd: Path, env: dict[str, str], timeout=None):
    """``python argv[0] argv[1:]`` forked from ``warm``, standard input empty, its output
    captured as text; the child is killed at ``timeout`` (subprocess.TimeoutExpired)."""
    with (
        open(os.devnull, "rb") as stdin,
        tempfile.TemporaryFile() as out,
        tempfile.TemporaryFile() as err,
        socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as conn,
    ):
        conn.connect(str(warm.socket))
        child = submit(conn, argv, str(Path(cwd).resolve()), dict(env),
                       [stdin.fileno(), out.fileno(), err.fileno()])  # fmt: skip
        if child is None:
            raise RuntimeError(f"the suite's warm server ({warm.socket}) went away")
        conn.settimeout(timeout)
        try:
            result = job_result(conn)
        except TimeoutError:
            os.kill(child, signal.SIGKILL)
            raise subprocess.TimeoutExpired(argv, timeout, _text(out), _text(err)) from None
        if result is None:
            raise RuntimeError(f"the suite's warm server ({warm.socket}) stopped during {argv}")
        return subprocess.CompletedProcess(argv, int(result["code"]), _text(out), _text(err))


def _startup(env) -> dict[str, str]:
    return {k: v for k, v in env.items() if k.startswith(STARTUP_PREFIXES)}


def _same_startup(env: dict[str, str]) -> bool:
    return _startup(env) == _STARTED_WITH.get(os.getpid())


def _launchable(cmd: list[str]) -> bool:
    if cmd[:1] == [sys.executable]:
        return len(cmd) > 2 and cmd[1] == "-m" and cmd[2] in MODULES
    return cmd[:1] != [] and cmd[0] in SCRIPTS


def _text(stream) -> str:
    """What ``text=True`` would have made of a stream's bytes (locale encoding, universal
    newlines)."""
    stream.seek(0)
    return io.TextIOWrapper(io.BytesIO(stream.read())).read()
