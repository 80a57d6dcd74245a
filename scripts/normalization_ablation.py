"""The ablation of one activation (optimizers x learning rates x gains) ->
ablation/<activation>_curves.csv."""

import logging

from galu.normalization.ablation import ablation_curves
from galu.workflow.cifar_job import start_cifar_job

params = snakemake.params
data_settings, settings = params.data, params.settings
run, data = start_cifar_job(
    snakemake, data_settings["n_train"], data_settings["n_test"], params.seed, params.device
)
curves = ablation_curves(
    snakemake.wildcards.ablation_activation,
    data,
    depth=settings["depth"],
    width=settings["width"],
    lrs=settings["lrs"],
    gain_factors=settings["gain_factors"],
    epochs=params.epochs,
    seed=params.seed,
    batch_size=data_settings["batch_size"],
    momentum=data_settings["momentum"],
)
logging.info("final epoch:\n%s", curves.groupby(["optimizer", "lr", "gain_factor"]).last())
run.write_csv(curves, snakemake.output.curves, seeds=[params.seed])
