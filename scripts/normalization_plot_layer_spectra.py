"""Figure: sorted eigenvalues of W_l W_l^T per hidden layer, trained, coloured by layer."""

import matplotlib.pyplot as plt
import pandas as pd
from matplotlib import cm, colors

from galu.plotting import log_ticks, scaled_title, use_style
from galu.provenance import Run, is_substitute, log_to_file

log_to_file(snakemake.log[0])
run = Run.from_snakemake(snakemake, extra={"data_substitute": is_substitute(snakemake.input.csv)})
spectra = pd.read_csv(snakemake.input.csv)
# One network per panel: the first seed at the smallest width; square hidden layers only
# (layer 1 maps the 3072 inputs, the last one is the 10-way readout).
spectra = spectra[
    (spectra["seed"] == spectra["seed"].min()) & (spectra["width"] == spectra["width"].min())
]
spectra = spectra[(spectra["layer"] > 1) & (spectra["layer"] <= spectra["depth"])]
activations = list(dict.fromkeys(spectra["activation"]))
depths = sorted(spectra["depth"].unique())

use_style()
fig, axes = plt.subplots(
    len(activations),
    len(depths),
    figsize=(3.4 * len(depths), 3.0 * len(activations)),
    squeeze=False,
    sharey=True,
    layout="constrained",
)
cmap = plt.get_cmap("viridis")
for row, activation in enumerate(activations):
    for col, depth in enumerate(depths):
        ax = axes[row, col]
        net = spectra[(spectra["activation"] == activation) & (spectra["depth"] == depth)]
        norm = colors.Normalize(2, max(depth, 3))
        for layer, one in net[net["stage"] == "trained"].groupby("layer"):
            ax.plot(
                one["index"] / one["index"].max(),
                one["eigenvalue"],
                color=cmap(norm(layer)),
                lw=0.8,
            )
        init = net.loc[net["stage"] == "init", "eigenvalue"]
        title = f"{activation}, depth {depth}"
        if not init.empty:
            # The init level is named in the title: a legend would cover the curves.
            ax.axhline(init.mean(), color="k", ls="--", lw=1)
            title += f"\n(dashed: init, {init.mean():.2f})"
        ax.set(title=title, yscale="log", xlabel="rank / width")
        fig.colorbar(cm.ScalarMappable(norm=norm, cmap=cmap), ax=ax, label="layer")
    axes[row, 0].set_ylabel("eigenvalue of W W^T")
for ax in axes.flat:
    log_ticks(ax, "y")
scaled_title(fig, "Layer spectra after training (paper Fig. 6)", snakemake.params.scale)
run.save_figure(fig, snakemake.output.png, seeds=sorted(spectra["seed"].unique()))
