"""Warm job interpreters: a workflow run's Python script jobs skip the interpreter start-up.

Every ``script:`` job of a local Snakemake run is a fresh Python that imports torch, pandas,
SciPy and matplotlib before doing any work: 2-3.5 s a job on a 2-core machine, most of the
time of a small job. A run's main process starts one *server* (:func:`start_server`), which
imports those libraries once and then, for each job, forks a child that runs the job's
script (Snakemake's generated file, preamble and all) exactly as ``python script.py`` would:
same working directory, environment, standard streams (passed over the socket), exit status,
``__main__``; galu's own modules are imported by the child from disk, as a cold job does.

Only jobs with one thread are sent (the server starts with the thread variables Snakemake
sets for such a job, so the libraries' thread pools are the ones a cold job gets); any other
job, or any failure to reach the server, runs cold. A job that starts while the server is
still importing waits for it (:data:`START_WAIT_S` at most, and only while the server's process
lives): a cold job would spend those seconds importing the same libraries, beside the server,
on the same cores. A run of fewer than ``MIN_JOBS`` script jobs starts no server. A child
dies with its client: SIGTERM and SIGINT are forwarded, and a client that disappears
(SIGKILL) has its child killed. The server lives in the run's process group and stops when
the run ends or when its parent goes.
The child's CPU time and peak memory (from ``wait4``) are added to the job's benchmark
record (:func:`account`), which would otherwise only see the waiting client.

``GALU_WARM_JOBS=0`` turns it off (every job cold). The results do not depend on it:
``tests/test_reliability_determinism.py`` compares a warm run's CSVs with a cold one's,
byte for byte.
"""

from __future__ import annotations

import gc
import json
import os
import select
import signal
import socket
import struct
import sys
import time
from pathlib import Path

ENABLE_ENV = "GALU_WARM_JOBS"
# Fewer script jobs than this run cold: the server's own imports (a few seconds of one core)
# would cost them more than they save.
MIN_JOBS = 4
SOCKET_ENV = "GALU_WARM_SOCKET"
# How long a job waits for a server that is still starting (its imports take a few seconds of
# one core) before it runs cold; the server's process id is in this file beside the socket.
START_WAIT_S = 60.0
PID_FILE = "server.pid"
# What Snakemake's shell() sets for a job of one thread (snakemake/shell.py).
ONE_THREAD = {
    name: "1"
    for name in (
        "OMP_NUM_THREADS",
        "GOTO_NUM_THREADS",
        "OPENBLAS_NUM_THREADS",
        "MKL_NUM_THREADS",
        "VECLIB_MAXIMUM_THREADS",
        "NUMEXPR_NUM_THREADS",
    )
}
# Imported once by the server; everything else (galu included) by each job from disk.
PRELOAD = (
    "numpy",
    "pandas",
    "scipy.linalg",
    "scipy.special",
    "scipy.stats",
    "torch",
    "matplotlib",
    "matplotlib.pyplot",
    # Every figure job saves a PNG and a PDF: the PDF backend (with fontTools' subsetter, which
    # embeds the fonts) and Pillow's PNG writer are otherwise imported by each of them.
    "matplotlib.backends.backend_agg",
    "matplotlib.backends.backend_pdf",
    "fontTools.subset",
    "PIL.PngImagePlugin",
    "yaml",
    "jsonschema",
    "snakemake.script",
    "snakemake.io",
    "snakemake.logging",
)
_HEADER = struct.Struct("!I")


def enabled(environ=os.environ) -> bool:
    """Whether warm jobs are wanted (``GALU_WARM_JOBS`` unset, or anything but ``0``)."""
    return environ.get(ENABLE_ENV, "1") != "0"


def _send(conn: socket.socket, message: dict, fds: list[int] | None = None) -> None:
    data = json.dumps(message).encode()
    payload = _HEADER.pack(len(data)) + data
    if fds:
        socket.send_fds(conn, [payload], fds)
    else:
        conn.sendall(payload)


def _receive(conn: socket.socket, fds: int = 0) -> tuple[dict | None, list[int]]:
    """One message (and up to ``fds`` descriptors); ``None`` when the peer has gone."""
    head, got, _, _ = socket.recv_fds(conn, _HEADER.size, fds) if fds else (None, [], 0, 0)
    if head is None:
        head = conn.recv(_HEADER.size, socket.MSG_WAITALL)
    if len(head) < _HEADER.size:
        return None, got
    (size,) = _HEADER.unpack(head)
    data = b""
    while len(data) < size:
        chunk = conn.recv(size - len(data))
        if not chunk:
            return None, got
        data += chunk
    return json.loads(data), got


# -- the server ------------------------------------------------------------------------------


