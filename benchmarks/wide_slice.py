"""How far `galu plan` is off for deep MLPs wider than its fit (issue #60).

The cost model's constants for the deep-MLP training rule (the rule whose cost formula is
galu.normalization.costs.training) are fitted on width-128 runs
(workflow/costs/constants.yaml); a width-1024 job's estimate extrapolates them in the
multiply-adds. This trains a slice of such a job (one seed, CIFAR-shaped synthetic data,
``--samples`` images, ``--epochs`` epochs, one thread as the jobs run) with the jobs' own
trainer (galu.normalization.trainability.train_depth) at each ``--widths``, and prints the
measured seconds beside the model's for the same sizes (its per-job constant left out: the
slice has no data loading) and their ratio. The first width is the baseline the model was
fitted at, so a ratio near it there and far from it at the other says the extrapolation is
off, not the machine:

    python benchmarks/wide_slice.py --depth 30 --widths 128 1024 --samples 2560
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import torch

from galu.normalization.cifar import TensorData
from galu.normalization.costs import _deep_mlp, training
from galu.normalization.trainability import train_depth
from galu.workflow.planning.costs import CONSTANTS, CostModel
from galu.workflow.planning.dag import planned_jobs

REPO = Path(__file__).resolve().parents[1]


def synthetic(samples: int, test: int) -> TensorData:
    gen = torch.Generator().manual_seed(0)
    return TensorData(
        torch.randn(samples, 3072, generator=gen),
        torch.randint(0, 10, (samples,), generator=gen),
        torch.randn(test, 3072, generator=gen),
        torch.randint(0, 10, (test,), generator=gen),
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--depth", type=int, default=30)
    parser.add_argument("--widths", type=int, nargs="+", default=[128, 1024])
    parser.add_argument("--samples", type=int, default=2560)
    parser.add_argument("--test", type=int, default=512)
    parser.add_argument("--epochs", type=int, default=1)
    parser.add_argument("--activation", default="relu")
    args = parser.parse_args()
    torch.set_num_threads(1)
    data = synthetic(args.samples, args.test)
    model = CostModel.load(REPO / CONSTANTS)
    # the training rule, as the rule files name it: the one whose formula is `training`
    trains = next(p.job.rule for p in planned_jobs(REPO) if p.cost.formula is training)
    rule = model.constants(trains)
    shape = {"n_train": args.samples, "n_test": args.test, "batch_size": 128}
    print(f"depth {args.depth}, {args.samples} images, {args.epochs} epoch(s), 1 thread")
    print(f"{'width':>6} {'measured s':>11} {'model s':>9} {'measured/model':>15}")
    for width in args.widths:
        start = time.perf_counter()
        train_depth(args.activation, args.depth, data, {width: 0.001}, [0], args.epochs)
        measured = time.perf_counter() - start
        sizes = _deep_mlp(args.depth, width, shape, args.epochs)
        predicted = rule.rate * sizes.work + rule.step_s * sizes.steps
        print(f"{width:>6} {measured:>11.1f} {predicted:>9.1f} {measured / predicted:>15.2f}")


if __name__ == "__main__":
    main()
