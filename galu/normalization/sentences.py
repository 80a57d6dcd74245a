"""What the static-normalization stage's figures show, in words computed from their
CSVs (Richemond & Guo, arXiv 1905.01369).

One function per figure, tables in (contract path -> frame), sentences out; :data:`SENTENCES`
names each figure's CSVs and its function. The report captions append them
(:mod:`galu.workflow.observations`), so a caption cannot say "grows" where the data fall.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

import pandas as pd

from galu.normalization.jacobian_summary import JACOBIAN_FLOOR, jacobian_stats
from galu.sentences import ZERO, Describe, join, number, path, trend


def max_depth(tables: Mapping[str, pd.DataFrame]) -> list[str]:
    """The deepest depth that trains, per activation (and width)."""
    rows = tables["results/normalization/max_depth.csv"]
    several = rows["width"].nunique() > 1
    parts = [
        f"{r.activation}{f' (w = {r.width})' if several else ''} "
        + (str(int(r.max_trainable_depth)) if r.max_trainable_depth else "none of the depths")
        for r in rows.itertuples()
    ]
    return ["Deepest tested depth that trains: " + join(parts) + "."]


def training(tables: Mapping[str, pd.DataFrame]) -> list[str]:
    """Per activation and depth: the mean training loss from epoch 0 to the last epoch, and
    the final test error."""
    rows = tables["results/normalization/trainability.csv"]
    lines = []
    for activation, one in rows.groupby("activation", sort=False):
        parts = []
        for depth, net in one.groupby("depth"):
            loss = net.groupby("epoch")["train_loss"].mean().sort_index()
            error = net.groupby("epoch")["test_error"].mean().sort_index()
            parts.append(
                f"depth {depth}: loss {trend(loss.iloc[0], loss.iloc[-1])}, test error "
                f"{number(error.iloc[-1])}"
            )
        lines.append(f"{activation} (mean over runs, epoch 0 to last): " + join(parts) + ".")
    return lines


def jacobian_spectra(tables: Mapping[str, pd.DataFrame]) -> list[str]:
    """Per activation and depth (smallest width): the fraction of squared singular values
    that are numerically zero, the median and the spread in decades of the others."""
    rows = tables["results/normalization/jacobian.csv"]
    rows = rows[rows["width"] == rows["width"].min()]
    lines = []
    for activation, one in rows.groupby("activation", sort=False):
        parts = []
        for depth, net in one.groupby("depth"):
            values = net["squared_singular_value"].to_numpy(dtype=float)
            stats = jacobian_stats(values)
            text = f"depth {depth}: median {number(stats.median)}"
            if stats.decades > 0.01:
                text += f", 5-95 % range {number(stats.decades)} decades"
            if stats.at_floor:
                text += f", {100 * stats.at_floor:.0f} % below {JACOBIAN_FLOOR:g} (rank lost)"
            parts.append(text)
        lines.append(f"{activation}: " + join(parts) + ".")
    return lines


def correlations(tables: Mapping[str, pd.DataFrame], near: float = 0.02) -> list[str]:
    """Per activation: mean |cos| from the first to the last layer, and the first layer within
    ``near`` of the random-vector value."""
    rows = tables["results/normalization/correlations.csv"]
    baseline = float(rows["random_baseline"].iloc[0])
    parts = []
    for activation, one in rows.groupby("activation", sort=False):
        one = one.sort_values("layer")
        text = f"{activation} {path(one['layer'], one['mean_abs_cos'], 'layer')}"
        close = one[(one["mean_abs_cos"] - baseline).abs() <= near]
        text += (
            f" (within {near:g} of random from layer {close['layer'].iloc[0]})"
            if len(close)
            else ""
        )
        parts.append(text)
    # Here, not at the top: the workflow imports this module when it parses, and the
    # normalization package brings scipy.
    from galu.normalization.correlation_map import correlation_map

    first, last = rows["layer"].min(), rows["layer"].max()
    step = 1e-6  # central difference of the closed form at rho = 0
    slopes = [
        f"{a} {number((correlation_map(a, step) - correlation_map(a, -step)) / (2 * step), ZERO)}"
        for a in ("relu", "tilted_relu")
    ]
    return [
        "Theory, the fraction of a small correlation one layer keeps (slope at 0): "
        + join(slopes)
        + ".",
        f"Mean |cos| from layer {first} to layer {last} (independent random vectors: "
        f"{number(baseline)}): " + join(parts) + ".",
    ]


def isometry(tables: Mapping[str, pd.DataFrame]) -> list[str]:
    """Mean Kolmogorov-Smirnov distance to Marchenko-Pastur per activation, raw and normalized."""
    rows = tables["results/normalization/isometry.csv"]
    ks = rows.groupby(["activation", "variant"], sort=False)["ks_distance"].mean()
    parts = [
        f"{activation} raw {number(ks.get((activation, 'raw'), math.nan))}, normalized "
        f"{number(ks.get((activation, 'normalized'), math.nan))}"
        for activation in dict.fromkeys(rows["activation"])
    ]
    return ["Mean KS distance to Marchenko-Pastur: " + join(parts) + "."]


def layer_spectra(tables: Mapping[str, pd.DataFrame]) -> list[str]:
    """Per panel (first seed, smallest width): the spread of the deepest square layer's
    eigenvalues after training."""
    rows = tables["results/normalization/spectra.csv"]
    rows = rows[(rows["seed"] == rows["seed"].min()) & (rows["width"] == rows["width"].min())]
    rows = rows[(rows["stage"] == "trained") & (rows["layer"] > 1)]
    rows = rows[rows["layer"] <= rows["depth"]]
    parts = []
    for (activation, depth), net in rows.groupby(["activation", "depth"], sort=False):
        deepest = net[net["layer"] == net["layer"].max()]["eigenvalue"]
        parts.append(
            f"{activation}, depth {depth}: {number(deepest.min())} to {number(deepest.max())}"
        )
    return ["Eigenvalues of the deepest hidden layer after training: " + join(parts) + "."]


def activations(tables: Mapping[str, pd.DataFrame]) -> list[str]:
    """The Gaussian moments of every activation, ReLU's against their closed forms, the
    activations that need no offset, and the smallest and largest gamma (the norm of the
    nonlinear part that the normalization divides by)."""
    rows = tables["results/normalization/coefficients.csv"]
    if not len(rows):
        return []
    parts = [
        f"{r.activation} " + ", ".join(number(v, ZERO) for v in (r.alpha, r.beta, r.gamma))
        for r in rows.itertuples()
    ]
    lines = ["alpha, beta, gamma: " + join(parts) + "."]
    relu = rows[rows["activation"] == "relu"]
    if len(relu):
        r = relu.iloc[0]
        closed = (0.5, 1 / math.sqrt(2 * math.pi), math.sqrt(0.25 - 1 / (2 * math.pi)))
        gap = max(abs(r[c] - v) for c, v in zip(("alpha", "beta", "gamma"), closed, strict=True))
        lines.append(
            "relu against its closed forms 1/2, 1/sqrt(2 pi), sqrt(1/4 - 1/(2 pi)): largest "
            f"difference {number(gap, ZERO)} (to {ZERO:g}), so normalized ReLU is "
            f"(|x| - sqrt(2/pi)) / {number(2 * r['gamma'], ZERO)}."
        )
    centred = rows[rows["beta"].abs() <= ZERO]["activation"]
    if len(centred):
        lines.append(f"No offset needed (beta = 0 to {ZERO:g}): {', '.join(centred)}.")
    low, high = rows.loc[rows["gamma"].idxmin()], rows.loc[rows["gamma"].idxmax()]
    lines.append(
        f"Smallest gamma {low['activation']} {number(low['gamma'])}: the most nearly linear "
        f"under N(0, 1), so its normalized form is stretched most (by 1/gamma = "
        f"{number(1 / low['gamma'])}); largest {high['activation']} {number(high['gamma'])}."
    )
    return lines


def ablation(tables: Mapping[str, pd.DataFrame]) -> list[str]:
    """Per activation and optimizer at the ablation's depth: in how many of its settings
    (learning rate x gain factor) the network trains, how many diverged, and the best final
    test error with its setting."""
    rows = tables["results/normalization/ablation.csv"]
    if not len(rows):
        return []
    parts = []
    for (activation, optimizer), one in rows.groupby(["activation", "optimizer"], sort=False):
        trains, diverged = int(one["trains"].astype(bool).sum()), int(one["diverged"].sum())
        text = f"{activation} with {optimizer} trains in {trains} of {len(one)}"
        text += f" ({diverged} diverged)" if diverged else ""
        errors = one["final_test_error"].dropna()
        if len(errors):
            best = one.loc[errors.idxmin()]
            text += (
                f", best final test error {number(best['final_test_error'])} (lr"
                f" {best['lr']:g}, gain factor {best['gain_factor']:g})"
            )
        parts.append(text)
    head = (
        f"At depth {int(rows['depth'].iloc[0])}, settings in which the network trains (best"
        f" loss below {rows['loss_fraction'].iloc[0]:g} of its reference): "
    )
    return [head + join(parts) + "."]


# Schoenholz et al. (ICLR 2017, Sec. 5): networks train up to about six correlation depth
# scales xi_c (the depth_scales figure marks it too).
TRAINABLE_XI = 6.0


def depth_scales(tables: Mapping[str, pd.DataFrame]) -> list[str]:
    """Per activation: its mean-field depth scale ``xi_c`` (and ``6 xi_c``) beside the mean
    final test error at the shallowest and the deepest depth trained (narrowest width)."""
    runs = tables["results/normalization/trainability_runs.csv"]
    scales = tables["results/normalization/depth_scales.csv"].set_index("activation")["xi_c"]
    runs = runs[runs["width"] == runs["width"].min()]
    parts = []
    for activation, one in runs.groupby("activation", sort=False):
        error = one.groupby("depth")["final_test_error"].mean().sort_index()
        xi = float(scales.get(activation, math.nan))
        if math.isinf(xi):
            scale = "xi_c infinite"
        elif math.isnan(xi):
            scale = "xi_c not computed"
        else:
            scale = f"xi_c {number(xi)}, {TRAINABLE_XI:g} xi_c = {number(TRAINABLE_XI * xi)}"
        parts.append(
            f"{activation} ({scale}): {number(error.iloc[0])} at depth {error.index[0]},"
            f" {number(error.iloc[-1])} at depth {error.index[-1]}"
        )
    return ["Mean final test error, shallowest and deepest depth: " + join(parts) + "."]


# figure -> (the CSVs it is drawn from, the function that describes them)
SENTENCES: dict[str, tuple[tuple[str, ...], Describe]] = {
    "figures/normalization/activations.png": (
        ("results/normalization/coefficients.csv",),
        activations,
    ),
    "figures/normalization/max_depth.png": (
        ("results/normalization/max_depth.csv",),
        max_depth,
    ),
    "figures/normalization/training_curves.png": (
        ("results/normalization/trainability.csv",),
        training,
    ),
    "figures/normalization/jacobian_spectra.png": (
        ("results/normalization/jacobian.csv",),
        jacobian_spectra,
    ),
    "figures/normalization/correlations.png": (
        ("results/normalization/correlations.csv",),
        correlations,
    ),
    "figures/normalization/isometry.png": (("results/normalization/isometry.csv",), isometry),
    "figures/normalization/layer_spectra.png": (
        ("results/normalization/spectra.csv",),
        layer_spectra,
    ),
    "figures/normalization/ablation.png": (("results/normalization/ablation.csv",), ablation),
    "figures/normalization/depth_scales.png": (
        ("results/normalization/trainability_runs.csv", "results/normalization/depth_scales.csv"),
        depth_scales,
    ),
}
