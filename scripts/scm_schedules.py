"""Learning-rate schedules of the SCM settings -> results/scm/schedules.csv (+ trajectories)."""

import logging

import pandas as pd
import torch

from galu.scm.schedules import schedule_experiment
from galu.seeding import run_seeds
from galu.workflow.job_checkpoints import job_checkpoint
from galu.workflow.output import Run

params = snakemake.params
torch.set_num_threads(snakemake.threads)
run = Run.from_snakemake(snakemake)
device = run.use_device(params.device)
summaries, trajectories = [], []
# the simulations at the paper's N run for hours: a killed job resumes from its checkpoints
checkpoints = [
    job_checkpoint(run, f"{snakemake.output.runs}.{name}") for name in params.schedules["settings"]
]
for name, checkpoint in zip(params.schedules["settings"], checkpoints, strict=True):
    summary, trajectory = schedule_experiment(
        name, params.settings[name], params.schedules, params.ode, params.simulation,
        params.seed, device, checkpoint,
    )  # fmt: skip
    summaries.append(summary)
    trajectories.append(trajectory)
summary = pd.concat(summaries, ignore_index=True)
logging.info("schedules:\n%s", summary.to_string())
seeds = run_seeds(params.seed, params.simulation["seeds"])
run.write_csv(summary, snakemake.output.csv, seeds=seeds)
run.write_csv(pd.concat(trajectories, ignore_index=True), snakemake.output.runs, seeds=seeds)
for checkpoint in checkpoints:
    checkpoint.clear()
