# Shared by every stage: configuration check, sidecar paths, the conda environment.
import sys

import yaml

from galu.config import ConfigError, validate_files
from galu.provenance import sidecar_path

try:
    validate_files(config, workflow.source_path("../schemas/config.schema.yaml"))
except ConfigError as error:
    # One readable message and a non-zero exit, before any job runs (no traceback).
    print(f"galu: {error}", file=sys.stderr)
    sys.exit(2)

SCALE = config["scale"]
ENV = "../../environment.yml"


with open(workflow.source_path("../claims.yaml")) as handle:
    CLAIMS = yaml.safe_load(handle)


def claim_sources(wildcards):
    """CSVs the claims read that this configuration produces (others become not_run).

    Evaluated when the DAG is built, after every stage has extended ALL_TARGETS."""
    return sorted({c["source"] for c in CLAIMS if c["source"] in ALL_TARGETS})


def meta(path):
    """The provenance sidecar of an output (written by galu.provenance.Run)."""
    return str(sidecar_path(path))
