"""Refit the cost model's constants (galu/workflow/planning/costs.py) from the stored measurements.

    python workflow/costs/fit.py                       # refit workflow/costs/constants.yaml
    python workflow/costs/fit.py --add RUN_DIR --run quick --configfile config/config.yaml

``--add`` first replaces the rows of run ``--run`` in workflow/costs/measurements.tsv with
the benchmark TSVs of a finished run (``RUN_DIR/logs/benchmarks``), made with the given
config files, on machine ``--machine``. Prints every measured job's predicted / measured
time after the fit, and each machine's fitted speed factor (:mod:`galu.workflow.planning.costfit`).
"""

from __future__ import annotations

import argparse
import platform
from pathlib import Path

import pandas as pd
import yaml

from galu.workflow.planning.costfit import (
    COLUMNS,
    GPU_MEASUREMENTS,
    MEASUREMENTS,
    fit_constants,
    gpu_speedups,
    measured_jobs,
    measurement_rows,
    misses,
    ratios,
    worst,
)
from galu.workflow.planning.costs import CONSTANTS, CostModel
from galu.workflow.provenance import atomic_write_bytes

ROOT = Path(__file__).resolve().parents[2]
HEADER = """\
# Constants of the cost model (galu/workflow/planning/costs.py), fitted by workflow/costs/fit.py
# from workflow/costs/measurements.tsv (gpu_speedups from workflow/costs/gpu.yaml); refit, do not
# edit. gpu_speedup is an assumption, not a measurement: the GPU rules without a GPU
# measurement use it.
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--add", metavar="RUN_DIR", help="a finished run's checkout")
    parser.add_argument("--run", help="name of that run (replaces its rows)")
    parser.add_argument("--configfile", nargs="*", default=["config/config.yaml"])
    parser.add_argument(
        "--machine",
        default=platform.node(),
        help="the machine the run was measured on (its speed factor is fitted): the name up to"
        " its first comma or parenthesis, the rest a note, e.g. '2-core VM, shared (load ~10)'",
    )
    args = parser.parse_args()
    path = ROOT / MEASUREMENTS
    table = pd.read_csv(path, sep="\t") if path.is_file() else pd.DataFrame(columns=COLUMNS)
    if args.add:
        if not args.run:
            parser.error("--add needs --run NAME")
        new = measurement_rows(args.add, args.run, args.configfile, args.machine)
        table = pd.concat([table[table["run"] != args.run], new], ignore_index=True)
        atomic_write_bytes(path, table.to_csv(sep="\t", index=False).encode())
    measured = measured_jobs(ROOT, table)
    constants = fit_constants(measured)
    constants["gpu_speedups"] = gpu_speedups(ROOT, CostModel(constants))
    text = HEADER + yaml.safe_dump(constants, sort_keys=False)
    atomic_write_bytes(ROOT / CONSTANTS, text.encode())
    result = ratios(CostModel(constants), measured)
    pd.set_option("display.width", 200)
    print(result.to_string(index=False, float_format=lambda x: f"{x:.3g}"))
    for run, rows in result.groupby("run"):
        timed = rows[rows["measured_s"] >= 1]
        print(
            f"{run}: {len(rows)} jobs, {len(misses(rows))} outside the check; worst time ratio"
            f" {worst(timed, 'time_ratio'):.2f} over the {len(timed)} jobs of 1 s or more"
            f" ({worst(rows, 'time_ratio'):.2f} over all), memory {worst(rows, 'mem_ratio'):.2f}"
        )
    for machine, speed in constants["machines"].items():
        print(f"machine {machine!r}: speed factor {speed:g}")
    for rule, speedup in constants["gpu_speedups"].items():
        print(f"{rule}: measured GPU speed-up {speedup:g} ({GPU_MEASUREMENTS})")


if __name__ == "__main__":
    main()
