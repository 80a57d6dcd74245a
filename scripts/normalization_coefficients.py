"""Tabulate alpha, beta, gamma per activation -> results/normalization/coefficients.csv."""

import json

from galu.atomic import atomic_write_bytes
from galu.normalization.coefficients import coefficients_table
from galu.workflow.output import Run

run = Run.from_snakemake(snakemake)
settings = snakemake.params.settings
table = coefficients_table(
    settings["activations"], settings["quadrature_order"], settings["convergence_tolerance"]
)
run.write_csv(table, snakemake.output.csv)

# A small JSON of headline numbers for `dvc metrics show`.
summary = {
    "activations": len(table),
    "max_quadrature_error": float(table["quadrature_error"].max()),
    **{f"gamma_{row.activation}": float(row.gamma) for row in table.itertuples()},
}
atomic_write_bytes(snakemake.output.summary, (json.dumps(summary, indent=2) + "\n").encode())
run.stamp(snakemake.output.summary)
