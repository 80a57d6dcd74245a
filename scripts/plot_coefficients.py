"""Figure: each activation beside its normalized version, from coefficients.csv."""

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from galu.activations import get_activation
from galu.plotting import activation_colour, scaled_title, use_style
from galu.provenance import Run

run = Run.from_snakemake(snakemake)
table = pd.read_csv(snakemake.input.csv)
x_max = snakemake.params.settings["x_max"]

use_style()
fig, (raw, norm) = plt.subplots(1, 2, figsize=(9.6, 4.0), sharex=True)
x = np.linspace(-x_max, x_max, 801)
for row in table.itertuples():
    f = get_activation(row.activation).f
    colour = activation_colour(row.activation)
    raw.plot(x, f(x), label=row.activation, color=colour)
    norm.plot(x, (f(x) - row.alpha * x - row.beta) / row.gamma, color=colour)
raw.set(xlabel="pre-activation x", ylabel="f(x)", title="raw")
norm.set(xlabel="pre-activation x", ylabel="(f(x) - alpha x - beta) / gamma", title="normalized")
# One legend for both panels, beside the right one (never over the curves).
handles, labels = raw.get_legend_handles_labels()
norm.legend(handles, labels, loc="upper left", bbox_to_anchor=(1.02, 1.0), borderaxespad=0.0)
scaled_title(fig, "Activations and their static normalization", snakemake.params.scale)
run.save_figure(fig, snakemake.output.png)
