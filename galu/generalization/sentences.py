"""What the generalization stage's figures show (Fiat, Malach & Shalev-Shwartz, arXiv
1906.05032, sec. 5), in words computed from the CSVs: the image figures' errors, also beside
the authors' published numbers, and the synthetic tasks' (clusters, linear, parity).

One function per figure, tables in (contract path -> frame), sentences out; :data:`SENTENCES`
names each figure's CSVs and its function (the report captions append them,
:mod:`galu.workflow.observations`).
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import partial

import numpy as np
import pandas as pd

from galu.reference import AUTHORS_IMAGES, authors_test_selected
from galu.sentences import Describe, join, number, trend

ACCURACY = "results/generalization/accuracy.csv"
# The models both we and the authors trained on the images, in their names.
SHARED = {"relu": "ReLU", "galu0": "GaLU0"}
# Every model's name in the sentences (the figures' legend names, shortened).
NAMES = {
    "relu": "ReLU",
    "galu0": "GaLU0",
    "galu": "GaLU (step gates)",
    "galu_sigmoid_prev": "sigmoid gates on h",
    "galu_exact": "GaLU (exact)",
    "linear": "linear",
}


def _name(model: str) -> str:
    return NAMES.get(model, model)


def _models(rows: pd.DataFrame) -> list[str]:
    """The models of ``rows`` in the order of :data:`NAMES` (others after them)."""
    present = list(dict.fromkeys(rows["model"]))
    return sorted(present, key=lambda m: list(NAMES).index(m) if m in NAMES else len(NAMES))


def _rows(tables: Mapping[str, pd.DataFrame], dataset: str) -> pd.DataFrame:
    rows = tables[ACCURACY]
    return rows[rows["dataset"] == dataset]


def _trends(error: pd.Series, models: list[str]) -> list[str]:
    """Each model's :func:`trend` from its first to its last value (``error`` indexed by
    model, then the x it changes along, sorted)."""
    return [f"{_name(m)} {trend(error[m].iloc[0], error[m].iloc[-1])}" for m in models]


def _values(series: pd.Series) -> str:
    return ", ".join(number(v) for v in series)


def images(tables: Mapping[str, pd.DataFrame], dataset: str) -> list[str]:
    """The validation-selected test error (mean over seeds) of every model at every width,
    the linear baseline's, and at how many (model, width) points picking the
    hyper-parameters on the test set instead changes the error (the figure's dotted lines)."""
    rows = _rows(tables, dataset)
    if not len(rows):
        return []
    nets = rows[rows["model"] != "linear"]
    means = nets.groupby(["model", "width"])[["test_error", "test_error_test_selected"]].mean()
    widths = sorted(nets["width"].unique())
    parts = [f"{_name(model)} {_values(means.loc[model, 'test_error'])}" for model in _models(nets)]
    line = (
        f"Test error with hyper-parameters picked on the validation split (mean over seeds) at "
        f"widths {', '.join(str(w) for w in widths)}: {join(parts)}"
    )
    linear = rows[rows["model"] == "linear"]["test_error"]
    line += f"; linear baseline {number(linear.mean())}." if len(linear) else "."
    differ = ~np.isclose(means["test_error"], means["test_error_test_selected"], equal_nan=True)
    if differ.any():
        changed = means[differ]
        listed = ", ".join(
            f"{_name(m)} at {w}: {number(r.test_error_test_selected)}"
            for (m, w), r in changed.iterrows()
        )
        choice = (
            f"Picked on the test set instead (dotted), the error differs at {int(differ.sum())}"
            f" of {len(means)} (model, width) points ({listed})."
        )
    else:
        choice = (
            f"Picked on the test set instead, the hyper-parameters give the same error at all"
            f" {len(means)} (model, width) points, so no dotted line is drawn."
        )
    return [line, choice]


def images_with_authors(tables: Mapping[str, pd.DataFrame], dataset: str) -> list[str]:
    """:func:`images`, then :func:`images_against_authors`."""
    return images(tables, dataset) + images_against_authors(tables, dataset)


def clusters(tables: Mapping[str, pd.DataFrame]) -> list[str]:
    """Per task: each model's test error (mean over seeds) from the smallest to the largest
    label noise, and the largest GaLU - ReLU gap over the noise levels."""
    rows = _rows(tables, "clusters")
    lines = []
    for task, part in rows.groupby("task", sort=False):
        error = part.groupby(["model", "sigma_y"])["test_error"].mean()
        sigmas = sorted(part["sigma_y"].unique())
        parts = _trends(error, _models(part))
        line = (
            f"{task}: test error (mean over seeds) from sigma_y = {sigmas[0]:g} to "
            f"{sigmas[-1]:g}: {join(parts)}"
        )
        if {"galu", "relu"} <= set(part["model"]):
            gap = (error["galu"] - error["relu"]).dropna()
            at = gap.abs().idxmax()
            line += (
                f"; largest gap between GaLU and ReLU {number(abs(gap[at]))} at sigma_y ="
                f" {at:g} ({'GaLU' if gap[at] > 0 else 'ReLU'} higher)"
            )
        lines.append(line + ".")
    return lines


def linear(tables: Mapping[str, pd.DataFrame]) -> list[str]:
    """Each model's test error (mean over seeds) from the smallest to the largest training
    set, which model is lowest at each size, and the mean GaLU - ReLU gap."""
    rows = _rows(tables, "linear")
    if not len(rows):
        return []
    error = rows.groupby(["model", "n_train"])["test_error"].mean()
    sizes = sorted(rows["n_train"].unique())
    parts = _trends(error, _models(rows))
    lines = [
        f"Test error (mean over seeds) from n = {sizes[0]} to {sizes[-1]} training examples: "
        + join(parts)
        + "."
    ]
    best = error.unstack("model").idxmin(axis=1)
    if best.nunique() == 1:
        lines.append(f"Lowest at every training-set size: {_name(best.iloc[0])}.")
    else:
        lines.append(
            "Lowest: " + ", ".join(f"{_name(m)} at n = {n}" for n, m in best.items()) + "."
        )
    if {"galu", "relu"} <= set(rows["model"]):
        gap = (error["galu"] - error["relu"]).dropna()
        lines.append(
            f"GaLU's test error minus ReLU's: {_values(gap)} at n = "
            f"{', '.join(str(n) for n in gap.index)} (mean {number(gap.mean())})."
        )
    return lines


def parity(tables: Mapping[str, pd.DataFrame]) -> list[str]:
    """Each model's test error (mean over seeds) at every parity size, its largest distance
    from chance at the largest size, and the largest training error."""
    rows = _rows(tables, "parity")
    if not len(rows):
        return []
    sizes = sorted(rows["subset_size"].unique())
    test = rows.groupby(["model", "subset_size"])["test_error"].mean()
    models = _models(rows)
    parts = [f"{_name(model)} {_values(test[model])}" for model in models]
    top = [abs(test[(model, sizes[-1])] - 0.5) for model in models if (model, sizes[-1]) in test]
    train = rows.groupby(["model", "subset_size"])["train_error"].mean()
    return [
        f"Test error (mean over seeds) at s = {', '.join(f'{s:g}' for s in sizes)}: "
        + join(parts)
        + f"; at s = {sizes[-1]:g} at most {number(max(top))} from chance (0.5).",
        f"Training error (mean over seeds) at most {number(train.max())}"
        f" (largest at s = {train.idxmax()[1]:g}, {_name(train.idxmax()[0])}).",
    ]


def images_against_authors(tables: Mapping[str, pd.DataFrame], dataset: str) -> list[str]:
    """Per model both trained: the authors' test-selected test error and ours (mean over
    seeds) at the widths both ran, and the GaLU0 - ReLU gap of each."""
    rows = tables[ACCURACY]
    ours = rows[(rows["dataset"] == dataset) & rows["model"].isin(list(SHARED))]
    ours = ours.groupby(["model", "width"])["test_error_test_selected"].mean()
    theirs = authors_test_selected(tables[AUTHORS_IMAGES], dataset)
    theirs = theirs.set_index(["model", "width"])["test_error"]
    common = ours.index.intersection(theirs.index)
    if not len(common):
        return []
    widths = sorted({w for _, w in common})
    parts = []
    for model, name in SHARED.items():
        at = [(model, w) for w in widths if (model, w) in common]
        if at:
            pairs = ", ".join(f"{number(theirs[i])} / {number(ours[i])}" for i in at)
            parts.append(f"{name} {pairs}")
    gaps = {}
    for who, values in (("theirs", theirs), ("ours", ours)):
        gap = [values[("galu0", w)] - values[("relu", w)] for w in widths
               if ("galu0", w) in values.index and ("relu", w) in values.index]  # fmt: skip
        if gap:
            gaps[who] = number(sum(gap) / len(gap))
    lines = [
        f"Test error with hyper-parameters picked on the test set, the authors' published"
        f" value / ours, at widths {', '.join(str(w) for w in widths)}: {join(parts)}."
    ]
    if len(gaps) == 2:
        lines.append(
            f"GaLU0's test error minus ReLU's, mean over these widths: theirs {gaps['theirs']},"
            f" ours {gaps['ours']}."
        )
    return lines


# figure -> (the CSVs it is drawn from, the function that describes them)
SENTENCES: dict[str, tuple[tuple[str, ...], Describe]] = {
    **{
        f"figures/generalization/{dataset}.png": (
            (ACCURACY, AUTHORS_IMAGES),
            partial(images_with_authors, dataset=dataset),
        )
        for dataset in ("mnist", "fashion_mnist")
    },
    "figures/generalization/clusters.png": ((ACCURACY,), clusters),
    "figures/generalization/linear.png": ((ACCURACY,), linear),
    "figures/generalization/parity.png": ((ACCURACY,), parity),
}
