"""Fit the under-parameterized memorization grid -> results/memorization/underparam.csv."""

import logging

import torch

from galu.device import describe, resolve_device
from galu.memorization.experiments import underparam_experiment
from galu.provenance import Run, log_to_file

log_to_file(snakemake.log[0])
torch.set_num_threads(snakemake.threads)
common = snakemake.params.common
device = resolve_device(common["device"])
run = Run.from_snakemake(snakemake, device=describe(device))
table = underparam_experiment(snakemake.params.settings, common, device)
logging.info(
    "mean train_loss by model and kd/m:\n%s",
    table.groupby(["model", "kd_over_m"]).train_loss.mean().unstack(0).to_string(),
)
run.write_csv(table, snakemake.output.csv, seeds=sorted(int(s) for s in table["seed"].unique()))
