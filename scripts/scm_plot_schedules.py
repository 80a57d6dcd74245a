"""Figure of the learning-rate schedules from schedule_runs.csv (never integrates)."""

import pandas as pd

from galu.plotting import scaled_title
from galu.provenance import Run
from galu.scm import figures

run = Run.from_snakemake(snakemake)
runs = pd.read_csv(snakemake.input.runs)
summary = pd.read_csv(snakemake.input.csv)
fig = figures.schedules_figure(runs, summary)
scaled_title(fig, "Learning-rate schedules from the exact-eta ODEs", snakemake.params.scale)
run.save_figure(fig, snakemake.output.png, seeds=snakemake.params.seeds)
