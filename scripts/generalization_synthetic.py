"""Train one synthetic task (clusters, linear, parity) -> runs/<task>.csv."""

import logging

import torch

from galu.device import describe, resolve_device
from galu.generalization.experiments import synthetic_experiment
from galu.provenance import Run, log_to_file

log_to_file(snakemake.log[0])
torch.set_num_threads(snakemake.threads)
params = snakemake.params
device = resolve_device(params.device)
run = Run.from_snakemake(snakemake, device=describe(device), extra={"data_substitute": False})
table = synthetic_experiment(snakemake.wildcards.gen_task, params.settings, params.seed, device)
logging.info("rows:\n%s", table.to_string())
run.write_csv(table, snakemake.output.csv, seeds=sorted(int(s) for s in table["seed"].unique()))
