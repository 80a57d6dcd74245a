"""Convert one dataset's verified raw files -> data/processed/<dataset>.npz (+ sidecar)."""

import logging
import sys
from pathlib import Path

from galu.workflow.data.errors import DataError
from galu.workflow.data.prepare import prepare
from galu.workflow.data.substitutes import parse_substitutes
from galu.workflow.output import Run

run = Run.from_snakemake(snakemake)
npz = Path(snakemake.output.npz)
try:
    prepare(
        snakemake.wildcards.dataset,
        raw_root=Path(snakemake.input.manifest).parent.parent,
        processed_root=npz.parent,
        substitutes=parse_substitutes(snakemake.params.substitutes),
        run=run,
    )
except DataError as error:
    logging.getLogger("galu").error("%s", error)  # the log file keeps it too
    print(f"galu: {error}", file=sys.stderr)
    sys.exit(1)
