"""Gather the runs of two widths (wide/runs and the trainability runs beside them) ->
widths.csv, each run judged at the comparison's epoch."""

import pandas as pd

from galu.normalization.widths import width_comparison
from galu.workflow.output import Run

run = Run.from_snakemake(snakemake)
params = snakemake.params
curves = pd.concat(map(pd.read_csv, snakemake.input.curves), ignore_index=True)
table = width_comparison(curves, params.loss_fraction, params.epoch)
run.write_csv(table, snakemake.output.csv, seeds=params.seeds)
