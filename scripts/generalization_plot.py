"""Figure of one generalization experiment from its runs/<dataset>.csv (never trains)."""

import pandas as pd

from galu.generalization import figures
from galu.plotting import scaled_title, use_style
from galu.provenance import Run

run = Run.from_snakemake(snakemake)
rows = pd.read_csv(snakemake.input.csv)
name = snakemake.params.figure
TITLES = {
    "mnist": "MNIST",
    "fashion_mnist": "Fashion-MNIST",
    "clusters": "Gaussian clusters: label noise",
    "linear": "Linearly separable data",
    "parity": "Parity of s random bits",
}
use_style()
if name in ("mnist", "fashion_mnist"):
    depth = snakemake.params.depth
    fig = figures.width_figure(rows, f"{depth} hidden layers, PCA-64 inputs")
else:
    fig = getattr(figures, f"{name}_figure")(rows)
scaled_title(fig, f"GaLU vs ReLU generalization: {TITLES[name]}", snakemake.params.scale)
run.save_figure(fig, snakemake.output.png, seeds=run.seeds_in(rows))
