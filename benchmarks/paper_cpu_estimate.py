"""Estimate each job and stage of config/paper-cpu.yaml from a short measured slice.

The slice (``benchmarks/paper_cpu_slice.yaml``, an overlay on paper.yaml + paper-cpu.yaml)
runs every job of the paper-cpu scale with the same grids and networks but fewer steps,
epochs or alpha. Each job's time scales linearly in those (the ensemble trainer's cost per
step is constant; an on-line SGD simulation costs the same per example), so this script
multiplies each job's measured time by the factor its rule was shortened by (FACTORS) and
sums per stage. It reads Snakemake's benchmark files of the slice run:

    snakemake --cores 2 --configfile config/paper.yaml config/paper-cpu.yaml \\
        benchmarks/paper_cpu_slice.yaml
    python benchmarks/paper_cpu_estimate.py [logs/paper-cpu/benchmarks]

It prints, per job, the slice's wall time, its CPU time (``cpu_time``: what the job got of
the CPU; on a machine shared with other work, wall time overstates the job's own cost, so
CPU time is the estimate) and the estimated full job time; per stage, the lower bound on
its wall time on 2 cores, max(sum of jobs / 2, longest job). Caveat: a width search's
rounds depend on what the probes learn, and a slice's short training memorizes less.
"""

from __future__ import annotations

import csv
import re
import sys
from pathlib import Path

# (pattern on the benchmark's path under logs/paper-cpu/benchmarks, factor) in order; the
# first match wins. Slice -> paper-cpu: steps 500 -> 100,000; 200 -> 20,000; alpha x100.
FACTORS = [
    (r"memorization/(underparam|min_width_(mse|zero_error))\.tsv", 200.0),
    (r"generalization/(mnist|fashion_mnist)\.tsv", 200.0),
    (r"generalization/(clusters|linear|parity)\.tsv", 100.0),
    (r"scm/\w+_sim\.tsv", 100.0),
    # Its ODEs (most of the slice's time) are not shortened, its simulations are: x100 of
    # the whole is an upper bound, x1 a lower one (both printed).
    (r"scm/schedules\.tsv", 100.0),
    # 10,000 -> 50,000 images (test 2,000 -> 10,000) and 1 -> 10 epochs; the sweep 2 -> 5.
    (r"normalization/train_\w+_depth\d+\.tsv", 50.0),
    (r"normalization/lr_sweep_\w+\.tsv", 12.5),
    (r".*", 1.0),  # not shortened (ODEs, stability, isometry, sweeps, plots, tables)
]
HOUR = 3600.0


def factor(rel: str) -> float:
    return next(f for pattern, f in FACTORS if re.fullmatch(pattern, rel))


# Depths of config/paper-cpu.yaml; the slice trains only the shallowest and the deepest.
DEPTHS = (10, 20, 30, 40, 50, 60)


def interpolated_depths(jobs: dict[str, float]) -> list[float]:
    """Estimates of the training jobs the slice skipped, linear in depth between each
    activation's measured shallowest and deepest job (a layer costs the same at any depth)."""
    found = []
    for rel, low in jobs.items():
        match = re.fullmatch(rf"normalization/train_(\w+)_depth{DEPTHS[0]}\.tsv", rel)
        high = jobs.get(f"normalization/train_{match[1]}_depth{DEPTHS[-1]}.tsv") if match else None
        if high is not None:
            span = DEPTHS[-1] - DEPTHS[0]
            found += [low + (high - low) * (d - DEPTHS[0]) / span for d in DEPTHS[1:-1]]
    return found


def last_row(path: Path) -> dict[str, str]:
    with path.open() as handle:
        return list(csv.DictReader(handle, delimiter="\t"))[-1]


def main(folder: str = "logs/paper-cpu/benchmarks") -> None:
    base = Path(folder)
    rows = {p.relative_to(base).as_posix(): last_row(p) for p in sorted(base.rglob("*.tsv"))}
    # Starting Python with torch, pandas and galu is not shortened by the slice: take the
    # median CPU time of the plot jobs (which do little else) off every job before scaling.
    plots = sorted(float(r["cpu_time"]) for k, r in rows.items() if "/plot_" in k)
    startup = plots[len(plots) // 2] if plots else 0.0
    print(f"start-up CPU time taken off each job: {startup:.1f} s\n")
    stages: dict[str, list[float]] = {}
    stages_jobs: dict[str, float] = {}
    print(f"{'job':48s} {'slice s':>8s} {'cpu s':>8s} {'factor':>6s} {'est. h':>7s}")
    for rel, row in rows.items():
        wall, cpu = float(row["s"]), float(row["cpu_time"])
        estimate = (startup + max(cpu - startup, 0.0) * factor(rel)) / HOUR
        stages.setdefault(rel.split("/")[0], []).append(estimate)
        stages_jobs[rel] = estimate
        flag = "  > 1 h" if estimate > 1 else ""
        print(f"{rel:48s} {wall:8.1f} {cpu:8.1f} {factor(rel):6.0f} {estimate:7.2f}{flag}")
    stages["normalization"] = stages.get("normalization", []) + interpolated_depths(stages_jobs)
    stages = {name: jobs for name, jobs in stages.items() if jobs}
    print("\nstage           jobs  sum of jobs h  longest h  wall on 2 cores >= h")
    for stage, jobs in sorted(stages.items()):
        bound = max(sum(jobs) / 2, max(jobs))
        print(f"{stage:15s} {len(jobs):4d} {sum(jobs):14.2f} {max(jobs):10.2f} {bound:21.2f}")


if __name__ == "__main__":
    main(*sys.argv[1:])
