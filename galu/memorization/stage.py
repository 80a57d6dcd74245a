"""The memorization stage's declaration (Fiat, Malach & Shalev-Shwartz, arXiv 1906.05032,
sec. 3): its figures, like the paper's Figs. 1-3, and the tables they read (read by the
workflow through :mod:`galu.workflow.stages`)."""

from __future__ import annotations

from galu.declarations import Config, Figure, Stage, Table
from galu.memorization import checks
from galu.memorization.band import claim_band
from galu.reference import AUTHORS_MIN_WIDTH

# A criterion's stacked search table (workflow/rules/memorization.smk), and what computed it.
SEARCH_TABLE = "results/memorization/runs/min_width_{criterion}.csv"
SEARCH_COMPUTED_BY = (
    "galu.memorization.experiments.min_width_table",
    "galu.memorization.search_parts.stack_parts",
)


# The authors' published minimal-width searches, drawn beside ours in the min_width figure.
REFERENCES = {"min_width": {"authors": AUTHORS_MIN_WIDTH}}


def _search(criterion: str) -> dict[str, Table]:
    return {
        f"min_width_{criterion}": Table(
            SEARCH_TABLE.format(criterion=criterion), SEARCH_COMPUTED_BY
        )
    }


def figures(config: Config) -> list[Figure]:
    """Fig. 1 (the under-parameterized loss), Fig. 2 (minimal width, mse; with the authors'
    published searches) and Fig. 3 (minimal width, zero training error)."""
    tables = {
        "underparam": {
            "underparam": Table(
                "results/memorization/underparam.csv",
                ("galu.memorization.experiments.underparam_table",),
            )
        },
        "min_width": _search("mse"),
        "zero_error": _search("zero_error"),
    }
    # the zero-error figure shades the band its claim judges the searches by
    draw = {"zero_error": {"band": claim_band()}}
    return [
        Figure(
            name=name,
            file=name,
            caption=f"memorization_{name}.rst",
            subcategory=name.replace("_", " "),
            tables=read,
            draw=draw.get(name, {}),
            references=REFERENCES.get(name, {}),
        )
        for name, read in tables.items()
    ]


CRITERIA = ("mse", "zero_error")


STAGE = Stage(
    name="memorization",
    paper="galu",
    category="GaLU memorization",
    order=1,
    figures=figures,
    checks=checks.problems,
)
