"""One figure of any stage from its tables (never trains): the plot rules of
workflow/rules/figures.smk name the figure, its stage's figures module (``params.module``),
its tables and the drawing parameters; galu.workflow.plot_job draws and saves it."""

from galu.workflow.plot_job import draw_figure

draw_figure(snakemake)
