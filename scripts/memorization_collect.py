"""Stack the minimal-width searches -> results/memorization/min_width.csv."""

import pandas as pd

from galu.provenance import Run, log_to_file

log_to_file(snakemake.log[0])
run = Run.from_snakemake(snakemake)
table = pd.concat([pd.read_csv(path) for path in snakemake.input], ignore_index=True)
run.write_csv(table, snakemake.output.csv, seeds=sorted(int(s) for s in table["seed"].unique()))
