"""Stack the minimal-width searches -> results/memorization/min_width.csv."""

import pandas as pd

from galu.workflow.output import Run

run = Run.from_snakemake(snakemake)
table = pd.concat([pd.read_csv(path) for path in snakemake.input], ignore_index=True)
run.write_csv(table, snakemake.output.csv)
