"""The body of every stage's plot script: one figure from its tables (never trains).

A plot rule (generated from its stage's figure table: ``NORM_FIGURES``, ``MEM_FIGURES``,
``SCM_FIGURES``, ``GEN_FIGURES``) names the figure (``params.figure``), its tables (the
inputs, by name), the drawing parameters (``params.draw``) and, in ``params.computed_by``,
the functions that computed each table. The stage's ``galu.<paper>.figures.DRAW`` gives the
drawing function, which the sidecars record as ``drawn_by``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import pandas as pd

from galu.plotting import use_style
from galu.provenance import Run

Tables = Mapping[str, pd.DataFrame]


def draw_figure(
    smk: Any,
    draw: Mapping[str, Callable[..., Any]],
    shown_seeds: Mapping[str, Callable[[Tables], list[int]]] | None = None,
) -> None:
    """Draw ``smk.params.figure`` with ``draw[figure]`` and save it (PNG, PDF, sidecars).

    The seeds the figure shows: ``shown_seeds[figure](tables)`` where given, else the rule's
    ``seeds`` param where it has one (tables of seed means), else every seed of the tables.
    """
    params = smk.params
    function = draw[params.figure]
    drawn_by = f"{function.__module__}.{function.__name__}"
    run = Run.from_snakemake(smk, extra={"drawn_by": drawn_by})
    tables = {name: pd.read_csv(path) for name, path in smk.input.items()}
    use_style()
    fig = function(tables, scale=params.scale, **getattr(params, "draw", {}))
    if shown_seeds and params.figure in shown_seeds:
        seeds = shown_seeds[params.figure](tables)
    else:
        seeds = getattr(params, "seeds", None) or Run.seeds_in(pd.concat(tables.values()))
    run.save_figure(fig, smk.output.png, seeds=seeds)