def serve(path: str, parent: int, preload: tuple[str, ...] = ()) -> None:
    """Accept jobs on the Unix socket ``path`` until ``parent`` (the run) exits; ``preload``:
    more modules to import beside :data:`PRELOAD` (the test suite's server of whole commands,
    tests/warm_commands.py)."""
    import importlib
    import weakref

    for name in (*PRELOAD, *preload):
        importlib.import_module(name)
    # `python -m` imported galu from the working directory: each job imports it afresh, from
    # where a cold `python <script>` would (sys.path[0] is set per job).
    for name in [m for m in sys.modules if m == "galu" or m.startswith("galu.")]:
        del sys.modules[name]
    # The preloaded libraries' exit-time finalizers (torch unregisters its operator libraries)
    # are the server's: a child runs its own atexit hooks and then leaves by os._exit, so
    # running these in every child would be wasted work (about 5 % of a small job's CPU).
    for finalizer in list(weakref.finalize._registry):
        finalizer.atexit = False
    # The preloaded objects go to the collector's permanent generation: a child's collections
    # then never walk them, which would copy their pages from the server (copy-on-write).
    gc.collect()
    gc.freeze()
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(path)
    listener.listen(16)
    running: dict[int, socket.socket] = {}  # child pid -> its client's connection
    while os.getppid() == parent:
        conns = list(running.values())
        ready, _, _ = select.select([listener, *conns], [], [], 0.2)
        for conn in ready:
            if conn is listener:
                client, _ = listener.accept()
                pid = _start_job(client, [listener, *conns])
                if pid:
                    running[pid] = client
            else:  # a client never writes after its request: this is its end
                pid = next(p for p, c in running.items() if c is conn)
                _kill(pid)
        _reap(running)
    for pid in running:
        _kill(pid)
    # The run is gone without stopping us (killed): leave no socket or folder behind.
    _remove_socket(Path(path))


def _start_job(client: socket.socket, others: list[socket.socket]) -> int | None:
    """Fork the child of one request; ``others``: the server's sockets, closed in the child
    (it stays in the run's process group, so that a kill -9 of the run reaches it)."""
    request, fds = _receive(client, fds=3)
    if request is None or len(fds) != 3:
        client.close()
        return None
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid == 0:  # the job
        for conn in [*others, client]:
            conn.close()
        _run_job(request, fds)
    for fd in fds:
        os.close(fd)
    _send(client, {"pid": pid})
    return pid


def _run_job(request: dict, fds: list[int]) -> None:
    """In the forked child: become ``python <script> [args]`` and never return."""
    import atexit
    import logging
    import random
    import runpy

    import numpy as np

    code = 1
    try:
        for target, fd in enumerate(fds):
            os.dup2(fd, target)
            os.close(fd)
        os.chdir(request["cwd"])
        os.environ.clear()
        os.environ.update(request["env"])
        sys.argv = request.get("argv") or [request["script"]]
        sys.path[0] = os.path.dirname(os.path.abspath(request["script"]))
        signal.signal(signal.SIGINT, signal.default_int_handler)
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        random.seed()  # a fresh interpreter seeds these from the OS; the fork shares one state
        np.random.seed()  # noqa: NPY002 (the legacy global state a fresh numpy has)
        runpy.run_path(request["script"], run_name="__main__")
        code = 0
    except SystemExit as stop:
        if stop.code is None or isinstance(stop.code, int):
            code = stop.code or 0
        else:
            print(stop.code, file=sys.stderr)
            code = 1
    except BaseException as error:
        # What the interpreter does with an uncaught exception (a command may install its own
        # hook): the hook prints it, and an interrupt exits as 130.
        sys.excepthook(type(error), error, error.__traceback__)
        code = 130 if isinstance(error, KeyboardInterrupt) else 1
    finally:
        try:
            atexit._run_exitfuncs()
            logging.shutdown()
            sys.stdout.flush()
            sys.stderr.flush()
        finally:
            os._exit(code)


