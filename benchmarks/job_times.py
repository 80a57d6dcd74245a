"""Where a finished run's time went: its jobs' wall seconds by kind, against a baseline run.

Reads the jobs' benchmark files (``logs/benchmarks/``, written by Snakemake for every job)
of one finished run and, optionally, of a baseline run of the same scale (e.g. a fresh
clone of an older commit, run the same day on the same machine), and prints per kind of
job the count and summed wall seconds of each, and their ratio. On a machine whose cores
are all busy through the run, the workflow's wall time is about the jobs' sum divided by
the cores, so this shows what a change gained and where the rest goes.

    python benchmarks/job_times.py RUN_DIR                  # one run's profile
    python benchmarks/job_times.py RUN_DIR --baseline OLD   # before and after
    python benchmarks/job_times.py RUN_DIR --jobs 15        # and its 15 longest jobs

A job's kind is its benchmark name up to the first underscore, digit or wildcard value
(``normalization/train_relu_depth60`` -> ``normalization/train``).
"""

from __future__ import annotations

import argparse
import re
from collections import defaultdict
from pathlib import Path

from galu.workflow.planning.costfit import read_benchmarks
from galu.workflow.scales import QUICK


def kind(benchmark: str) -> str:
    """``stage/what`` of a benchmark name: the job's name cut at its first ``_`` or digit."""
    stage, _, job = benchmark.partition("/")
    head = re.split(r"[_\d]", job, maxsplit=1)[0]
    return f"{stage}/{head}"


def by_kind(walls: dict[str, float]) -> dict[str, tuple[int, float]]:
    """``kind -> (jobs, summed wall seconds)``."""
    out: dict[str, list[float]] = defaultdict(list)
    for name, seconds in walls.items():
        out[kind(name)].append(seconds)
    return {k: (len(v), sum(v)) for k, v in out.items()}


def walls(run_dir: Path, scale: str) -> dict[str, float]:
    return {name: s for name, (s, _cpu, _rss) in read_benchmarks(run_dir, scale).items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("run", type=Path, help="a finished run's checkout")
    parser.add_argument("--baseline", type=Path, help="another run of the same scale")
    parser.add_argument("--scale", default=QUICK, help="the runs' scale (default: quick)")
    parser.add_argument("--jobs", type=int, default=0, help="also list the N longest jobs")
    args = parser.parse_args()
    now = walls(args.run, args.scale)
    before = walls(args.baseline, args.scale) if args.baseline else {}
    kinds_now, kinds_before = by_kind(now), by_kind(before)
    print(f"{'kind':32s} {'jobs':>5s} {'wall s':>8s}" + ("  baseline    ratio" * bool(before)))
    for name in sorted(kinds_now, key=lambda k: -kinds_now[k][1]):
        count, total = kinds_now[name]
        line = f"{name:32s} {count:5d} {total:8.1f}"
        if before:
            base = kinds_before.get(name, (0, 0.0))[1]
            line += f"  {base:8.1f} {total / base if base else float('nan'):8.2f}"
        print(line)
    total_now, total_before = sum(now.values()), sum(before.values())
    line = f"{'all jobs':32s} {len(now):5d} {total_now:8.1f}"
    if before:
        line += f"  {total_before:8.1f} {total_now / total_before:8.2f}"
    print(line)
    for name in sorted(now, key=lambda k: -now[k])[: args.jobs]:
        print(f"  {now[name]:7.1f} s  {name}")


if __name__ == "__main__":
    main()
