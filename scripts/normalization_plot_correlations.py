"""Figure: the one-layer correlation map (theory) and the per-layer correlations at init."""

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from galu.normalization.correlation import correlation_map
from galu.plotting import activation_colour, legend_outside, scaled_title, use_style
from galu.provenance import Run, is_substitute, log_to_file

log_to_file(snakemake.log[0])
run = Run.from_snakemake(snakemake, extra={"data_substitute": is_substitute(snakemake.input.csv)})
table = pd.read_csv(snakemake.input.csv)
activations = list(dict.fromkeys(table["activation"]))

use_style()
fig, (theory, measured) = plt.subplots(1, 2, figsize=(12, 4), layout="constrained")
rho = np.linspace(0.0, 1.0, 201)
theory.plot(rho, rho, color="k", ls=":", lw=1, label="identity")
for activation in ("relu", "tilted_relu"):
    theory.plot(
        rho,
        correlation_map(activation, rho),
        color=activation_colour(activation),
        label=f"{activation}" + (" (= abs)" if activation == "tilted_relu" else ""),
    )
theory.set(
    xlabel="input correlation rho",
    ylabel="centred correlation after one layer",
    title="(a) one layer, Gaussian inputs (theory)",
)
legend_outside(theory)
for activation in activations:
    rows = table[table["activation"] == activation].sort_values("layer")
    measured.plot(
        rows["layer"], rows["mean_abs_cos"], color=activation_colour(activation), label=activation
    )
measured.axhline(
    table["random_baseline"].iloc[0], color="k", ls="--", lw=1, label="independent random vectors"
)
measured.set(
    xlabel="hidden layer l",
    ylabel="mean |cos| of two images' centred h_l",
    title="(b) CIFAR-10 test images, networks at initialization",
    ylim=(0, 1),
)
legend_outside(measured)
scaled_title(fig, "Correlation propagation in deep plain MLPs", snakemake.params.scale)
run.save_figure(fig, snakemake.output.png, seeds=sorted(table["seed"].unique()))
