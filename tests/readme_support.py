"""A README and its verdict pages holding every generated section's markers
(galu.workflow.pages.readme_pages), and a quick run's claims table, for the tests of ``galu
readme``."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from galu.workflow.pages.publication_readme import PAPER_MARKERS
from galu.workflow.pages.readme_pages import (
    PAPER_PAGE,
    PAPER_SUMMARY_MARKERS,
    QUICK_PAGE,
    QUICK_SUMMARY_MARKERS,
)
from galu.workflow.pages.readme_sections import QUICK_MARKERS, Markers


def between(markers: Markers, text: str = "") -> str:
    return f"{markers[0]}\n{text}{markers[1]}\n"


def write_readme(root: Path, quick: str = "", paper: str = "") -> dict[str, str]:
    """README.md (its two blocks empty) and the two pages under ``root``, the quick page's
    section holding ``quick``, the paper page's ``paper``; returns file -> text."""
    files = {
        "README.md": f"# T\n{between(QUICK_SUMMARY_MARKERS)}{between(PAPER_SUMMARY_MARKERS)}end\n",
        QUICK_PAGE: f"# Q\n{between(QUICK_MARKERS, quick)}end\n",
        PAPER_PAGE: f"# P\n{between(PAPER_MARKERS, paper)}end\n",
    }
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    return files


def write_claims(path: Path, verdicts: dict[str, str], scale: str = "quick") -> None:
    """A claims table at ``path``: claim id -> verdict, each of paper ``galu``."""
    rows = [
        {"claim_id": c, "paper": "galu", "statement": "s", "verdict": v, "measured": 0.05,
         "precision": 0.01, "figure": "f.png", "scale": scale}
        for c, v in verdicts.items()
    ]  # fmt: skip
    path.parent.mkdir(parents=True, exist_ok=True)
    pd.DataFrame(rows).to_csv(path, index=False)
