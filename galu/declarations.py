"""The types a stage declares itself with: :class:`Stage`, its :class:`Figure` s and the
:class:`Table` s they read. Each paper package's ``stage.py`` holds one ``STAGE``;
:mod:`galu.workflow.stages` lists them. Plain data: this module imports no workflow machinery.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

Config = Mapping[str, Any]


@dataclass(frozen=True)
class Table:
    """A table a figure reads: its contract path (``results/...``, unscaled) and the
    functions that computed it (``module.function``, recorded in the figure's sidecar)."""

    path: str
    computed_by: tuple[str, ...]


@dataclass(frozen=True)
class Figure:
    """One figure: drawn by ``DRAW[name]`` of its stage's ``figures`` module from ``tables``
    (name -> :class:`Table`; the drawing function gets them under these names) with the
    parameters ``draw``. Saved as ``figures/<stage>/<file>.png`` and ``.pdf``, captioned in
    the report by ``workflow/report/<caption>`` under ``subcategory``. ``seeds``: the seeds it
    shows where its tables hold seed means only (else the tables' own seeds)."""

    name: str
    file: str
    caption: str
    subcategory: str
    tables: Mapping[str, Table]
    draw: Mapping[str, Any] = field(default_factory=dict)
    seeds: Sequence[int] | None = None


@dataclass(frozen=True)
class Stage:
    """One stage of the workflow: the experiments of one paper (or of one part of it).

    ``paper``: the claims' paper id (``workflow/claims.yaml``); ``category``: the report's
    section for its figures; ``figures(config)``: its figures at a configuration, in order.
    The drawing functions live in ``galu.<name>.figures`` (:attr:`figures_module`)."""

    name: str
    paper: str
    category: str
    figures: Callable[[Config], Sequence[Figure]]

    @property
    def figures_module(self) -> str:
        return f"galu.{self.name}.figures"

    def figure_path(self, figure: Figure, ext: str) -> str:
        """The figure's contract path (unscaled), ``figures/<stage>/<file>.<ext>``."""
        return f"figures/{self.name}/{figure.file}.{ext}"
