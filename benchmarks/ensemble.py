"""Throughput of the ensemble trainer against a plain loop over the same networks.

The networks are those of the under-parameterized memorization experiment (Fiat, Malach
& Shalev-Shwartz, arXiv 1906.05032, sec. 3) on the quick grid of
``config/config.yaml`` (``memorization.underparam``): every model, (m, d, k) point and
seed. The ensemble path fits them exactly as the workflow does
(:func:`galu.memorization.fitting.fit_members`: planned, padded ensembles); the loop path fits
the same members one after another, each as an ensemble of one, through the same code.
Both run the same number of steps, so they compute the same numbers (checked).

    python benchmarks/ensemble.py                 # quick grid, 2 threads, 3 repeats
    python benchmarks/ensemble.py --threads 1 --steps 300
    python benchmarks/ensemble.py --overhead 40000     # plan for 2 threads' measured cost

Prints member-iterations per second of each path (median over repeats) and their ratio.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path

import numpy as np
import torch
import yaml

from galu.ensembles.training import EnsembleSettings
from galu.memorization.experiments import underparam_points
from galu.memorization.fitting import FitOptions, Member, fit_members

CONFIG = Path(__file__).resolve().parents[1] / "config" / "config.yaml"


def quick_members(grid: dict) -> list[Member]:
    """Every trained network of an under-parameterized grid (``memorization.underparam``)."""
    seeds = range(grid["seeds"])
    models = [m for m in grid["models"] if m != "galu_exact"]
    points = underparam_points(grid["ms"], grid["ds"], grid["ks"])
    return [Member(model, m, d, 1, k, s) for model in models for m, d, k in points for s in seeds]


def timed(members: list[Member], options: FitOptions, alone: bool) -> tuple[float, list]:
    """Seconds to fit ``members`` together (planned ensembles) or one at a time."""
    start = time.perf_counter()
    fits = (
        [fit_members([m], options)[0] for m in members] if alone else fit_members(members, options)
    )
    return time.perf_counter() - start, fits


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--config", type=Path, default=CONFIG, help="config with the grid")
    parser.add_argument("--steps", type=int, default=200, help="training steps per network")
    parser.add_argument("--repeats", type=int, default=3, help="timed repeats (median kept)")
    parser.add_argument("--threads", type=int, default=2, help="torch.set_num_threads")
    parser.add_argument(
        "--overhead",
        type=float,
        help="the planner's fixed cost of a step (default: the config's ensemble_overhead, "
        "measured for the jobs' one thread; benchmarks/ensemble_overhead.py measures others)",
    )
    parser.add_argument("--json", type=Path, help="also write the results here")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    memorization = yaml.safe_load(args.config.read_text())["memorization"]
    members = quick_members(memorization["underparam"])
    # The workflow's planning of the ensembles (memorization.ensemble_overhead) by default.
    overhead = memorization["ensemble_overhead"] if args.overhead is None else args.overhead
    options = FitOptions(
        EnsembleSettings(steps=args.steps, lr=1e-2, batch_size=128), overhead=overhead
    )
    fit_members(members[:2], options)  # warm-up: first-call costs are not throughput
    work = len(members) * args.steps
    seconds = {"ensemble": [], "loop": []}
    for _ in range(args.repeats):
        for path in seconds:
            elapsed, fits = timed(members, options, alone=path == "loop")
            seconds[path].append(elapsed)
            if path == "ensemble":
                together = fits
    difference = max(
        float(np.nanmax(np.abs(a.pred - b.pred))) for a, b in zip(together, fits, strict=True)
    )
    rate = {path: work / statistics.median(s) for path, s in seconds.items()}
    result = {
        "networks": len(members),
        "steps": args.steps,
        "threads": args.threads,
        "repeats": args.repeats,
        "overhead": overhead,
        "torch": torch.__version__,
        "member_iterations_per_s": rate,
        "seconds": seconds,
        "ratio": rate["ensemble"] / rate["loop"],
        "max_prediction_difference": difference,
    }
    print(
        f"{len(members)} networks x {args.steps} steps, {args.threads} threads, overhead "
        f"{overhead:g}, torch {torch.__version__}, median of {args.repeats}"
    )
    for path in ("ensemble", "loop"):
        print(f"  {path:8s} {rate[path]:12,.0f} member-iterations/s")
    print(f"  ratio    {result['ratio']:12.1f}x   (max |prediction difference| {difference:.1e})")
    if args.json:
        args.json.write_text(json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    main()
