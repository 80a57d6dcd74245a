"""Simulate one SCM setting at finite N across seeds -> results/scm/runs/<setting>_sim.csv."""

import logging

import torch

from galu.scm.experiments import simulation_table
from galu.seeding import seeds_in
from galu.workflow.job_checkpoints import job_checkpoint
from galu.workflow.output import Run

params = snakemake.params
torch.set_num_threads(snakemake.threads)
run = Run.from_snakemake(snakemake)
device = run.use_device(params.device)
name = snakemake.wildcards.scm_setting
# at the paper's N a simulation runs for hours: a killed job resumes from its last checkpoint
checkpoint = job_checkpoint(run, snakemake.output.csv)
table = simulation_table(name, params.setting, params.simulation, params.seed, device, checkpoint)
logging.info("%d rows, seeds %s", len(table), seeds_in(table))
run.write_csv(table, snakemake.output.csv)
checkpoint.clear()
