"""Figure: CDF of the Jacobian's squared singular values at init, per activation and depth."""

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from galu.observations import JACOBIAN_FLOOR, jacobian_stats
from galu.plotting import legend_outside, log_ticks, scaled_title, use_style
from galu.provenance import Run, is_substitute, log_to_file

log_to_file(snakemake.log[0])
run = Run.from_snakemake(snakemake, extra={"data_substitute": is_substitute(snakemake.input.csv)})
jac = pd.read_csv(snakemake.input.csv)
jac = jac[jac["width"] == jac["width"].min()]
activations = list(dict.fromkeys(jac["activation"]))
depths = sorted(jac["depth"].unique())
# Squared singular values span many decades (ReLU) or sit exactly at 1 (tilted ReLU, |x|):
# a CDF on a shared log axis shows both. Values below JACOBIAN_FLOOR are numerically zero
# (ReLU: rank lost to inactive units) and have no place on a log axis: they are not drawn,
# the CDF starts at their fraction (the curve's height at the left edge), and the legend
# states that fraction.

use_style()
fig, axes = plt.subplots(
    1,
    len(activations),
    figsize=(4.8 * len(activations), 3.8),
    squeeze=False,
    sharex=True,
    sharey=True,
    layout="constrained",
)
low = jac.loc[jac["squared_singular_value"] >= JACOBIAN_FLOOR, "squared_singular_value"].min()
for ax, activation in zip(axes[0], activations, strict=True):
    for i, depth in enumerate(depths):
        values = jac.query("activation == @activation and depth == @depth")[
            "squared_singular_value"
        ].to_numpy()
        if not values.size:
            continue
        stats = jacobian_stats(values)
        above = np.sort(values[values >= JACOBIAN_FLOOR])
        zeros = values.size - above.size
        label = f"depth {depth}"
        if zeros:
            label += f": {100 * stats.at_floor:.0f} % < {JACOBIAN_FLOOR:g}, not drawn"
        cdf = (zeros + np.arange(1, above.size + 1)) / values.size
        ax.step(above, cdf, where="post", color=f"C{i}", label=label)
        if zeros:
            ax.plot([above[0] if above.size else low], [zeros / values.size], "o",
                    color=f"C{i}", ms=4, mfc="white")  # fmt: skip
    ax.set(title=activation, xscale="log", xlabel="squared singular value of d h_L / d h_1")
    ax.axvline(1.0, color="k", ls=":", lw=1)
    legend_outside(ax, loc="upper left", bbox_to_anchor=(0.0, -0.22))
for ax in axes[0]:
    log_ticks(ax, "x")
axes[0, 0].set_ylabel("fraction of singular values")
scaled_title(fig, "Input-output Jacobian spectra at initialization", snakemake.params.scale)
run.save_figure(fig, snakemake.output.png, seeds=sorted(jac["seed"].unique()))
