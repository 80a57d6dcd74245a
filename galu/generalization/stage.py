"""The generalization stage's declaration (Fiat, Malach & Shalev-Shwartz, arXiv 1906.05032,
sec. 5): one figure per dataset of the configuration, each reading that dataset's table
(read by the workflow through :mod:`galu.workflow.stages`)."""

from __future__ import annotations

from galu.declarations import Config, Figure, Stage, Table
from galu.generalization import checks
from galu.generalization.accuracy import IMAGE_DATASETS
from galu.reference import AUTHORS_IMAGES

RUN_TABLE = "results/generalization/runs/{name}.csv"
IMAGE_COMPUTED_BY = (
    "galu.generalization.experiments.image_experiment",
    "galu.generalization.experiments.image_accuracy",
)
SYNTHETIC_COMPUTED_BY = ("galu.generalization.experiments.synthetic_experiment",)
# dataset -> (caption template, subcategory in the report); the image datasets share one.
FIGURES = {
    "mnist": ("generalization_images.rst", "MNIST and Fashion-MNIST"),
    "fashion_mnist": ("generalization_images.rst", "MNIST and Fashion-MNIST"),
    "clusters": ("generalization_clusters.rst", "Gaussian clusters"),
    "linear": ("generalization_linear.rst", "Linearly separable data"),
    "parity": ("generalization_parity.rst", "Parity"),
}


def figures(config: Config) -> list[Figure]:
    """A figure for each dataset of ``generalization.datasets``. Only the image figures
    take the networks' depth, so the others do not redraw when it changes."""
    gen = config["generalization"]
    found = []
    for name, (caption, subcategory) in FIGURES.items():
        if name not in gen["datasets"]:
            continue
        image = name in IMAGE_DATASETS
        made_by = IMAGE_COMPUTED_BY if image else SYNTHETIC_COMPUTED_BY
        draw = {"dataset": name, "depth": gen["images"]["depth"]} if image else {}
        table = Table(RUN_TABLE.format(name=name), made_by)
        # the authors' published test errors, drawn beside ours
        references = {"authors": AUTHORS_IMAGES} if image else {}
        found.append(
            Figure(
                name, name, caption, subcategory, {name: table}, draw=draw, references=references
            )
        )
    return found


STAGE = Stage(
    name="generalization",
    paper="galu",
    category="GaLU generalization",
    order=2,
    figures=figures,
    checks=checks.problems,
)
