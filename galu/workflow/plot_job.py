"""The body of the plot script: one figure from its tables (never trains).

A plot rule (``workflow/rules/figures.smk``, one per figure a stage declares in
``galu/<paper>/stage.py``) names the figure (``params.figure``), the module that draws it
(``params.module``: ``galu.<stage>.figures``), its tables (the inputs, by name), the drawing
parameters (``params.draw``) and, in ``params.computed_by``, the functions that computed each
table. The module's ``DRAW[figure]`` draws it; the sidecars record that function as
``drawn_by``. The rule's code closure holds the module (``galu.workflow.closure``: the
``imports`` a rule names), so editing it redraws that stage's figures.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Any

import pandas as pd

from galu.plotting import use_style
from galu.seeding import seeds_in
from galu.workflow.output import Run

# In the closure of the jobs that import it (galu.workflow.closure): it writes their bytes.
RESULT_CODE = (
    "how a figure is drawn from its tables (the drawing function, the seeds shown, the style)"
)

Tables = Mapping[str, pd.DataFrame]


def shown_seeds(module: Any, figure: str, tables: Tables, declared: list[int] | None) -> list[int]:
    """The seeds a figure shows: its module's ``SHOWN_SEEDS[figure](tables)`` where the
    module has one, else the seeds the stage declares (tables of seed means), else every
    seed of the tables."""
    chooser: Mapping[str, Callable[[Tables], list[int]]] = getattr(module, "SHOWN_SEEDS", {})
    if figure in chooser:
        return chooser[figure](tables)
    return declared or seeds_in(pd.concat(tables.values()))


def draw_figure(smk: Any) -> None:
    """Draw ``smk.params.figure`` with ``DRAW[figure]`` of ``smk.params.module`` and save it
    (PNG, PDF, sidecars)."""
    params = smk.params
    module = importlib.import_module(params.module)
    function = module.DRAW[params.figure]
    drawn_by = f"{function.__module__}.{function.__name__}"
    run = Run.from_snakemake(smk, extra={"drawn_by": drawn_by})
    tables = {name: pd.read_csv(path) for name, path in smk.input.items()}
    use_style()
    fig = function(tables, scale=params.scale, **params.draw)
    seeds = shown_seeds(module, params.figure, tables, params.seeds)
    run.save_figure(fig, smk.output.png, seeds=seeds)
