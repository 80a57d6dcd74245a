"""Train one activation at one depth (all widths, seeds) -> runs/<activation>_depth<d>_*.csv."""

import logging

import pandas as pd

from galu.normalization.lr_sweep import chosen_lrs
from galu.normalization.trainability import train_depth
from galu.workflow.cifar_job import start_cifar_job
from galu.workflow.job_checkpoints import job_checkpoint

params = snakemake.params
data_settings = params.data
run, data = start_cifar_job(
    snakemake, data_settings["n_train"], data_settings["n_test"], params.data_seed, params.device
)
lrs = chosen_lrs(pd.read_csv(snakemake.input.sweep))
logging.info("learning rate per width from the sweep: %s", lrs)
# a width-1024 network at depth 60 trains for hours: a killed job goes on from its checkpoint
checkpoints = {w: job_checkpoint(run, f"{snakemake.output.curves}.width{w}") for w in lrs}
runs = train_depth(
    snakemake.wildcards.norm_activation,
    int(snakemake.wildcards.norm_depth),
    data,
    lrs,
    params.seeds,
    epochs=params.epochs,
    batch_size=data_settings["batch_size"],
    momentum=data_settings["momentum"],
    spectra=params.spectra,
    jacobian_samples=params.jacobian_samples,
    checkpoints=checkpoints.get,
)
logging.info("curves:\n%s", runs.curves.to_string())
run.write_csv(runs.curves, snakemake.output.curves, seeds=params.seeds)
run.write_csv(runs.spectra, snakemake.output.spectra, seeds=params.seeds)
run.write_csv(runs.jacobian, snakemake.output.jacobian, seeds=params.seeds)
for checkpoint in checkpoints.values():
    checkpoint.clear()
