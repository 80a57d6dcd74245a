"""Figure: training loss and test error per epoch, one column per depth, one line per run."""

import matplotlib.pyplot as plt
import pandas as pd

from galu.plotting import activation_colour, legend_outside, log_ticks, scaled_title, use_style
from galu.provenance import Run, is_substitute, log_to_file

log_to_file(snakemake.log[0])
run = Run.from_snakemake(snakemake, extra={"data_substitute": is_substitute(snakemake.input.csv)})
curves = pd.read_csv(snakemake.input.csv)
depths = sorted(curves["depth"].unique())
activations = list(dict.fromkeys(curves["activation"]))
widths = sorted(curves["width"].unique())
styles = dict(zip(widths, ["-", "--", ":", "-."], strict=False))

use_style()
fig, axes = plt.subplots(
    2,
    len(depths),
    figsize=(3.4 * len(depths), 5.6),
    squeeze=False,
    sharex=True,
    sharey="row",
    layout="constrained",
)
for col, depth in enumerate(depths):
    for activation in activations:
        runs = curves[(curves["depth"] == depth) & (curves["activation"] == activation)]
        for (width, seed), one in runs.groupby(["width", "seed"]):
            label = activation if seed == runs["seed"].min() and width == widths[0] else None
            kw = {
                "color": activation_colour(activation),
                "ls": styles.get(width, "-"),
                "label": label,
                "lw": 1.2,
            }
            axes[0, col].plot(one["epoch"], one["train_loss"], **kw)
            axes[1, col].plot(one["epoch"], one["test_error"], **kw)
    axes[0, col].set(title=f"depth {depth}", yscale="log")
    axes[1, col].set(xlabel="epoch")
axes[0, 0].set_ylabel("training loss")
axes[1, 0].set_ylabel("test error")
# Line styles tell widths apart when there are several.
several = len(widths) > 1
legend_outside(
    axes[0, -1], title=", ".join(f"w={w}: {s}" for w, s in styles.items()) if several else None
)
for ax in axes[0]:
    log_ticks(ax, "y")
scaled_title(fig, "Deep plain MLPs on CIFAR-10", snakemake.params.scale)
run.save_figure(fig, snakemake.output.png, seeds=sorted(curves["seed"].unique()))
