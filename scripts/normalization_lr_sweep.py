"""Learning-rate sweep of one activation at a shallow depth -> lr_sweep/<activation>.csv."""

import logging

import pandas as pd

from galu.normalization.lr_sweep import lr_sweep
from galu.workflow.cifar_job import start_cifar_job

params = snakemake.params
run, data = start_cifar_job(
    snakemake, params.data["n_train"], params.data["n_test"], params.seed, params.device
)
activation = snakemake.wildcards.norm_activation
tables = []
for width in params.widths:
    table = lr_sweep(
        activation,
        data,
        params.sweep["lrs"],
        depth=params.sweep["depth"],
        width=width,
        epochs=params.sweep["epochs"],
        seed=params.seed,
        batch_size=params.data["batch_size"],
        momentum=params.data["momentum"],
    )
    logging.info("%s width %d sweep:\n%s", activation, width, table.to_string())
    tables.append(table)
run.write_csv(pd.concat(tables, ignore_index=True), snakemake.output.csv, seeds=[params.seed])
