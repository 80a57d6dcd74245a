"""The SLURM profile's placeholders are refused before any job is submitted."""

from __future__ import annotations

import sys

import pytest

from galu.workflow.settings.config import ConfigError
from galu.workflow.settings.profiles import check_placeholders, placeholders

from conftest import REPO, run


def test_placeholders_are_named_with_where_they_are():
    default = {"slurm_partition": "EDIT-partition", "slurm_account": "lab", "runtime": 30}
    per_rule = {"normalization_train": {"slurm_account": "EDIT-account"}}
    assert placeholders(default, per_rule) == [
        "default-resources: slurm_partition=EDIT-partition",
        "set-resources: normalization_train: slurm_account=EDIT-account",
    ]
    with pytest.raises(ConfigError, match="slurm_partition=EDIT-partition.*sinfo -s"):
        check_placeholders(default, per_rule)
    check_placeholders({"slurm_partition": "gpu", "slurm_account": "lab"}, {})  # no error


def test_snakemakes_resource_objects_are_read():
    from snakemake.resources import Resources

    parsed = Resources.from_mapping({"slurm_partition": "EDIT-partition", "mem_mb": 2000})
    assert placeholders(parsed) == ["default-resources: slurm_partition=EDIT-partition"]


def test_the_slurm_profile_as_shipped_stops_a_dry_run_with_the_reason():
    # The profile's placeholders reach the Snakefile through --default-resources exactly as
    # `--profile profiles/slurm` passes them; no executor plugin or cluster is needed.
    command = [
        sys.executable,
        "-m",
        "snakemake",
        "results/normalization/coefficients.csv",
        "-n",
        "--nolock",
        "--cores",
        "1",
        "--default-resources",
        "slurm_partition='EDIT-partition'",
        "slurm_account='EDIT-account'",
    ]
    done = run(command, REPO, check=False, timeout=300)
    assert done.returncode != 0
    assert "placeholders: default-resources: slurm_partition=" in done.stderr
    assert "EDIT-account" in done.stderr and "Traceback" not in done.stderr
