"""The generalization stage's declaration (Fiat, Malach & Shalev-Shwartz, arXiv 1906.05032,
sec. 5): one figure per dataset of the configuration, each reading that dataset's table
(read by the workflow through :mod:`galu.workflow.stages`)."""

from __future__ import annotations

from galu.declarations import Config, Figure, Job, Stage, Table, runtime_settings
from galu.generalization import checks
from galu.generalization.accuracy import IMAGE_DATASETS
from galu.generalization.costs import COSTS
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


def jobs(config: Config) -> list[Job]:
    """One training job per dataset of ``generalization.datasets``, and the accuracy table."""
    found = []
    for name in config["generalization"]["datasets"]:
        if name in IMAGE_DATASETS:
            rule, wildcards = "generalization_images", {"gen_image": name}
        else:
            rule, wildcards = "generalization_synthetic", {"gen_task": name}
        found.append(Job("generalization", rule, f"generalization/{name}", wildcards))
    found.append(Job("generalization", "generalization_accuracy", "generalization/accuracy"))
    return found


# The settings whose runtime_min sets a job's runtime: the images section, or the task's.
runtime_min = runtime_settings(
    {
        "generalization_images": lambda config, job: config["generalization"]["images"],
        "generalization_synthetic": lambda config, job: config["generalization"][
            job.wildcards["gen_task"]
        ],
    }
)


def image_datasets(config: Config) -> list[str]:
    """The real datasets it reads: its image datasets (the synthetic tasks are drawn)."""
    return [d for d in config["generalization"]["datasets"] if d in IMAGE_DATASETS]


STAGE = Stage(
    name="generalization",
    paper="galu",
    category="GaLU generalization",
    order=2,
    figures=figures,
    jobs=jobs,
    runtime_min=runtime_min,
    costs=COSTS,
    checks=checks.problems,
    datasets=image_datasets,
)
