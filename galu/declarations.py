"""The types a stage declares itself with: :class:`Stage`, its :class:`Figure` s and the
:class:`Table` s they read; and what a cost formula gives (:class:`Sizes`) for a
:class:`Job` (its compute jobs are declared by their rules, ``workflow/rules/<stage>*.smk``).
Each paper package's ``stage.py`` holds one ``STAGE``; :mod:`galu.workflow.stages` lists
them. Plain data: this module imports no workflow machinery.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

Config = Mapping[str, Any]
Wildcards = Mapping[str, str]


@dataclass(frozen=True)
class Sizes:
    """What a job's cost formula needs: ``work`` (flops), ``steps`` (Python-level
    iterations), ``bytes`` held at once, and whether it asks for a GPU."""

    work: float = 0.0
    steps: float = 0.0
    bytes: float = 0.0
    gpu: bool = False

    def __add__(self, other: Sizes) -> Sizes:
        return Sizes(
            self.work + other.work,
            self.steps + other.steps,
            max(self.bytes, other.bytes),
            self.gpu or other.gpu,
        )


def train_sizes(steps: int, batch: int, macs: float) -> Sizes:
    """One ensemble trained for ``steps`` steps on ``batch`` samples, ``macs`` being the
    multiply-adds of all its members for one sample (forward + backward: 6 flops each)."""
    return Sizes(work=6.0 * steps * batch * macs, steps=steps)


# A rule's cost formula: the sizes of one of its jobs (galu/workflow/planning/costs.py fits the
# constants that turn them into seconds and megabytes).
Formula = Callable[[Config, Wildcards], Sizes]


@dataclass(frozen=True)
class Job:
    """One job of the workflow: its stage, rule, wildcards and benchmark file
    (``logs/benchmarks/<benchmark>.tsv``), as the rule files expand it."""

    stage: str
    rule: str
    benchmark: str
    wildcards: Mapping[str, str] = field(default_factory=dict)

    @property
    def label(self) -> str:
        """``rule`` or ``rule[key=value,...]``, as the plan prints it."""
        if not self.wildcards:
            return self.rule
        inner = ",".join(f"{k}={v}" for k, v in self.wildcards.items())
        return f"{self.rule}[{inner}]"


def _nothing(config: Config) -> Iterable[str]:
    return ()


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
    shows where its tables hold seed means only (else the tables' own seeds).
    ``references``: name -> a committed table of numbers published elsewhere (the paper's
    authors', ``workflow/reference/``, provenance beside it), read like ``tables`` and drawn
    beside ours; an input of the plot rule, so its sidecars record the file's sha256."""

    name: str
    file: str
    caption: str
    subcategory: str
    tables: Mapping[str, Table]
    draw: Mapping[str, Any] = field(default_factory=dict)
    seeds: Sequence[int] | None = None
    references: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Stage:
    """One stage of the workflow: the experiments of one paper (or of one part of it).

    ``paper``: the claims' paper id (``workflow/claims.yaml``); ``category``: the report's
    section for its figures; ``figures(config)``: its figures at a configuration, in order
    (the drawing functions live in ``galu.<name>.figures``, :attr:`figures_module`);
    ``order``: its place among the stages (the configuration's default ``stages`` list them
    in this order); ``checks(config)``: one line per contradiction among its settings that
    the schema cannot see key by key (``galu/<paper>/checks.py``), naming the keys and the
    fix. A stage whose figures' captions state what the data show has
    ``galu/<paper>/sentences.py`` (:attr:`sentences_module`; found by name, no declaration
    needed)."""

    name: str
    paper: str
    category: str
    order: int
    figures: Callable[[Config], Sequence[Figure]]
    checks: Callable[[Config], Iterable[str]] = _nothing

    @property
    def figures_module(self) -> str:
        return f"galu.{self.name}.figures"

    @property
    def sentences_module(self) -> str:
        """Where its caption sentences live, if it has any (``SENTENCES``: figure -> the
        tables read and the function describing them; :mod:`galu.workflow.observations`)."""
        return f"galu.{self.name}.sentences"

    def figure_path(self, figure: Figure, ext: str) -> str:
        """The figure's contract path (unscaled), ``figures/<stage>/<file>.<ext>``."""
        return f"figures/{self.name}/{figure.file}.{ext}"

    def plot_job(self, figure: Figure) -> Job:
        """The figure's plot job: rule ``<stage>_plot_<figure>``, benchmark and log
        ``<stage>/plot_<figure>`` (``workflow/rules/figures.smk`` names its rule so)."""
        return Job(self.name, f"{self.name}_plot_{figure.name}", f"{self.name}/plot_{figure.name}")
