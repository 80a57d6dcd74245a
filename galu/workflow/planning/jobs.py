"""The workflow's stages in run order, and the stage a rule belongs to.

The jobs themselves are read back from Snakemake's DAG (:mod:`galu.workflow.planning.dag`); what is
left here is how the plan, the publication and the equivalence check group them.
"""

from __future__ import annotations

from galu.workflow.stages import STAGE_NAMES

# The stages a config's `stages` may name (each is one paper's experiments), as declared.
EXPERIMENT_STAGES = STAGE_NAMES
STAGE_ORDER = ("data", *EXPERIMENT_STAGES, "report")


def stage_of(rule: str) -> str:
    """The stage a rule belongs to: its name's first word for the experiment stages
    (``<stage>_...``), ``report`` for the claims and report rules, else ``data``."""
    head = rule.split("_")[0]
    if head in EXPERIMENT_STAGES:
        return head
    return "data" if rule in ("download", "prepare") else "report"
