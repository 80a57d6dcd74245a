"""Reading YAML files: the safe subset, with libyaml's parser when PyYAML was built with it
(the same values, about 8x faster on the workflow's larger files: the config schema, the
claims, the equivalence ledger, which every Snakemake call or job reads)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

_SAFE_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def load_yaml(path: str | Path) -> Any:
    """A YAML file's content, parsed with the safe loader (libyaml's when available)."""
    with open(path, encoding="utf-8") as handle:
        return yaml.load(handle, Loader=_SAFE_LOADER)
