"""Figure of SCM settings from their runs and stability.csv (never integrates or simulates)."""

import pandas as pd

from galu.plotting import scaled_title
from galu.provenance import Run
from galu.scm import figures

run = Run.from_snakemake(snakemake)
params = snakemake.params
stability = pd.read_csv(snakemake.input.stability)
runs = {
    name: pd.concat(
        [pd.read_csv(p) for p in snakemake.input.runs if p.split("/")[-1].startswith(f"{name}_")]
    )
    for name in params.settings
}
TITLES = {
    "perceptron": "ReLU perceptron, K = M = 1",
    "relu_k2m2": "ReLU, K = M = 2",
    "relu_k3m2": "ReLU, K = 3, M = 2",
    "erf_k3m2": "erf, K = 3, M = 2",
    "relu_k2m3": "ReLU, K = 2, M = 3",
}
if params.figure == "perceptron":
    fig = figures.perceptron_figure(runs["perceptron"], stability)
else:
    plateau = {name: figures.plateau_R(stability, name) for name in params.settings}
    fig = figures.settings_figure(runs, TITLES, plateau)
scaled_title(fig, "On-line learning in soft committee machines", params.scale)
run.save_figure(fig, snakemake.output.png, seeds=run.seeds_in(pd.concat(runs.values())))