def _reap(running: dict[int, socket.socket]) -> None:
    """Send each finished child's exit status and resource use to its client."""
    while running:
        try:
            pid, status, usage = os.wait4(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
        conn = running.pop(pid, None)
        if conn is None:
            continue
        code = os.waitstatus_to_exitcode(status)
        cpu = usage.ru_utime + usage.ru_stime
        result = {"code": code, "cpu_s": cpu, "max_rss_kb": usage.ru_maxrss}
        try:
            _send(conn, result)
        except OSError:
            pass
        conn.close()


def _kill(pid: int, signum: int = signal.SIGKILL) -> None:
    """Send ``signum`` to ``pid`` unless it has already gone."""
    try:
        os.kill(pid, signum)
    except ProcessLookupError:
        pass


def _remove_socket(path: Path) -> None:
    """The server's socket, its pid file and their private folder, if still there."""
    path.unlink(missing_ok=True)
    (path.parent / PID_FILE).unlink(missing_ok=True)
    try:
        path.parent.rmdir()
    except OSError:
        pass


# -- the client (run by the job's shell command) --------------------------------------------


def run_job(script: str, usage_file: str | None = None) -> int:
    """Run ``script`` in a warm child if the server answers, else in this process's place
    (``exec``, a cold job); record the child's CPU seconds and peak memory in ``usage_file``."""
    conn = _connect(os.environ.get(SOCKET_ENV, ""), wait=START_WAIT_S)
    if conn is None:
        os.execv(sys.executable, [sys.executable, script])
    child = submit(conn, [script], os.getcwd(), dict(os.environ), [0, 1, 2])
    if child is None:  # the server went away before forking: run cold
        os.execv(sys.executable, [sys.executable, script])

    def forward(signum, _frame):
        _kill(child, signum)

    for signum in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(signum, forward)
    result = job_result(conn)
    if result is None:
        print("galu: the warm job server stopped during this job", file=sys.stderr)
        return 1
    if usage_file:
        Path(usage_file).write_text(json.dumps(result))
    return int(result["code"]) if result["code"] >= 0 else 128 - int(result["code"])


def submit(conn: socket.socket, argv: list[str], cwd: str, env: dict, fds: list[int]) -> int | None:
    """Ask the server to run ``python argv[0] argv[1:]`` in ``cwd`` with ``env`` and ``fds`` as
    its standard streams; the child's pid, or ``None`` when the server went away first. Its
    result (``code``, ``cpu_s``, ``max_rss_kb``) is the connection's next message."""
    _send(conn, {"script": argv[0], "argv": argv, "cwd": cwd, "env": env}, fds=fds)
    started, _ = _receive(conn)
    return None if started is None else int(started["pid"])


def job_result(conn: socket.socket) -> dict | None:
    """The result of the child :func:`submit` started (``code``: its exit status, or minus the
    signal that ended it; ``cpu_s``; ``max_rss_kb``), waited for within the connection's
    timeout (``TimeoutError`` past it); ``None`` when the server went away first."""
    result, _ = _receive(conn)
    return result


def _connect(path: str, wait: float = 0.0) -> socket.socket | None:
    """A connection to the server at ``path``; while its socket is not there yet but the
    server's process lives, try again for up to ``wait`` seconds."""
    if not path:
        return None
    deadline = time.monotonic() + wait
    while True:
        conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            conn.connect(path)
            return conn
        except OSError:
            conn.close()
        if time.monotonic() >= deadline or not _starting(Path(path)):
            return None
        time.sleep(0.05)


def _starting(socket_path: Path) -> bool:
    """Whether the server of ``socket_path`` is still starting: its socket is not bound yet
    and the process named by its pid file is alive."""
    import psutil

    if socket_path.exists():
        return False
    try:
        server = psutil.Process(int((socket_path.parent / PID_FILE).read_text()))
        return server.status() != psutil.STATUS_ZOMBIE  # a crashed server not yet reaped
    except (OSError, ValueError, psutil.Error):
        return False


# -- the run's side: start, use from Snakemake, stop -----------------------------------------


class Server:
    """The server of one workflow run: its process, socket and log."""

    def __init__(self, process, folder: Path) -> None:
        self.process, self.folder = process, folder
        self.socket = folder / "jobs.sock"

    def ready(self, timeout: float = 60.0) -> bool:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                return False
            if self.socket.exists():
                return True
            time.sleep(0.05)
        return False

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except Exception:
                self.process.kill()
        _remove_socket(self.socket)


def start_server(log: Path, preload: tuple[str, ...] = ()) -> Server:
    """Start the server beside this process (in its process group), logging to ``log``;
    ``preload``: more modules for it to import (:func:`serve`)."""
    import subprocess
    import tempfile

    # A short private folder: a Unix socket path may not exceed ~100 bytes.
    folder = Path(tempfile.mkdtemp(prefix="galu-warm-"))
    log.parent.mkdir(parents=True, exist_ok=True)
    with open(log, "ab") as sink:
        process = subprocess.Popen(
            [sys.executable, "-m", "galu.workflow.running.warm_jobs", "serve",
             str(folder / "jobs.sock"), str(os.getpid()), *preload],
            stdin=subprocess.DEVNULL, stdout=sink, stderr=subprocess.STDOUT,
            env={**os.environ, **ONE_THREAD},
        )  # fmt: skip
    (folder / PID_FILE).write_text(str(process.pid))
    return Server(process, folder)


def account(bench_record, usage_file: Path) -> None:
    """Add a warm job's own CPU time and peak memory to Snakemake's benchmark record."""
    try:
        usage = json.loads(usage_file.read_text())
    except (OSError, ValueError):
        return
    if bench_record is not None:
        bench_record.cpu_time = (bench_record.cpu_time or 0) + usage["cpu_s"]
        bench_record.cpu_usage = (bench_record.cpu_usage or 0) + usage["cpu_s"]
        rss_mb = usage["max_rss_kb"] / 1024
        bench_record.max_rss = max(bench_record.max_rss or 0, rss_mb)


def main(argv: list[str]) -> int:
    if argv[:1] == ["serve"] and len(argv) >= 3:
        serve(argv[1], int(argv[2]), tuple(argv[3:]))
        return 0
    if argv[:1] == ["run"] and len(argv) in (2, 3):
        return run_job(*argv[1:])
    usage = "serve SOCKET PARENT_PID [MODULE ...] | run SCRIPT [USAGE]"
    print(f"usage: python -m galu.workflow.running.warm_jobs {usage}", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
