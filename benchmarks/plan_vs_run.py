"""How far `galu plan`'s estimate was from a finished run's jobs (issue #60's new jobs).

Reads the run's Snakemake benchmark files and prints, per job whose label matches
``--jobs``, the CPU seconds `galu plan`'s cost model predicts and the job's measured
``cpu_time`` (CPU time, not wall time: a run niced beside other work takes longer on the
clock, not on the CPU), with the totals and their ratio. The matching and the prediction are
the cost fit's own (:mod:`galu.workflow.planning.costfit`: ``measurement_rows``,
``measured_jobs``, ``ratios``), without refitting anything.

A job resumed from a checkpoint keeps only its last attempt's benchmark; its measured time is
scaled to all its epochs by the first ``epoch k/n`` line of its log (the log says it resumed),
so a resumed job counts as if it had run whole at the pace of its last attempt.

    python benchmarks/plan_vs_run.py RUN_DIR --configfile config/paper.yaml \\
        config/paper-cpu.yaml --jobs "_wide|norm_activation=(normalized_\\w+|elu|selu|gelu)\\b"
"""

from __future__ import annotations

import argparse
import dataclasses
import re
from pathlib import Path

from galu.workflow.planning.costfit import (
    Measured,
    measured_jobs,
    measurement_rows,
    ratios,
)
from galu.workflow.planning.costs import CONSTANTS, CostModel
from galu.workflow.scales import scale_of, scaled

EPOCH = re.compile(r"epoch (\d+)/(\d+)")
RESUMED = "resuming from checkpoint"


def resumed_share(log: Path) -> float:
    """The share of a job's epochs its last attempt ran: 1 unless its log says it resumed,
    else (n - k + 1) / n from the log's first ``epoch k/n`` line."""
    if not log.is_file():
        return 1.0
    text = log.read_text()
    first = EPOCH.search(text)
    if RESUMED not in text or first is None:
        return 1.0
    k, n = int(first[1]), int(first[2])
    return (n - k + 1) / n


def whole_jobs(measured: list[Measured], run_dir: Path, scale: str) -> list[Measured]:
    """Each measured job with its CPU time scaled to all its epochs (:func:`resumed_share`)."""
    logs = Path(run_dir) / scaled("logs", scale)
    return [
        dataclasses.replace(m, seconds=m.seconds / resumed_share(logs / f"{m.job.benchmark}.log"))
        for m in measured
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("run_dir", type=Path, help="a finished run's checkout")
    parser.add_argument("--configfile", nargs="*", default=["config/config.yaml"])
    parser.add_argument("--jobs", default="", help="regular expression on the jobs' labels")
    args = parser.parse_args()
    table = measurement_rows(args.run_dir, "run", args.configfile, "this machine")
    measured = [m for m in measured_jobs(args.run_dir, table) if re.search(args.jobs, m.job.label)]
    rows = ratios(CostModel.load(CONSTANTS), whole_jobs(measured, args.run_dir,
                                                         scale_of(args.configfile)))  # fmt: skip
    for row in rows.sort_values("job").itertuples():
        predicted, spent = row.predicted_s / 60, row.measured_s / 60
        print(f"{row.job:70s} predicted {predicted:7.1f} min  measured {spent:7.1f} min")
    predicted, spent = rows["predicted_s"].sum() / 3600, rows["measured_s"].sum() / 3600
    print(f"{len(rows)} jobs: predicted {predicted:.2f} h, measured {spent:.2f} h,"
          f" measured / predicted {spent / predicted:.2f}")  # fmt: skip


if __name__ == "__main__":
    main()
