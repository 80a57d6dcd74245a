"""Measure ``memorization.ensemble_overhead``: an ensemble step's fixed cost in work units.

The planner (:func:`galu.ensembles.training.plan_ensembles`) prices one training step of
an ensemble of E members padded to width K and input + output size D as
``overhead + E * K * D`` and groups members to minimize the sum. This script times steps
of GaLU and ReLU ensembles of the memorization experiments (Fiat, Malach &
Shalev-Shwartz, arXiv 1906.05032, sec. 3) over a grid of shapes and member counts and
fits, per model, the seconds of one step as

    F + c * E + b * (E * K * D)

by least squares on relative errors. ``F`` is the fixed cost of a step, ``c`` the cost
every member adds whatever its size (it is the same for every grouping, so the planner
ignores it) and ``b`` the cost of one work unit; the planner's overhead is ``F / b``.
Each point is the difference of two runs of different step counts, so building the
models, drawing the data and the final evaluation cancel.

    python benchmarks/ensemble_overhead.py               # 2 threads, 3 repeats
    python benchmarks/ensemble_overhead.py --threads 1

Prints the fitted coefficients per model and the overhead to put in the config.
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np
import torch

from galu.ensembles.training import EnsembleSettings
from galu.memorization.fitting import FitOptions, Member, fit_members

# (d, width, out_dim): the small networks of the quick grid up to the wide ones of the
# min-width searches.
SHAPES = ((8, 8, 1), (16, 16, 1), (32, 32, 1), (16, 64, 4), (16, 256, 16), (16, 512, 64))
MEMBERS = (1, 4, 16, 48)


def step_seconds(members: list[Member], steps: tuple[int, int], repeats: int) -> float:
    """Seconds of one training step: the difference of fits with two step counts."""
    times = {}
    for count in steps:
        # The overhead is a property of one ensemble: never let the planner split it.
        options = FitOptions(EnsembleSettings(steps=count, lr=1e-2, batch_size=128), overhead=1e12)
        runs = []
        for _ in range(repeats):
            start = time.perf_counter()
            fit_members(members, options)
            runs.append(time.perf_counter() - start)
        times[count] = statistics.median(runs)
    return (times[steps[1]] - times[steps[0]]) / (steps[1] - steps[0])


def fit_costs(points: list[tuple[int, int, float]]) -> tuple[float, float, float]:
    """``(F, c, b)`` of ``seconds = F + c * members + b * units``, by least squares on
    relative errors: step times span two decades, and absolute errors would let the
    largest ensembles decide F, which matters most for the small ones."""
    design = np.array([[1.0, e, u] for e, u, _ in points])
    seconds = np.array([s for _, _, s in points])
    weights = 1.0 / seconds
    (fixed, member, unit), *_ = np.linalg.lstsq(
        design * weights[:, None], seconds * weights, rcond=None
    )
    return float(fixed), float(member), float(unit)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--threads", type=int, default=2, help="torch.set_num_threads")
    parser.add_argument("--repeats", type=int, default=3, help="timed repeats (median kept)")
    parser.add_argument("--steps", type=int, nargs=2, default=(40, 160), help="two step counts")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    fit_members([Member("relu", 256, 8, 1, 8, 0)], FitOptions(EnsembleSettings(10, 1e-2, 128)))
    print(f"{args.threads} threads, torch {torch.__version__}, median of {args.repeats}")
    print("model     d  width  out    E     units   us/step")
    overheads = []
    for model in ("relu", "galu"):
        points = []
        for d, width, out in SHAPES:
            for count in MEMBERS:
                members = [Member(model, 256, d, out, width, s) for s in range(count)]
                seconds = step_seconds(members, tuple(args.steps), args.repeats)
                units = count * width * (d + out)
                points.append((count, units, seconds))
                print(
                    f"{model:6s} {d:4d} {width:6d} {out:4d} {count:4d} {units:9d} "
                    f"{seconds * 1e6:9.0f}",
                    flush=True,
                )
        fixed, member, unit = fit_costs(points)
        overheads.append(fixed / unit)
        print(
            f"{model}: F = {fixed * 1e6:.0f} us, c = {member * 1e6:.2f} us per member, "
            f"b = {unit * 1e9:.2f} ns per unit: overhead F / b = {fixed / unit:,.0f} units"
        )
    print(f"ensemble_overhead (mean of the models): {statistics.mean(overheads):,.0f}")


if __name__ == "__main__":
    main()
