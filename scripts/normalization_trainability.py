"""Gather curves -> trainability.csv, trainability_runs.csv, max_depth.csv,
max_depth_by_fraction.csv, lr_sweep.csv."""

import pandas as pd

from galu.normalization.trainability import (
    max_depth_by_fraction,
    max_trainable_depth,
    run_outcomes,
)
from galu.workflow.provenance import Run

run = Run.from_snakemake(snakemake)
fraction = snakemake.params.loss_fraction
seeds = snakemake.params.seeds
curves = pd.concat(map(pd.read_csv, snakemake.input.curves), ignore_index=True)
outcomes = run_outcomes(curves, fraction)
run.write_csv(curves, snakemake.output.csv, seeds=seeds)
run.write_csv(outcomes, snakemake.output.runs, seeds=seeds)
run.write_csv(max_trainable_depth(outcomes, fraction), snakemake.output.max_depth, seeds=seeds)
by_fraction = max_depth_by_fraction(curves)
run.write_csv(by_fraction, snakemake.output.max_depth_by_fraction, seeds=seeds)
sweeps = pd.concat(map(pd.read_csv, snakemake.input.sweeps), ignore_index=True)
run.write_csv(sweeps, snakemake.output.lr_sweep)
