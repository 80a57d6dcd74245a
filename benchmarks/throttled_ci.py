"""CI as it would run on a slower machine: `CI=true bash .ci/run` from a fresh clone, with the
CPU throttled until `benchmarks/ensemble.py` gives the slower machine's figure.

Issue #34's bar is 15 minutes on the slower CI machine (figure about 15k member-iterations/s
at 2 threads). On a faster machine this emulates it: a cgroup CPU quota (root, cgroup v1 `cpu`
or v2 `cpu.max`), then the whole CI run inside the same cgroup, timed.

    sudo python3 benchmarks/throttled_ci.py                   # target 15,500; clone of HEAD
    sudo python3 benchmarks/throttled_ci.py --target 15500 --workdir /tmp/slow-ci

The quota starts at ``cpus x target / measured`` and is corrected from the figure measured
inside it (at most four times) until that is within 5 % of the target. It slows every
process of the run alike (CPU only: not the disk, not memory latency per cycle), so a suite
whose time does not scale with the figure (waits, I/O) does better here than under a plain
division. The quota caps the run; it reserves nothing: stop other work first (a background
run in another cgroup takes what the quota leaves). Prints the figures, the quota and the
run's wall time; the run's output goes to ``<workdir>/ci.log``.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
NAME = "galu-throttled-ci"
PERIOD_US = 100_000
# Measure the figure inside the quota at most this often, until within TOLERANCE of the target.
CALIBRATIONS = 4
TOLERANCE = 0.05


def cgroup_dir() -> tuple[Path, str]:
    """A new cgroup with a CPU quota file, and the kind ("v1" or "v2")."""
    v1 = Path("/sys/fs/cgroup/cpu")
    if (v1 / "cpu.cfs_quota_us").exists():
        return v1 / NAME, "v1"
    v2 = Path("/sys/fs/cgroup")
    enabled = v2 / "cgroup.subtree_control"  # the controllers the root's children get
    if enabled.exists() and "cpu" in enabled.read_text().split():
        return v2 / NAME, "v2"
    sys.exit(
        "no cgroup CPU controller for a new group here: need cgroup v1 `cpu`, or v2 with `cpu`"
        " in /sys/fs/cgroup/cgroup.subtree_control (echo +cpu > that file)"
    )


def set_quota(group: Path, kind: str, cores: float) -> None:
    group.mkdir(exist_ok=True)
    quota = int(cores * PERIOD_US)
    if kind == "v1":
        (group / "cpu.cfs_period_us").write_text(str(PERIOD_US))
        (group / "cpu.cfs_quota_us").write_text(str(quota))
    else:
        (group / "cpu.max").write_text(f"{quota} {PERIOD_US}")


def release(group: Path) -> None:
    """Move what the run left running (e.g. the test cluster's daemons) back to the root
    group, unthrottled, and remove the cgroup."""
    for pid in (group / "cgroup.procs").read_text().split():
        try:
            (group.parent / "cgroup.procs").write_text(pid)
        except OSError:  # exited meanwhile
            pass
    try:
        group.rmdir()
    except OSError as error:  # a process still starting in it: say where it is left
        print(f"could not remove the cgroup {group} ({error}); rmdir it by hand")


def inside(group: Path | None, cmd: str) -> list[str]:
    """``cmd`` (a shell command) run in ``group`` (its children inherit it)."""
    enter = f"echo $$ > {shlex.quote(str(group / 'cgroup.procs'))}; " if group else ""
    return ["bash", "-c", enter + cmd]


def figure(python: Path, group: Path | None) -> float:
    """The ensemble path's member-iterations/s (benchmarks/ensemble.py, 2 threads)."""
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "figure.json"
        # Five repeats (median): under a quota single repeats vary more than unthrottled.
        script = REPO / "benchmarks/ensemble.py"
        cmd = " ".join(shlex.quote(str(a)) for a in (python, script, "--repeats", 5, "--json", out))
        cmd += " > /dev/null"
        subprocess.run(inside(group, cmd), check=True, cwd=REPO)
        return json.loads(out.read_text())["member_iterations_per_s"]["ensemble"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--target", type=float, default=15_500, help="figure to emulate")
    parser.add_argument("--workdir", type=Path, default=Path("/tmp/galu-throttled-ci"))
    args = parser.parse_args()
    if os.geteuid() != 0:
        sys.exit("run as root: it creates a cgroup")
    python = REPO / ".venv/bin/python"
    if not python.exists():
        sys.exit(f"{python} missing: run `make setup` in {REPO} first (for benchmarks/ensemble.py)")
    group, kind = cgroup_dir()
    # However it ends (an error, Ctrl-C), the quota goes and the group with it.
    try:
        sys.exit(_throttled_run(args, python, group, kind))
    finally:
        release(group)


def _throttled_run(args: argparse.Namespace, python: Path, group: Path, kind: str) -> int:
    """Calibrate the quota, then run CI in the group; its exit status."""
    cpus = len(os.sched_getaffinity(0))
    full = figure(python, None)
    print(f"figure: {full:,.0f} unthrottled")
    cores = cpus * args.target / full
    for _ in range(CALIBRATIONS):
        cores = min(cpus, cores)
        set_quota(group, kind, cores)
        throttled = figure(python, group)
        print(f"        {throttled:,.0f} at a quota of {cores:.3f} of {cpus} cores")
        if abs(throttled / args.target - 1) <= TOLERANCE:
            break
        # The figure is not quite proportional to the quota (and other work shares the
        # machine): correct the quota by the ratio still missing and measure again.
        cores *= args.target / throttled
    else:
        sys.exit(f"no quota gave {args.target:,.0f} within {TOLERANCE:.0%}: stop other work first")

    args.workdir.mkdir(parents=True, exist_ok=True)
    clone = args.workdir / "main"
    subprocess.run(["rm", "-rf", str(clone)], check=True)
    subprocess.run(["git", "clone", "-q", str(REPO), str(clone)], check=True)
    shared = REPO.parent / "shared"  # .ci/run looks for ../shared/datasets beside the clone
    if shared.is_dir() and not (args.workdir / "shared").exists():
        (args.workdir / "shared").symlink_to(shared)
    log = args.workdir / "ci.log"
    start = time.monotonic()
    with open(log, "w") as out:
        done = subprocess.run(
            inside(group, "CI=true bash .ci/run"), cwd=clone, stdout=out, stderr=subprocess.STDOUT
        )
    wall = time.monotonic() - start
    tail = [line for line in log.read_text().splitlines() if " passed" in line][-1:]
    print(f"CI=true bash .ci/run: exit {done.returncode}, {wall / 60:.1f} min wall; {log}")
    print("        " + (tail[0].strip("= ") if tail else "no pytest summary line"))
    return done.returncode


if __name__ == "__main__":
    main()
