"""Figure of the memorization stage from its tables (never trains): the drawing function
galu.memorization.figures.DRAW[figure], named in the sidecars with the functions that
computed the tables (the rule's ``computed_by``, from the figure table of memorization.smk)."""

from galu.memorization import figures
from galu.plot_job import draw_figure

draw_figure(snakemake, figures.DRAW)
