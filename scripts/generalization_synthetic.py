"""Train one synthetic task (clusters, linear, parity) -> runs/<task>.csv."""

import logging

import torch

from galu.generalization.experiments import synthetic_experiment
from galu.workflow.output import Run

torch.set_num_threads(snakemake.threads)
params = snakemake.params
run = Run.from_snakemake(snakemake)
device = run.use_device(params.device)
table = synthetic_experiment(snakemake.wildcards.gen_task, params.settings, params.seed, device)
logging.info("rows:\n%s", table.to_string())
run.write_csv(table, snakemake.output.csv)
