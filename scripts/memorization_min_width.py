"""Search the minimal memorizing widths of one part -> runs/min_width_<criterion>/part<i>.csv."""

import logging

import torch

from galu.memorization.experiments import min_width_experiment
from galu.workflow.output import Run

torch.set_num_threads(snakemake.threads)
common = snakemake.params.common
run = Run.from_snakemake(snakemake)
device = run.use_device(common["device"])
criterion = snakemake.wildcards.criterion
part = int(snakemake.wildcards.part)
table = min_width_experiment(criterion, snakemake.params.settings, common, device, part)
logging.info("minimal widths (%s):\n%s", criterion, table.to_string())
for row in table[~table["found"]].itertuples():
    logging.warning(
        "%s m=%d d=%d out_dim=%d seed=%d: no width in [%d, %d] succeeded; raise width_max",
        row.model,
        row.m,
        row.d,
        row.out_dim,
        row.seed,
        row.search_lo,
        row.search_hi,
    )
run.write_csv(table, snakemake.output.csv)
