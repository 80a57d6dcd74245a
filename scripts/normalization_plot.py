"""One figure of the static-normalization stage from its tables (never trains).

The rule (workflow/rules/normalization_figures.smk) names the figure, its tables (the
inputs, by name) and the drawing parameters; galu.normalization.figures draws it.
"""

import pandas as pd

from galu.normalization import figures
from galu.plotting import use_style
from galu.provenance import Run

params = snakemake.params
draw = figures.DRAW[params.figure]
# The sidecar names the drawing function; the tables' own sidecars name the code that made them.
run = Run.from_snakemake(snakemake, extra={"drawn_by": f"{draw.__module__}.{draw.__name__}"})
tables = {name: pd.read_csv(path) for name, path in snakemake.input.items()}
use_style()
fig = draw(tables, scale=params.scale, **params.draw)
run.save_figure(fig, snakemake.output.png, seeds=figures.SHOWN_SEEDS[params.figure](tables))
