"""The configuration a ``snakemake`` call would run with, assembled outside Snakemake.

The Snakefile reads ``config/config.yaml``, merges the site file ``config/local.yaml`` over
it, then Snakemake merges each ``--configfile`` (key by key, nested mappings recursively)
and the ``--config KEY=VALUE`` overrides. :func:`run_config` does the same, then validates
the result against the schema, so ``galu plan`` sees what the workflow would see.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import yaml

from galu.workflow.settings.config import (
    ConfigError,
    read_config_file,
    read_site_file,
    validate_files,
)


def merge(base: Mapping[str, Any], over: Mapping[str, Any]) -> dict[str, Any]:
    """``over`` merged into a copy of ``base``, nested mappings key by key (Snakemake's rule)."""
    out = dict(base)
    for key, value in over.items():
        if isinstance(value, Mapping) and isinstance(out.get(key), Mapping):
            out[key] = merge(out[key], value)
        else:
            out[key] = value
    return out


def parse_override(item: str) -> dict[str, Any]:
    """``a.b=value`` or Snakemake's ``a=value`` (a YAML value) as a nested mapping."""
    key, sep, text = item.partition("=")
    if not sep or not key:
        raise ConfigError(f"--config {item!r}: expected KEY=VALUE, e.g. --config device=cpu")
    try:
        value: Any = yaml.safe_load(text) if text else ""
    except yaml.YAMLError as error:
        problem = getattr(error, "problem", None) or str(error)
        raise ConfigError(
            f"--config {item!r}: the value is not valid YAML ({problem}); quote it, e.g."
            " --config 'key=[1, 2]'"
        ) from None
    for part in reversed(key.split(".")):
        value = {part: value}
    return value


def run_config(
    root: str | Path, configfiles: Sequence[str | Path] = (), overrides: Sequence[str] = ()
) -> dict[str, Any]:
    """The merged, validated configuration of ``snakemake --configfile ... --config ...``."""
    root = Path(root)
    config = read_config_file(root / "config/config.yaml", fix="restore it from git")
    local = root / "config/local.yaml"
    layers = [read_site_file(local)] if local.is_file() else []
    for path in configfiles:
        path = Path(path)
        full = path if path.is_absolute() else root / path
        if not full.is_file():
            raise ConfigError(
                f"--configfile {path}: no such file; give a path like config/paper.yaml"
            )
        layers.append(read_config_file(full, fix="fix it, or leave it out of the command line"))
    layers.append(merged_overrides(overrides))
    for layer in layers:
        config = merge(config, layer)
    validate_files(config, root / "workflow/schemas/config.schema.yaml", check_cuda=False)
    return config


def merged_overrides(overrides: Sequence[str]) -> dict[str, Any]:
    """The ``--config KEY=VALUE`` overrides as one nested mapping, later ones winning."""
    merged: dict[str, Any] = {}
    for item in overrides:
        merged = merge(merged, parse_override(item))
    return merged
