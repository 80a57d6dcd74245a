"""Collect every setting's ODE and simulation rows -> results/scm/trajectories.csv."""

import pandas as pd

from galu.scm.experiments import combine
from galu.workflow.output import Run

run = Run.from_snakemake(snakemake)
table = combine([pd.read_csv(path) for path in snakemake.input])
run.write_csv(table, snakemake.output.csv)
