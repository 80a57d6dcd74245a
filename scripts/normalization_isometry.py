"""Spectra of (1/n) f(Z) f(Z)^T against Marchenko-Pastur -> isometry.csv (+ eigenvalues)."""

from galu.normalization.isometry import isometry_tables
from galu.workflow.output import Run

run = Run.from_snakemake(snakemake)
params = snakemake.params
summary, eigenvalues = isometry_tables(params.activations, params.n, params.seeds)
run.write_csv(summary, snakemake.output.csv, seeds=params.seeds)
run.write_csv(eigenvalues, snakemake.output.eigenvalues, seeds=params.seeds)
