"""Checks of the Snakemake profile a run uses, before any job is submitted.

``profiles/slurm/config.yaml`` ships placeholders (``EDIT-partition``, ``EDIT-account``)
where each site puts its own values. Submitted as they are, every job would be refused by
``sbatch`` one by one (or, worse, land in a default partition); the run stops at once instead,
naming the setting and the file to edit.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from galu.workflow.settings.config import ConfigError

PLACEHOLDER = re.compile(r"EDIT-[A-Za-z0-9_-]+")


def _pairs(resources: Any) -> list[tuple[str, str]]:
    """``(name, value)`` of a resource set: a mapping, or Snakemake's ``Resources`` (whose
    ``args`` are ``name=value`` strings)."""
    if resources is None:
        return []
    if hasattr(resources, "args"):
        return [tuple(arg.split("=", 1)) for arg in resources.args]  # type: ignore[misc]
    if isinstance(resources, Mapping):
        return [(str(k), str(v)) for k, v in resources.items()]
    return [("", str(resources))]


def placeholders(default: Any, per_rule: Mapping[str, Any] | None = None) -> list[str]:
    """Every resource still set to a placeholder, as ``default-resources: name=value`` or
    ``set-resources: rule: name=value``."""
    found = [
        f"default-resources: {name}={value}"
        for name, value in _pairs(default)
        if PLACEHOLDER.search(value)
    ]
    for rule, resources in (per_rule or {}).items():
        found += [
            f"set-resources: {rule}: {name}={value}"
            for name, value in _pairs(resources)
            if PLACEHOLDER.search(value)
        ]
    return found


def check_placeholders(default: Any, per_rule: Mapping[str, Any] | None = None) -> None:
    """Raise :class:`ConfigError` naming each placeholder and what to put there."""
    found = placeholders(default, per_rule)
    if found:
        raise ConfigError(
            "the profile still holds placeholders: "
            + "; ".join(found)
            + ". Put your site's values in profiles/slurm/config.yaml (`sinfo -s` lists the "
            "partitions, `sacctmgr show assoc user=$USER` your accounts), or override them, "
            "e.g. --default-resources slurm_partition=<partition> slurm_account=<account>."
        )
