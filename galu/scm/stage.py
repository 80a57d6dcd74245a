"""The SCM stage's declaration (Straat & Biehl, arXiv 1903.07378): its figures, like the
paper's Figs. 1-4 and our learning-rate schedules, and the tables they read (read by the
workflow through :mod:`galu.workflow.stages`)."""

from __future__ import annotations

from galu.declarations import Config, Figure, Stage, Table
from galu.scm import checks
from galu.seeding import run_seeds

# The settings of workflow/rules/scm.smk: ODE and simulation tables per setting.
SETTINGS = ("perceptron", "relu_k2m2", "relu_k3m2", "erf_k3m2", "relu_k2m3")
RUN_TABLE = "results/scm/runs/{setting}_{source}.csv"
RUN_COMPUTED_BY = {
    "ode": ("galu.scm.experiments.ode_table",),
    "sim": ("galu.scm.experiments.simulation_table",),
}
STABILITY = {
    "stability": Table("results/scm/stability.csv", ("galu.scm.experiments.stability_table",))
}
SCHEDULES_COMPUTED_BY = ("galu.scm.schedules.schedule_experiment",)
# The committee figures (galu.scm.figures.draw_committee): subcategory, and the settings
# drawn, one row each, with the plateau from stability.csv.
COMMITTEES = {
    "relu_k2m2": ("K = M = 2 (Fig. 2)", ("relu_k2m2",)),
    "k3m2": ("K = 3, M = 2 (Fig. 3)", ("relu_k3m2", "erf_k3m2")),
    "relu_k2m3": ("K = 2, M = 3 (Fig. 4)", ("relu_k2m3",)),
}


def _runs(settings: tuple[str, ...]) -> dict[str, Table]:
    """The ODE and simulation tables of ``settings``, and stability.csv."""
    runs = {
        f"{name}_{source}": Table(RUN_TABLE.format(setting=name, source=source), made_by)
        for name in settings
        for source, made_by in RUN_COMPUTED_BY.items()
    }
    return {**runs, **STABILITY}


def figures(config: Config) -> list[Figure]:
    """Fig. 1 (the perceptron), Figs. 2-4 (the committees), and the schedules (ours)."""
    perceptron = Figure(
        "perceptron",
        "perceptron",
        "scm_perceptron.rst",
        "K = M = 1 (Fig. 1)",
        _runs(("perceptron",)),
    )
    committees = [
        Figure(
            name,
            name,
            f"scm_{name}.rst",
            subcategory,
            _runs(settings),
            draw={"settings": list(settings)},
        )
        for name, (subcategory, settings) in COMMITTEES.items()
    ]
    schedules = Figure(
        "schedules",
        "schedules",
        "scm_schedules.rst",
        "Learning-rate schedules (ours)",
        {
            "schedules": Table("results/scm/schedules.csv", SCHEDULES_COMPUTED_BY),
            "schedule_runs": Table("results/scm/schedule_runs.csv", SCHEDULES_COMPUTED_BY),
        },
        # schedules.csv holds seed means: the seeds its simulations ran
        seeds=run_seeds(config["seed"], config["scm"]["simulation"]["seeds"]),
    )
    return [perceptron, *committees, schedules]


STAGE = Stage(
    name="scm",
    paper="scm",
    category="ReLU SCM dynamics",
    order=3,
    figures=figures,
    checks=checks.problems,
)
