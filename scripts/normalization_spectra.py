"""Gather per-run spectra -> spectra.csv (W W^T per layer) and jacobian.csv (at init)."""

import pandas as pd

from galu.normalization.trainability import JACOBIAN_COLUMNS, SPECTRA_COLUMNS
from galu.workflow.output import Run

run = Run.from_snakemake(snakemake)
for paths, columns, output in (
    (snakemake.input.spectra, SPECTRA_COLUMNS, snakemake.output.csv),
    (snakemake.input.jacobian, JACOBIAN_COLUMNS, snakemake.output.jacobian),
):
    frames = [pd.read_csv(p) for p in paths]
    table = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=columns)
    run.write_csv(table, output, seeds=snakemake.params.seeds)
