"""Train one image dataset's grid -> runs/<dataset>_grid.csv (every member) and
runs/<dataset>.csv (validation-selected, with the test-selected columns)."""

import logging

import torch

from galu.generalization.experiments import ImageSettings, image_accuracy, image_experiment
from galu.seeding import seeds_in
from galu.workflow.data.prepare import load_processed
from galu.workflow.output import Run

torch.set_num_threads(snakemake.threads)
params = snakemake.params
run = Run.from_snakemake(snakemake)
device = run.use_device(params.device)
dataset = snakemake.wildcards.gen_image
settings = ImageSettings(**params.settings)
grid = image_experiment(dataset, load_processed(snakemake.input.npz), settings, params.seed, device)
table = image_accuracy(grid)
logging.info("validation-selected rows:\n%s", table.to_string())
seeds = seeds_in(grid)
run.write_csv(grid, snakemake.output.grid, seeds=seeds)
run.write_csv(table, snakemake.output.csv, seeds=seeds)
