"""The files a claim's words cite, against what a publication holds.

A claim's ``statement``, ``paper_says`` and ``finding`` (``workflow/claims.yaml``) are shown in
every verdict page, caption and table, a publication's included, and may name a run's file
(``results/normalization/spectra.csv``, ``figures/normalization/correlations.png``) as the
evidence. A reader of a publication can follow such a citation only if the publication holds
the file; one it leaves out as too large
(:data:`~galu.workflow.publishing.publish.MAX_BYTES`) must say so where it is cited, with how to
remake it: in the same clause (up to the next ``;`` or ``)``), the words ``left out`` and
``remake``, e.g. ``results/normalization/spectra.csv, left out of a paper-level publication as
too large (`snakemake` remakes it)``. :func:`unpublished_citations` names every citation that
does neither; ``tests/test_publish_pages.py`` runs it over the repository's claims and its
paper-level publication.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

# The fields of a claim whose words a reader sees.
CITING_FIELDS = ("statement", "paper_says", "finding")
# A run's file named in a text: a contract path under results/ or figures/.
CITED = re.compile(r"\b(?:results|figures)/[\w./-]*\w\.[a-z]+")
# What a clause says of a cited file the publication lacks: that it is left out, and how to
# remake it.
LEFT_OUT = re.compile(r"left out", re.IGNORECASE)
REMAKE = re.compile(r"remake", re.IGNORECASE)


def _said_left_out(text: str, end: int) -> bool:
    """Whether the clause of ``text`` from ``end`` (after a citation) to the next ``;`` or
    ``)`` says the file is left out and how to remake it."""
    clause = re.split(r"[;)]", text[end:], maxsplit=1)[0]
    return bool(LEFT_OUT.search(clause) and REMAKE.search(clause))


def unpublished_citations(claims: Iterable[Mapping[str, Any]], files: Iterable[str]) -> list[str]:
    """``claim id, field: path`` for every file a claim's words cite (:data:`CITING_FIELDS`)
    that is not among a publication's ``files`` (contract paths) and is not said, in its
    clause, to be left out with how to remake it."""
    published = set(files)
    found = []
    for claim in claims:
        for field in CITING_FIELDS:
            text = claim.get(field)
            if not isinstance(text, str):
                continue
            for match in CITED.finditer(text):
                path = match.group(0)
                if path not in published and not _said_left_out(text, match.end()):
                    found.append(f"{claim.get('id')}, {field}: {path}")
    return found
