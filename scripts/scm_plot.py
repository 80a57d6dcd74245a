"""Figure of the SCM stage from its tables (never integrates or simulates): the drawing
function galu.scm.figures.DRAW[figure], named in the sidecars with the functions that
computed the tables (the rule's ``computed_by``, from the figure table of scm.smk)."""

from galu.plot_job import draw_figure
from galu.scm import figures

draw_figure(snakemake, figures.DRAW)
