"""The test suite's CPU time per test and per module, from a cgroup per pytest worker.

`--durations` gives wall time, which on 2 cores with 2 workers mixes a test's own work with
its neighbour's. This plugin puts each worker (and so every process it starts: Snakemake,
its jobs, the warm servers, dvc, git) in a cgroup of its own (root; cgroup v1 `cpuacct` or
v2) and records, per test, the group's CPU seconds used from setup to teardown:

    PYTHONPATH=benchmarks .venv/bin/pytest -p suite_cpu -n 2 --dist loadfile tests/
    .venv/bin/python benchmarks/suite_cpu.py /tmp/galu-suite-cpu --top 25

Jobs that another service runs (the test cluster's SLURM daemons) are not in the group, so
their CPU is missing from their tests'. Rows go to ``$SUITE_CPU_DIR`` (default
``/tmp/galu-suite-cpu``), one JSON file per worker.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from collections import defaultdict
from pathlib import Path

import pytest

OUT_ENV = "SUITE_CPU_DIR"
DEFAULT_OUT = "/tmp/galu-suite-cpu"
_rows: list[tuple[str, float, float]] = []
_group: Path | None = None


def _worker() -> str:
    return os.environ.get("PYTEST_XDIST_WORKER", "main")


def _usage_s() -> float:
    """CPU seconds used by the group so far."""
    assert _group is not None
    if (_group / "cpuacct.usage").exists():  # v1, nanoseconds
        return int((_group / "cpuacct.usage").read_text()) / 1e9
    stat = dict(line.split() for line in (_group / "cpu.stat").read_text().splitlines())
    return int(stat["usage_usec"]) / 1e6  # v2


def pytest_configure(config) -> None:
    global _group
    v1 = Path("/sys/fs/cgroup/cpuacct")
    root = v1 if v1.is_dir() else Path("/sys/fs/cgroup")
    _group = root / f"galu-suite-cpu-{_worker()}"
    _group.mkdir(exist_ok=True)
    (_group / "cgroup.procs").write_text(str(os.getpid()))


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    cpu, wall = _usage_s(), time.monotonic()
    yield
    _rows.append((item.nodeid, time.monotonic() - wall, _usage_s() - cpu))


def pytest_unconfigure(config) -> None:
    try:
        out = Path(os.environ.get(OUT_ENV, DEFAULT_OUT))
        out.mkdir(parents=True, exist_ok=True)
        (out / f"rows-{_worker()}.json").write_text(json.dumps(_rows))
    finally:  # leave no cgroup behind: this worker back to the parent group, then remove it
        if _group is not None and _group.is_dir():
            try:
                (_group.parent / "cgroup.procs").write_text(str(os.getpid()))
                _group.rmdir()
            except OSError as error:  # a child still in it
                print(f"could not remove the cgroup {_group} ({error}); rmdir it by hand")


def summarize(folder: Path, top: int) -> None:
    """Print CPU and wall time per module, largest CPU first."""
    files = sorted(folder.glob("rows-*.json"))
    rows = [row for path in files for row in json.loads(path.read_text())]
    total = sum(cpu for _, _, cpu in rows)
    print(f"{len(rows)} tests, {total:.0f} s of CPU in all")
    modules: dict[str, list[float]] = defaultdict(lambda: [0.0, 0.0])
    for nodeid, wall, cpu in rows:
        module = Path(nodeid.split("::")[0]).stem
        modules[module][0] += cpu
        modules[module][1] += wall
    print(f"{'module':44s} {'CPU s':>7s} {'share':>6s} {'wall s':>7s}")
    for module, (cpu, wall) in sorted(modules.items(), key=lambda kv: -kv[1][0])[:top]:
        print(f"{module:44s} {cpu:7.1f} {cpu / total:6.1%} {wall:7.1f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("folder", type=Path, nargs="?", default=Path(DEFAULT_OUT))
    parser.add_argument("--top", type=int, default=25)
    args = parser.parse_args()
    summarize(args.folder, args.top)


if __name__ == "__main__":
    main()
