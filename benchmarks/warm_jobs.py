"""A whole tiny-configuration run with warm job interpreters against the same run cold.

Each round makes two fresh copies of this checkout (tracked files plus ``config/local.yaml``,
the site's mirrors), runs ``snakemake --cores N --configfile config/tiny.yaml`` in each, one
with ``GALU_WARM_JOBS=0`` (every job a fresh Python) and one without (jobs forked from the
warm server, galu/workflow/running/warm_jobs.py), in alternating order, and checks that the two
runs' CSVs are byte-identical. It prints each run's wall time and its jobs' summed wall time, then
the medians and the warm/cold ratios. The tiny configuration is where start-up dominates (its
jobs compute for well under a second); a quick-scale run saves the same seconds per job.

    python benchmarks/warm_jobs.py               # 3 rounds, 2 cores
    python benchmarks/warm_jobs.py --rounds 5 --cores 1
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from galu.workflow.planning.costfit import read_benchmarks  # noqa: E402


def fresh_copy(dest: Path) -> Path:
    files = (
        subprocess.run(["git", "ls-files", "-z"], cwd=REPO, capture_output=True, check=True)
        .stdout.decode()
        .split("\0")
    )
    for rel in [f for f in files if f] + ["config/local.yaml"]:
        if (REPO / rel).is_file():
            (dest / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(REPO / rel, dest / rel)
    for cmd in (["git", "init", "-q"], ["git", "add", "-A"], ["git", "commit", "-qm", "copy"]):
        subprocess.run(cmd, cwd=dest, check=True, capture_output=True)
    return dest


def one_run(root: Path, cores: int, warm: bool) -> tuple[float, float]:
    """(wall s, summed job wall s) of a full tiny run in ``root``."""
    env = {**os.environ, "DVC_NO_ANALYTICS": "1", "GALU_WARM_JOBS": "1" if warm else "0"}
    snakemake = Path(sys.executable).parent / "snakemake"
    start = time.perf_counter()
    subprocess.run(
        [str(snakemake), "--cores", str(cores), "--configfile", "config/tiny.yaml"],
        cwd=root, env=env, check=True, capture_output=True,
    )  # fmt: skip
    wall = time.perf_counter() - start
    return wall, sum(s for s, _, _ in read_benchmarks(root).values())


def csvs(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in root.rglob("results/**/*.csv")}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--cores", type=int, default=2)
    args = parser.parse_args()
    times: dict[bool, list[tuple[float, float]]] = {True: [], False: []}
    with tempfile.TemporaryDirectory() as tmp:
        for r in range(args.rounds):
            made = {}
            for warm in (r % 2 == 0, r % 2 != 0):  # alternate which goes first
                root = fresh_copy(Path(tmp) / f"r{r}-{'warm' if warm else 'cold'}")
                times[warm].append(one_run(root, args.cores, warm))
                made[warm] = csvs(root)
                label = "warm" if warm else "cold"
                wall, jobs = times[warm][-1]
                print(f"round {r + 1} {label}: {wall:6.1f} s wall, {jobs:6.1f} s of jobs")
            if made[True] != made[False]:
                print("the warm and cold runs' CSVs differ", file=sys.stderr)
                return 1
    for i, what in enumerate(("wall", "summed job wall")):
        warm = statistics.median(t[i] for t in times[True])
        cold = statistics.median(t[i] for t in times[False])
        print(
            f"{what:16s} median warm {warm:6.1f} s, cold {cold:6.1f} s: warm/cold {warm / cold:.2f}"
        )
    print(f"CSVs byte-identical in all {args.rounds} rounds")
    return 0


if __name__ == "__main__":
    sys.exit(main())
