"""The memorization stage's declaration (Fiat, Malach & Shalev-Shwartz, arXiv 1906.05032,
sec. 3): its figures, like the paper's Figs. 1-3, and the tables they read (read by the
workflow through :mod:`galu.workflow.stages`)."""

from __future__ import annotations

from galu.declarations import Config, Figure, Stage, Table

# A criterion's stacked search table (workflow/rules/memorization.smk), and what computed it.
SEARCH_TABLE = "results/memorization/runs/min_width_{criterion}.csv"
SEARCH_COMPUTED_BY = (
    "galu.memorization.experiments.min_width_table",
    "galu.memorization.search_parts.stack_parts",
)


def _search(criterion: str) -> dict[str, Table]:
    return {
        f"min_width_{criterion}": Table(
            SEARCH_TABLE.format(criterion=criterion), SEARCH_COMPUTED_BY
        )
    }


def figures(config: Config) -> list[Figure]:
    """Fig. 1 (the under-parameterized loss), Fig. 2 (minimal width, mse) and Fig. 3
    (minimal width, zero training error)."""
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
    return [
        Figure(
            name=name,
            file=name,
            caption=f"memorization_{name}.rst",
            subcategory=name.replace("_", " "),
            tables=read,
        )
        for name, read in tables.items()
    ]


STAGE = Stage(name="memorization", paper="galu", category="GaLU memorization", figures=figures)
