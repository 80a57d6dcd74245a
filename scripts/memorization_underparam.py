"""Fit the under-parameterized memorization grid -> results/memorization/underparam.csv."""

import logging

import torch

from galu.memorization.experiments import underparam_experiment
from galu.workflow.output import Run

torch.set_num_threads(snakemake.threads)
common = snakemake.params.common
run = Run.from_snakemake(snakemake)
device = run.use_device(common["device"])
table = underparam_experiment(snakemake.params.settings, common, device)
logging.info(
    "mean train_loss by model and kd/m:\n%s",
    table.groupby(["model", "kd_over_m"]).train_loss.mean().unstack(0).to_string(),
)
run.write_csv(table, snakemake.output.csv)
