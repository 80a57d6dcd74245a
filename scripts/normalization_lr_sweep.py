"""Learning-rate sweep of one activation at a shallow depth -> lr_sweep/<activation>.csv."""

import logging

import pandas as pd
import torch

from galu.device import describe, resolve_device
from galu.normalization.deep_mlp import load_arrays, lr_sweep, prepare_data
from galu.provenance import Run, log_to_file

log_to_file(snakemake.log[0])
torch.set_num_threads(snakemake.threads)
params = snakemake.params
device = resolve_device(params.device)
arrays, substitute = load_arrays(snakemake.input.npz)
run = Run.from_snakemake(snakemake, device=describe(device), extra={"data_substitute": substitute})
data = prepare_data(arrays, params.data["n_train"], params.data["n_test"], params.seed, device)
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
