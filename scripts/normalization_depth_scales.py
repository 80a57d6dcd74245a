"""Mean-field fixed points and depth scales of the trained activations -> depth_scales.csv."""

from galu.normalization.mean_field import depth_scale_table
from galu.workflow.output import Run

run = Run.from_snakemake(snakemake)
run.write_csv(depth_scale_table(snakemake.params.activations), snakemake.output.csv)
