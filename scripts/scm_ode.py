"""Integrate one SCM setting's order-parameter ODEs -> results/scm/runs/<setting>_ode.csv."""

import logging

from galu.scm.experiments import ode_table
from galu.workflow.output import Run

run = Run.from_snakemake(snakemake)
name = snakemake.wildcards.scm_setting
table = ode_table(name, snakemake.params.setting, snakemake.params.ode)
final = table.sort_values("alpha").groupby(["eta", "eta2_term"]).tail(1)
logging.info("final states:\n%s", final.to_string())
run.write_csv(table, snakemake.output.csv)
