"""Stack the per-dataset tables -> results/generalization/accuracy.csv."""

import pandas as pd

from galu.generalization import accuracy_table
from galu.provenance import Run, is_substitute, log_to_file

log_to_file(snakemake.log[0])
inputs = list(snakemake.input)
run = Run.from_snakemake(snakemake, extra={"data_substitute": any(map(is_substitute, inputs))})
table = accuracy_table([pd.read_csv(path) for path in inputs])
run.write_csv(table, snakemake.output.csv, seeds=sorted(int(s) for s in table["seed"].unique()))
