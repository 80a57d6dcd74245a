"""Correlation between images' hidden representations, per layer, at init -> correlations.csv."""

import logging

import pandas as pd

from galu.normalization.correlation import layer_correlations, random_baseline
from galu.normalization.mlp import build_mlp
from galu.workflow.cifar_job import start_cifar_job

settings, seed = snakemake.params.settings, snakemake.params.seed
# Same training subset (hence standardization) as the training runs; the probe images are
# a seeded subset of the test split. CPU: build_mlp's networks are made there.
run, data = start_cifar_job(snakemake, snakemake.params.n_train, settings["samples"], seed)
frames = []
for activation in settings["activations"]:
    model = build_mlp(activation, settings["depth"], settings["width"], seed)
    table = layer_correlations(model, data.x_test)
    logging.info("%s: mean |cos| by layer %s", activation, table["mean_abs_cos"].round(3).tolist())
    frames.append(
        table.assign(
            activation=activation,
            width=settings["width"],
            depth=settings["depth"],
            seed=seed,
            samples=settings["samples"],
            random_baseline=random_baseline(settings["width"]),
        )
    )
columns = [
    "activation",
    "width",
    "depth",
    "seed",
    "layer",
    "mean_abs_cos",
    "samples",
    "random_baseline",
]
run.write_csv(pd.concat(frames, ignore_index=True)[columns], snakemake.output.csv, seeds=[seed])
