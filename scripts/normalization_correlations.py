"""Correlation between images' hidden representations, per layer, at init -> correlations.csv."""

import logging

import pandas as pd
import torch

from galu.normalization.correlation import layer_correlations, random_baseline
from galu.normalization.deep_mlp import build_mlp, load_arrays, prepare_data
from galu.provenance import Run, log_to_file

log_to_file(snakemake.log[0])
torch.set_num_threads(snakemake.threads)
settings, seed = snakemake.params.settings, snakemake.params.seed
arrays, substitute = load_arrays(snakemake.input.npz)
run = Run.from_snakemake(snakemake, extra={"data_substitute": substitute})
# Same training subset (hence standardization) as the training runs; the probe images are
# a seeded subset of the test split.
data = prepare_data(arrays, snakemake.params.n_train, settings["samples"], seed)
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
columns = ["activation", "width", "depth", "seed", "layer", "mean_abs_cos", "samples"]
result = pd.concat(frames, ignore_index=True)[[*columns, "random_baseline"]]
run.write_csv(result, snakemake.output.csv, seeds=[seed])
