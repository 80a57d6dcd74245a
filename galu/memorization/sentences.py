"""What the memorization stage's figures show, in words computed from their CSVs
(Fiat, Malach & Shalev-Shwartz, arXiv 1906.05032, sec. 3).

One function per figure, tables in (contract path -> frame), sentences out; :data:`SENTENCES`
names each figure's CSVs and its function. The report captions append them
(:mod:`galu.workflow.observations`), so a caption cannot say "grows" where the data fall.
"""

from __future__ import annotations

from collections.abc import Mapping

import pandas as pd

from galu.memorization.band import claim_band
from galu.reference import AUTHORS_MIN_WIDTH, authors_min_width
from galu.sentences import Describe, join, number, trend


def zero_error(tables: Mapping[str, pd.DataFrame], band: float | None = None) -> list[str]:
    """Range of min_width * d / m per model, and every search outside ``1 +- band`` (by
    default the band of the claim, :func:`galu.memorization.band.claim_band`)."""
    band = claim_band() if band is None else band
    rows = tables["results/memorization/min_width.csv"]
    rows = rows[rows["criterion"] == "zero_error"]
    found = rows[rows["found"].astype(bool)]
    parts = [
        f"{model} from {number(one['kd_over_m'].min())} to {number(one['kd_over_m'].max())} "
        f"(median {number(one['kd_over_m'].median())}, {len(one)} searches)"
        for model, one in found.groupby("model", sort=False)
    ]
    lines = ["min_width * d / m: " + join(parts) + "."] if parts else []
    outside = found[(found["kd_over_m"] - 1).abs() > band]
    if len(outside):
        listed = ", ".join(
            f"{r.model} at m = {r.m}, d = {r.d}, seed {r.seed}: {number(r.kd_over_m)}"
            for r in outside.sort_values("kd_over_m", ascending=False).itertuples()
        )
        lines.append(
            f"{len(outside)} of {len(found)} searches lie outside 1 ± {band:g} ({listed})."
        )
    else:
        lines.append(f"All {len(found)} searches lie within 1 ± {band:g}.")
    failed = rows[~rows["found"].astype(bool)]
    if len(failed):
        lines.append(f"{len(failed)} search(es) found no width up to the largest tried.")
    return lines


def underparam(tables: Mapping[str, pd.DataFrame]) -> list[str]:
    """Per model: how the loss changes with kd/m, and its distance to the GaLU law."""
    rows = tables["results/memorization/underparam.csv"]
    lines = []
    for model, one in rows.groupby("model", sort=False):
        mean = one.groupby("kd_over_m")["train_loss"].mean().sort_index()
        gap = (one["train_loss"] - (1 - one["kd_over_m"])).abs().max()
        lines.append(
            f"{model}: the mean loss {trend(mean.iloc[0], mean.iloc[-1])} as kd/m goes from "
            f"{number(mean.index[0])} to {number(mean.index[-1])}; largest distance to "
            f"1 - kd/m {number(gap)}."
        )
    return lines


def min_width(tables: Mapping[str, pd.DataFrame]) -> list[str]:
    """Per model: how the minimal width changes with the label dimension."""
    rows = tables["results/memorization/min_width.csv"]
    rows = rows[(rows["criterion"] == "mse") & rows["found"].astype(bool)]
    lines = []
    for model, one in rows.groupby("model", sort=False):
        mean = one.groupby("out_dim")["min_width"].mean().sort_index()
        if len(mean) == 1:
            lines.append(
                f"{model}: minimal width {number(mean.iloc[0])} (out_dim = {mean.index[0]} only)."
            )
            continue
        lines.append(
            f"{model}: the minimal width {trend(mean.iloc[0], mean.iloc[-1])} as out_dim goes "
            f"from {mean.index[0]} to {mean.index[-1]}."
        )
    return lines


def _ratios(found: pd.DataFrame) -> tuple[pd.Series, pd.Series]:
    """Per out_dim: GaLU's minimal width over ReLU's, and the mean over the two models of
    the minimal width over the counting line ``m out_dim / (d + out_dim)``."""
    widths = found.pivot_table(index="out_dim", columns="model", values="min_width")
    counting = found["m"] * found["out_dim"] / (found["d"] + found["out_dim"])
    share = (found["min_width"] / counting).groupby(found["out_dim"]).mean()
    both = {"galu", "relu"} <= set(widths.columns)
    ratio = (widths["galu"] / widths["relu"]).dropna() if both else pd.Series(dtype=float)
    return ratio, share


def _span(values: pd.Series) -> str:
    return f"{number(values.min())} to {number(values.max())}" if len(values) else "–"


def min_width_against_authors(tables: Mapping[str, pd.DataFrame]) -> list[str]:
    """The authors' published minimal widths beside ours: their settings, their widths, and
    two ratios that do not depend on m and d (GaLU over ReLU, width over the counting line)."""
    rows = tables["results/memorization/min_width.csv"]
    ours = rows[(rows["criterion"] == "mse") & rows["found"].astype(bool)]
    ours = ours[ours["model"].isin(["relu", "galu"])]
    threshold = float(ours["mse_threshold"].iloc[0]) if len(ours) else 0.3
    theirs = authors_min_width(tables[AUTHORS_MIN_WIDTH], threshold)
    if not len(theirs) or not len(ours):
        return []
    ours = ours.groupby(["model", "m", "d", "out_dim"], as_index=False)["min_width"].mean()
    settings = ", ".join(f"m = {m}, d = {d}" for m, d in theirs.groupby(["m", "d"]).groups)
    widths = join(
        [
            f"{model} {', '.join(str(w) for w in one.sort_values('out_dim')['min_width'])}"
            for model, one in theirs.groupby("model", sort=True)
        ]
    )
    dims = ", ".join(str(d) for d in sorted(theirs["out_dim"].unique()))
    same = ours[["m", "d"]].drop_duplicates().merge(theirs[["m", "d"]].drop_duplicates())
    where = "on our axes" if len(same) else "in a panel of their own, since our m and d differ"
    their_ratio, their_share = _ratios(theirs)
    our_ratio, our_share = _ratios(ours)
    return [
        f"The authors' published minimal widths ({settings}, MSE below {threshold:g}; drawn"
        f" {where}) at out_dim {dims}: {widths}.",
        f"GaLU's minimal width over ReLU's: theirs {_span(their_ratio)}, ours"
        f" {_span(our_ratio)}; minimal width over the counting line m out_dim / (d + out_dim):"
        f" theirs {_span(their_share)}, ours {_span(our_share)}.",
    ]


def min_width_with_authors(tables: Mapping[str, pd.DataFrame]) -> list[str]:
    """:func:`min_width`, then :func:`min_width_against_authors`."""
    return min_width(tables) + min_width_against_authors(tables)


# figure -> (the CSVs it is drawn from, the function that describes them)
SENTENCES: dict[str, tuple[tuple[str, ...], Describe]] = {
    "figures/memorization/zero_error.png": (("results/memorization/min_width.csv",), zero_error),
    "figures/memorization/min_width.png": (
        ("results/memorization/min_width.csv", AUTHORS_MIN_WIDTH),
        min_width_with_authors,
    ),
    "figures/memorization/underparam.png": (
        ("results/memorization/underparam.csv",),
        underparam,
    ),
}
