"""Simulate one SCM setting at finite N across seeds -> results/scm/runs/<setting>_sim.csv."""

import logging

import torch

from galu.device import describe, resolve_device
from galu.provenance import Run
from galu.scm.experiments import simulation_table

params = snakemake.params
device = resolve_device(params.device)
torch.set_num_threads(snakemake.threads)
run = Run.from_snakemake(snakemake, device=describe(device))
name = snakemake.wildcards.scm_setting
table = simulation_table(name, params.setting, params.simulation, params.seed, device)
logging.info("%d rows, seeds %s", len(table), sorted(table["seed"].dropna().unique()))
run.write_csv(table, snakemake.output.csv, seeds=[int(s) for s in table["seed"].dropna().unique()])
