"""Figure of the generalization stage from its dataset's table (never trains): the drawing
function galu.generalization.figures.DRAW[figure], named in the sidecars with the functions
that computed the table (the rule's ``computed_by``, from the figure table of
generalization.smk)."""

from galu.generalization import figures
from galu.plot_job import draw_figure

draw_figure(snakemake, figures.DRAW)
