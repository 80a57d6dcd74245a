"""The band around ``k = m / d`` that the zero-error claim judges every search by (Fiat,
Malach & Shalev-Shwartz, arXiv 1906.05032, sec. 3: memorizing m random signs in d dimensions
takes about m/d neurons).

The band is a number of the claim ``mem_random_signs_need_about_m_over_d_neurons`` in
``workflow/claims.yaml`` (its expression ``abs(kd_over_m - 1) <= band``); the zero-error
figure draws it and the caption's sentences count the searches outside it, both read from the
claim here, so the three can never disagree.
"""

from __future__ import annotations

import re
from functools import lru_cache
from pathlib import Path

from galu.yaml_files import load_yaml

CLAIM = "mem_random_signs_need_about_m_over_d_neurons"
CLAIMS_YAML = Path(__file__).resolve().parents[2] / "workflow" / "claims.yaml"
# The claim's test of one search: min_width d / m within ``band`` of 1.
_BAND = re.compile(r"abs\(\s*kd_over_m\s*-\s*1\s*\)\s*<=\s*([0-9.eE+-]+)")


def band_of(expression: str) -> float:
    """The half-width of the band in a claim expression ``... abs(kd_over_m - 1) <= band``."""
    found = _BAND.search(expression)
    if not found:
        raise ValueError(
            f"claim {CLAIM}: expression {expression!r} has no 'abs(kd_over_m - 1) <= band'; "
            "update galu/memorization/band.py with the claim"
        )
    return float(found.group(1))


@lru_cache(maxsize=4)
def claim_band(path: str | Path = CLAIMS_YAML) -> float:
    """The band of :data:`CLAIM` in the claims file ``path`` (read once per process)."""
    entries = load_yaml(path)  # (libyaml's loader: every Snakemake call reads it)
    for entry in entries:
        if entry.get("id") == CLAIM:
            return band_of(str(entry["expression"]))
    raise ValueError(f"{path}: no claim {CLAIM}; the zero-error figure draws its band")
