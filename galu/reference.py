"""The GaLU paper's authors' published numbers as our quantities (Fiat, Malach &
Shalev-Shwartz, arXiv 1906.05032; their raw result files, recorded as committed tables under
``workflow/reference/`` with their provenance in ``workflow/reference/galu_authors.yaml``).

Their files list every probe of a run, not the plotted points; these pure functions reduce
them the way the paper's figures state (a smallest width below an MSE threshold, the best
test error over the hyper-parameters tried), so a figure can draw them beside ours and a
caption can compare the two. Nothing here reads files.
"""

from __future__ import annotations

import pandas as pd

# The committed tables (provenance: workflow/reference/galu_authors.yaml): the authors'
# minimal-width searches (m = 1024, d = 32), drawn in the memorization stage's min_width figure,
# and their MNIST / Fashion-MNIST test errors (every width, gate scale and learning rate),
# drawn in the generalization stage's image figures.
AUTHORS_MIN_WIDTH = "workflow/reference/galu_authors_minimal_k.csv"
AUTHORS_IMAGES = "workflow/reference/galu_authors_images.csv"
# The label that marks the authors' points in every figure's legend.
AUTHORS_LABEL = "Fiat et al. (authors' results)"
# The settings of the authors' runs that a figure must share to draw them on its own axes.
AUTHORS_IMAGE_DEPTH = 2  # hidden layers of their MNIST / Fashion-MNIST networks (T = 2)
AUTHORS_IMAGE_COMPONENTS = 64  # their inputs: the first 64 principal components, standardized


def authors_min_width(probes: pd.DataFrame, threshold: float) -> pd.DataFrame:
    """The authors' minimal width per (model, m, d, out_dim): the smallest width their
    search probed whose mean training MSE (over their networks) is below ``threshold``, as
    the paper's figure "minimal number of neurons to achieve MSE < 0.3" takes it (MSE as
    printed in their file, to three digits, so 3.00e-01 is not below 0.3). One row per point
    with ``min_width`` and ``kd_over_m`` (= min_width * d / m); a point without a successful
    probe is left out."""
    below = probes[probes["train_mse"] < threshold]
    keys = ["model", "m", "d", "out_dim"]
    found = below.groupby(keys, as_index=False, sort=True)["width"].min()
    found = found.rename(columns={"width": "min_width"})
    found["kd_over_m"] = found["min_width"] * found["d"] / found["m"]
    return found


def authors_test_selected(rows: pd.DataFrame, dataset: str) -> pd.DataFrame:
    """The authors' test error per (model, width) on ``dataset``: the smallest over the gate
    scales and learning rates they tried (their figure's protocol, hyper-parameters picked on
    the test set; each value a mean over their networks). Columns ``model``, ``width``,
    ``test_error``."""
    part = rows[rows["dataset"] == dataset]
    best = part.groupby(["model", "width"], as_index=False, sort=True)["test_error"].min()
    return best
