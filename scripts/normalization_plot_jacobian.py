"""Figure: CDF of the Jacobian's squared singular values at init, per activation and depth."""

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from galu.plotting import scaled_title, use_style
from galu.provenance import Run, is_substitute, log_to_file

log_to_file(snakemake.log[0])
run = Run.from_snakemake(snakemake, extra={"data_substitute": is_substitute(snakemake.input.csv)})
jac = pd.read_csv(snakemake.input.csv)
jac = jac[jac["width"] == jac["width"].min()]
activations = list(dict.fromkeys(jac["activation"]))
depths = sorted(jac["depth"].unique())
# Squared singular values span many decades (ReLU) or sit exactly at 1 (tilted ReLU, |x|):
# a CDF on a shared log axis shows both. Exact zeros (ReLU: rank lost to inactive units)
# are floored at 1e-12 so they stay on the plot.
floor = 1e-12

use_style()
fig, axes = plt.subplots(
    1,
    len(activations),
    figsize=(4.4 * len(activations), 3.8),
    squeeze=False,
    sharex=True,
    sharey=True,
    layout="constrained",
)
for ax, activation in zip(axes[0], activations, strict=True):
    for i, depth in enumerate(depths):
        values = np.sort(
            np.maximum(
                jac.query("activation == @activation and depth == @depth")[
                    "squared_singular_value"
                ].to_numpy(),
                floor,
            )
        )
        if values.size:
            ax.step(
                values,
                np.arange(1, values.size + 1) / values.size,
                where="post",
                color=f"C{i}",
                label=f"depth {depth}",
            )
    ax.set(title=activation, xscale="log", xlabel="squared singular value of d h_L / d h_1")
    ax.axvline(1.0, color="k", ls=":", lw=1)
    ax.legend(loc="upper left")
axes[0, 0].set_ylabel("fraction of singular values")
scaled_title(fig, "Input-output Jacobian spectra at initialization", snakemake.params.scale)
run.save_figure(fig, snakemake.output.png, seeds=sorted(jac["seed"].unique()))
