"""Every stage of the workflow, as its paper package declares it (``galu/<paper>/stage.py``).

Each declaration (a :class:`~galu.declarations.Stage`) says once what the workflow needs to
know of a stage: its paper, its figures, the tables each reads and the functions that computed
them. The workflow reads the declarations instead of keeping copies: ``workflow/rules/
figures.smk`` makes one plot rule per figure (all run :data:`PLOT_SCRIPT`),
:mod:`galu.workflow.planning.jobs` lists the stages and their plot jobs, the configuration schema's
``stages`` enum (:func:`galu.workflow.settings.config.load_schema`) and the claims' paper ids
(:data:`galu.workflow.claim_spec.PAPERS`) come from here, :mod:`galu.workflow.pages.dvcstages` the
figures' code deps, :mod:`galu.workflow.settings.consistency` each stage's cross-key checks and
:mod:`galu.workflow.observations` the caption sentences (:func:`sentence_modules`). A
stage's compute rules stay in ``workflow/rules/<stage>*.smk``; a figure names the tables they
write by their contract paths (docs/design.md, Contracts), so a path no rule makes fails the
dry run.
"""

from __future__ import annotations

import importlib
from pathlib import Path

import galu
from galu.declarations import Stage

# In the closure of the jobs that import it (galu.workflow.closure): it writes their bytes.
RESULT_CODE = "which papers and caption-sentence modules a run has"


def _discover() -> tuple[Stage, ...]:
    """The ``STAGE`` of every ``galu/<package>/stage.py``, by their ``order``: a new paper
    package with a ``stage.py`` is a stage, no machinery module lists it. (Imported by
    name: the code closure of a job that reads the declarations does not hold them, so
    editing one stage's declaration reruns no other stage's jobs.)"""
    root = Path(galu.__file__).parent
    found = [
        importlib.import_module(f"galu.{path.parent.name}.stage").STAGE
        for path in sorted(root.glob("*/stage.py"))
    ]
    orders = [each.order for each in found]
    if len(set(orders)) != len(orders):
        raise ValueError(f"two stages declare the same order: {sorted(orders)}")
    return tuple(sorted(found, key=lambda each: each.order))


# The workflow's stages in order (the order the configuration's default lists them).
STAGES = _discover()
STAGE_NAMES = tuple(each.name for each in STAGES)
# Every stage's plot rules: one rule file, one script (its rule names the figures module).
FIGURE_RULES = "workflow/rules/figures.smk"
PLOT_SCRIPT = "scripts/plot.py"


def stages() -> tuple[Stage, ...]:
    """Every stage's declaration, in the workflow's order."""
    return STAGES


def stage(name: str) -> Stage:
    """The declaration of the stage ``name``."""
    for each in STAGES:
        if each.name == name:
            return each
    raise KeyError(f"no stage {name!r}; the stages are {', '.join(s.name for s in STAGES)}")


def sentence_modules() -> tuple[str, ...]:
    """The caption-sentence modules of the stages that have one (``galu/<paper>/sentences.py``),
    in stage order. :mod:`galu.workflow.observations` imports them by these names; the claims
    rule names them in its ``modules`` param, so that they are part of its code closure."""
    root = Path(galu.__file__).parent
    return tuple(
        each.sentences_module for each in STAGES if (root / each.name / "sentences.py").is_file()
    )


def papers() -> tuple[str, ...]:
    """The paper ids the stages name, each once, in order."""
    return tuple(dict.fromkeys(each.paper for each in STAGES))
