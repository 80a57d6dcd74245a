"""Fetch one dataset's raw files, verified -> data/raw/<dataset>/sources.json (+ sidecar)."""

import logging
import sys
from pathlib import Path

from galu.workflow.data.errors import DataError
from galu.workflow.data.fetch import fetch
from galu.workflow.data.settings import DataSettings
from galu.workflow.output import Run

run = Run.from_snakemake(snakemake)
# params.settings holds the keys that decide the bytes; the site settings (mirrors, timeouts)
# come from the config, so that changing them reruns nothing (galu/workflow/settings/sitekeys.py).
settings = DataSettings.from_config({**snakemake.config["data"], **snakemake.params.settings})
raw_root = Path(snakemake.output.manifest).parent.parent
try:
    report = fetch(snakemake.wildcards.dataset, raw_root, settings)
except DataError as error:
    # The message lists every place tried and the fixes; a traceback would bury it.
    logging.getLogger("galu").error("%s", error)  # the log file keeps it too
    print(f"galu: {error}", file=sys.stderr)
    sys.exit(1)
run.extra["data_substitute"] = report.substitute
run.stamp(report.manifest)
