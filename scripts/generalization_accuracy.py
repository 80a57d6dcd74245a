"""Stack the per-dataset tables -> results/generalization/accuracy.csv."""

import pandas as pd

from galu.generalization.accuracy import accuracy_table
from galu.workflow.output import Run

run = Run.from_snakemake(snakemake)
table = accuracy_table([pd.read_csv(path) for path in snakemake.input])
run.write_csv(table, snakemake.output.csv)
