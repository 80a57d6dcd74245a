"""Figure: max trainable depth per activation, and each run's loss ratio against depth."""

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from galu.plotting import (
    activation_colour,
    legend_outside,
    mark_zero_bars,
    scaled_title,
    use_style,
)
from galu.provenance import Run, is_substitute, log_to_file

log_to_file(snakemake.log[0])
inputs = [snakemake.input.max_depth, snakemake.input.runs]
run = Run.from_snakemake(snakemake, extra={"data_substitute": any(map(is_substitute, inputs))})
depth = pd.read_csv(snakemake.input.max_depth)
runs = pd.read_csv(snakemake.input.runs)
fraction = snakemake.params.loss_fraction
activations = list(dict.fromkeys(depth["activation"]))
widths = sorted(depth["width"].unique())
color = {a: activation_colour(a) for a in activations}
hatches = ["", "//", "..", "xx"]

use_style()
fig, (bars, ratios) = plt.subplots(1, 2, figsize=(12.5, 4.2), layout="constrained")
step = 0.8 / len(widths)
for j, width in enumerate(widths):
    d = depth[depth["width"] == width].set_index("activation").reindex(activations)
    x = np.arange(len(activations)) + (j - (len(widths) - 1) / 2) * step
    bars.bar(
        x,
        d["max_trainable_depth"],
        width=step,
        color=[color[a] for a in activations],
        hatch=hatches[j % len(hatches)],
        edgecolor="white",
        label=f"w = {width}",
    )
    # A depth of 0 (no tested depth trains) is a result, not a missing bar.
    mark_zero_bars(bars, x, d["max_trainable_depth"].fillna(-1), [color[a] for a in activations])
bars.set_xticks(np.arange(len(activations)), activations, rotation=20)
tested = sorted(runs["depth"].unique())
bars.set(ylabel="max trainable depth", yticks=[0, *tested], title="deepest depth that trains")
if len(widths) > 1:
    legend_outside(bars)
for activation in activations:
    one = runs[runs["activation"] == activation]
    mean = one.groupby("depth")["loss_ratio"].mean()
    ratios.plot(mean.index, mean.to_numpy(), marker="o", color=color[activation], label=activation)
    ratios.scatter(one["depth"], one["loss_ratio"], color=color[activation], s=8, alpha=0.5)
    diverged = one[one["diverged"]]
    ratios.scatter(
        diverged["depth"], diverged["loss_ratio"], color=color[activation], marker="x", s=40
    )
ratios.axhline(fraction, color="k", ls="--", lw=1, label=f"trains below {fraction}")
ratios.set(
    xlabel="depth (hidden layers)",
    ylabel="best loss / min(initial, ln 10)",
    title="training progress within the epoch budget (x: diverged)",
)
legend_outside(ratios)
scaled_title(fig, "Trainability of deep plain MLPs on CIFAR-10", snakemake.params.scale)
run.save_figure(fig, snakemake.output.png, seeds=sorted(runs["seed"].unique()))
