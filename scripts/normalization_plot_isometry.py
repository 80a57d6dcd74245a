"""Figure: eigenvalue histograms of (1/n) F F^T, raw and normalized, against MP's density."""

import math

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from galu.normalization.isometry import mp_density
from galu.plotting import scaled_title, use_style
from galu.provenance import Run, log_to_file

log_to_file(snakemake.log[0])
run = Run.from_snakemake(snakemake)
summary = pd.read_csv(snakemake.input.csv)
eigen = pd.read_csv(snakemake.input.eigenvalues)
first_seed = eigen["seed"].min()
activations = list(dict.fromkeys(summary["activation"]))

use_style()
cols = min(3, len(activations))
rows = math.ceil(len(activations) / cols)
fig, axes = plt.subplots(
    rows, cols, figsize=(3.8 * cols, 3.1 * rows + 0.4), squeeze=False, layout="constrained"
)
# Eigenvalues divided by the MP variance E f(z)^2, so every panel compares with MP(1) on [0, 4].
bins = np.linspace(0.0, 6.0, snakemake.params.bins + 1)
x = np.linspace(1e-3, 4.0, 400)
for ax, activation in zip(axes.flat, activations, strict=False):
    ks = summary[summary["activation"] == activation].groupby("variant")["ks_distance"].mean()
    notes = []
    for variant, color in (("raw", "C1"), ("normalized", "C0")):
        row = summary[(summary["activation"] == activation) & (summary["variant"] == variant)]
        lam = eigen.query(
            "activation == @activation and variant == @variant and seed == @first_seed"
        )
        scaled = lam["eigenvalue"].to_numpy() / row["mp_variance"].iloc[0]
        outside = int(np.sum(scaled > bins[-1]))
        notes.append(f"{variant} KS {ks[variant]:.3f}" + (f", {outside} > 6" if outside else ""))
        ax.hist(
            np.clip(scaled, 0, bins[-1]),
            bins=bins,
            density=True,
            histtype="step",
            color=color,
            label=variant,
        )
    ax.plot(x, mp_density(x), color="k", lw=1.0, ls="--", label="Marchenko-Pastur")
    # The KS distances (and eigenvalues beyond the axis) go in the title, not over the data.
    ax.set(
        title=f"{activation}\n{'; '.join(notes)}",
        xlabel="eigenvalue / E f(z)^2",
        ylabel="density",
        ylim=(0, 1.2),
    )
# One legend for the three line styles, the same in every panel, below the panels.
handles, labels = axes.flat[0].get_legend_handles_labels()
fig.legend(handles, labels, loc="outside lower center", ncol=len(labels))
for ax in list(axes.flat)[len(activations) :]:
    ax.set_axis_off()
scaled_title(
    fig,
    f"Static isometry: spectra of (1/n) F F^T, n = {summary['n'].iloc[0]}",
    snakemake.params.scale,
)
run.save_figure(fig, snakemake.output.png, seeds=[int(first_seed)])
