"""Every stage of the workflow, as its paper package declares it (``galu/<paper>/stage.py``).

Each declaration (a :class:`~galu.declarations.Stage`) says once what the workflow needs to
know of a stage: its paper, its figures, the tables each reads and the functions that computed
them. The workflow reads the declarations instead of keeping copies: ``workflow/rules/
figures.smk`` makes one plot rule per figure (all run :data:`PLOT_SCRIPT`),
:mod:`galu.workflow.jobs` lists the stages and their plot jobs, the configuration schema's
``stages`` enum (:func:`galu.workflow.config.load_schema`) and the claims' paper ids
(:data:`galu.workflow.claims.PAPERS`) come from here, and :mod:`galu.workflow.dvcstages` the
figures' code deps. A stage's compute rules stay in ``workflow/rules/<stage>*.smk``; a figure names
the tables they write by their contract paths (docs/design.md, Contracts), so a path no rule makes
fails the dry run.
"""

from __future__ import annotations

from galu.declarations import Stage
from galu.generalization.stage import STAGE as GENERALIZATION
from galu.memorization.stage import STAGE as MEMORIZATION
from galu.normalization.stage import STAGE as NORMALIZATION
from galu.scm.stage import STAGE as SCM

# The workflow's stages in order (the order the configuration's default lists them).
STAGES = (MEMORIZATION, GENERALIZATION, SCM, NORMALIZATION)
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


def papers() -> tuple[str, ...]:
    """The paper ids the stages name, each once, in order."""
    return tuple(dict.fromkeys(each.paper for each in STAGES))
