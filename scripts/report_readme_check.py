"""Fail when README.md's "What reproduces" section differs from results/claims.md."""

import sys
from pathlib import Path

from galu.claims import readme_with_section
from galu.provenance import log_to_file

log_to_file(snakemake.log[0])
readme = Path(snakemake.input.readme).read_text()
section = Path(snakemake.input.md).read_text()
if readme_with_section(readme, section) != readme:
    sys.exit(
        "README.md's 'What reproduces' section is out of date with results/claims.md; "
        "update it with:  galu readme --update"
    )
