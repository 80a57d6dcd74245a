"""Gather the ablation's curves -> ablation.csv (one row per network, judged by the
trainability criterion)."""

import pandas as pd

from galu.normalization.ablation import ablation_table
from galu.workflow.output import Run

run = Run.from_snakemake(snakemake)
curves = pd.concat(map(pd.read_csv, snakemake.input.curves), ignore_index=True)
table = ablation_table(curves, snakemake.params.loss_fraction)
run.write_csv(table, snakemake.output.csv, seeds=[snakemake.params.seed])
