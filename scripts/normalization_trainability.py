"""Gather curves -> trainability.csv, trainability_runs.csv, max_depth.csv,
max_depth_by_fraction.csv, lr_sweep.csv."""

import pandas as pd

from galu.normalization.trainability import (
    FRACTION_GRID,
    max_depth_by_fraction,
    max_trainable_depth,
    run_outcomes,
)
from galu.workflow.output import Run

run = Run.from_snakemake(snakemake)
fraction = snakemake.params.loss_fraction
seeds = snakemake.params.seeds
curves = pd.concat(map(pd.read_csv, snakemake.input.curves), ignore_index=True)
outcomes = run_outcomes(curves, fraction)
run.write_csv(curves, snakemake.output.csv, seeds=seeds)
run.write_csv(outcomes, snakemake.output.runs, seeds=seeds)
run.write_csv(max_trainable_depth(outcomes, fraction), snakemake.output.max_depth, seeds=seeds)
# the grid and the run's own fraction, so that every claim's robustness is read at its setting
fractions = sorted({*FRACTION_GRID, fraction})
by_fraction = max_depth_by_fraction(curves, fractions)
run.write_csv(by_fraction, snakemake.output.max_depth_by_fraction, seeds=seeds)
sweeps = pd.concat(map(pd.read_csv, snakemake.input.sweeps), ignore_index=True)
run.write_csv(sweeps, snakemake.output.lr_sweep)
