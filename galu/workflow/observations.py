"""What each figure's data show, in the report caption: the sentences of its paper's
``sentences.py``, computed from the CSVs the figure is drawn from.

A report caption states a number or a direction (falls, grows, reaches) only through these
sentences: the caption templates under ``workflow/report/`` describe the set-up and what the
papers report, and the ``claims`` rule appends :func:`observations_rst` of the figure, so a
caption cannot say "grows" where the data fall. Each entry of :data:`OBSERVATIONS` names the
CSVs it reads (the claims rule declares them as inputs) and a pure function from those
tables to sentences: the ``SENTENCES`` of every stage that has a ``galu/<paper>/sentences.py``
(:func:`galu.workflow.stages.sentence_modules`, imported by name; the claims rule names the
same modules in its ``modules`` param, so that its code closure holds them). This module reads
the tables and writes the paragraph.
"""

from __future__ import annotations

import importlib
from collections.abc import Sequence
from pathlib import Path

import pandas as pd

from galu.workflow.rst import jinja_raw, rst_escape
from galu.workflow.scales import OutputRoot, output_root
from galu.workflow.stages import sentence_modules

# In the closure of the jobs that import it (galu.workflow.closure): it writes their bytes.
RESULT_CODE = "the captions' paragraphs on what the data show"

# figure -> (the CSVs it is drawn from, the function that describes them), every stage's.
OBSERVATIONS = {
    figure: entry
    for module in sentence_modules()
    for figure, entry in importlib.import_module(module).SENTENCES.items()
}


def observation_sources(figures: Sequence[str]) -> list[str]:
    """The CSVs the observations of ``figures`` read (inputs of the claims rule)."""
    return sorted({s for f in figures if f in OBSERVATIONS for s in OBSERVATIONS[f][0]})


def observations(figure: str, root: str | Path | OutputRoot = ".") -> list[str]:
    """The sentences describing ``figure``'s data (contract paths; ``root``: the run's
    outputs, see galu.workflow.scales); none for a figure without an entry."""
    if figure not in OBSERVATIONS:
        return []
    sources, describe = OBSERVATIONS[figure]
    tables = {s: pd.read_csv(source_path(s, root)) for s in sources}
    return describe(tables)


# Committed tables a caption may compare with (the papers' authors' numbers): read from the
# checkout, whatever run's outputs ``root`` names.
REFERENCE_DIR = "workflow/reference/"
CHECKOUT = Path(__file__).resolve().parents[2]


def source_path(source: str, root: str | Path | OutputRoot = ".") -> Path:
    """Where a caption's CSV is: a run's table under ``root``, or a committed reference
    table (``workflow/reference/...``) in the checkout."""
    if source.startswith(REFERENCE_DIR):
        return CHECKOUT / source
    return output_root(root) / source


def observations_rst(figure: str, root: str | Path | OutputRoot = ".") -> str:
    """The caption paragraph "What the data show" (literal text inside Jinja ``raw`` tags,
    like the verdicts), or an empty string."""
    lines = observations(figure, root)
    if not lines:
        return ""
    sources = ", ".join(f"``{s}``" for s in OBSERVATIONS[figure][0])
    module = OBSERVATIONS[figure][1].__module__.replace(".", "/") + ".py"
    body = "\n".join(f"- {rst_escape(line)}" for line in lines)
    heading = f"**What the data show** (computed from {sources} by ``{module}``):"
    return "\n" + jinja_raw(f"\n\n{heading}\n\n{body}\n\n") + "\n"
