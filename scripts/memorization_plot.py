"""Figure of the memorization stage from its tables (never trains): the drawing function
galu.memorization.figures.draw_<figure>, named in the sidecars with the functions that
computed the tables (the rule's ``computed_by``, from the figure table of memorization.smk)."""

import pandas as pd

from galu.memorization import figures
from galu.provenance import Run

params = snakemake.params
draw = getattr(figures, f"draw_{params.figure}")
run = Run.from_snakemake(snakemake, extra={"drawn_by": f"{draw.__module__}.{draw.__name__}"})
tables = {name: pd.read_csv(path) for name, path in snakemake.input.items()}
fig = draw(tables, scale=params.scale)
run.save_figure(fig, snakemake.output.png, seeds=Run.seeds_in(pd.concat(tables.values())))
