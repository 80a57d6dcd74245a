"""What the generalization stage's image figures show beside the authors' published numbers
(Fiat, Malach & Shalev-Shwartz, arXiv 1906.05032, sec. 5), in words computed from the CSVs.

One function per figure, tables in (contract path -> frame), sentences out; :data:`SENTENCES`
names each figure's CSVs and its function (the report captions append them,
:mod:`galu.workflow.observations`).
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import partial

import pandas as pd

from galu.reference import AUTHORS_IMAGES, authors_test_selected
from galu.sentences import Describe, join, number

ACCURACY = "results/generalization/accuracy.csv"
# The models both we and the authors trained on the images, in their names.
SHARED = {"relu": "ReLU", "galu0": "GaLU0"}


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
    f"figures/generalization/{dataset}.png": (
        (ACCURACY, AUTHORS_IMAGES),
        partial(images_against_authors, dataset=dataset),
    )
    for dataset in ("mnist", "fashion_mnist")
}
