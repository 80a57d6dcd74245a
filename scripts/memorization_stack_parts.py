"""Stack one criterion's search parts in the grid's order -> runs/min_width_<criterion>.csv."""

import pandas as pd

from galu.memorization.search_parts import stack_parts
from galu.workflow.output import Run

run = Run.from_snakemake(snakemake)
table = stack_parts([pd.read_csv(path) for path in snakemake.input])
run.write_csv(table, snakemake.output.csv)
