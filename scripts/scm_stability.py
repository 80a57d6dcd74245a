"""Fixed points and Jacobian eigenvalues -> results/scm/stability.csv."""

import logging

import numpy as np

from galu.scm.experiments import stability_table
from galu.workflow.output import Run

run = Run.from_snakemake(snakemake)
settings = snakemake.params.stability
etas = np.linspace(settings["eta_min"], settings["eta_max"], settings["eta_points"])
table = stability_table(
    etas, "relu_k2m2", snakemake.params.plateau, settings["plateau_alpha"], snakemake.params.ode
)
plateau = table[table["fixed_point"] == "symmetric_plateau"]
logging.info("plateau:\n%s", plateau.iloc[:, :8].to_string())
run.write_csv(table, snakemake.output.csv)
