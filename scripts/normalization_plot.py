"""One figure of the static-normalization stage from its tables (never trains).

The rule (workflow/rules/normalization_figures.smk) names the figure, its tables (the
inputs, by name) and the drawing parameters; galu.normalization.figures.DRAW draws it.
"""

from galu.normalization import figures
from galu.plot_job import draw_figure

draw_figure(snakemake, figures.DRAW, figures.SHOWN_SEEDS)
