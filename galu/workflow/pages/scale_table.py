"""A paper-level publication's claims beside the quick scale's, for README's "What reproduces
at the paper level": per claim, each scale's measured value and verdict in adjacent columns
(:mod:`galu.workflow.pages.compare`), and where one scale passes a claim the other fails, which to
believe and why (one sentence per claim, written by hand in :data:`SCALE_NOTES`).

The quick side is the local quick run whose verdicts fill README's first section
(``results/claims.csv``), so ``galu readme --update`` and the quick run's ``readme_check``
judge both sections against one run.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from galu.workflow.pages.compare import Row, Run, compare
from galu.yaml_files import load_yaml

SCALE_NOTES = "workflow/scale-notes.yaml"
NO_NOTE = f"no sentence yet on which scale to believe (add one to `{SCALE_NOTES}`)"


def scale_notes(root: str | Path, scale: str) -> dict[str, str]:
    """The notes of ``scale`` in :data:`SCALE_NOTES`: claim -> sentence ({} without any)."""
    path = Path(root) / SCALE_NOTES
    notes = (load_yaml(path) if path.is_file() else None) or {}
    chosen = (notes.get(scale) or {}) if isinstance(notes, dict) else None
    if not isinstance(chosen, dict) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in chosen.items()
    ):
        raise ValueError(
            f"{SCALE_NOTES} must map each scale (here {scale}) to claim ids, each with one"
            " sentence: fix the file (see its header)"
        )
    return chosen


def disagreements(rows: list[Row]) -> list[Row]:
    """The claims one scale passes and the other fails (not those one scale does not judge)."""
    return [r for r in rows if r.a and r.b and {r.a[1], r.b[1]} == {"pass", "fail"}]


def beside_quick_lines(quick: Run, published: Run, notes: Mapping[str, str]) -> list[str]:
    """The side-by-side table, the count of differing verdicts, one sentence per disagreement."""
    scale = published.scale
    rows = compare(quick, published)
    lines = [
        "Beside the quick scale (docs/verdicts-quick.md), claim by claim:",
        "",
        f"| claim | quick | verdict | {scale} | verdict | verdicts |",
        "|---|---|---|---|---|---|",
    ]
    for r in rows:
        a, b = r.a or ("", "not in this run"), r.b or ("", "not in this run")
        flag = "differ" if r.flag == "DIFFERS" else ""
        lines.append(f"| `{r.claim_id}` | {a[0]} | {a[1]} | {b[0]} | {b[1]} | {flag} |")
    differ = [r for r in rows if r.flag == "DIFFERS"]
    judged = disagreements(rows)
    lines += [
        "",
        f"{len(rows)} claims; the verdicts differ for {len(differ)}: {len(judged)} where one"
        f" scale passes and the other fails, the rest where one of them does not judge the"
        f" claim (not_run or indicative).",
    ]
    if judged:
        lines += ["", "Which scale to believe where one passes and the other fails:", ""]
        lines += [f"- `{r.claim_id}`: {notes.get(r.claim_id, NO_NOTE)}" for r in judged]
    return lines + [""]
