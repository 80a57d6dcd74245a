"""Fail when README.md's "What reproduces" section differs from results/claims.md beyond the
precision shown (numbers may differ by one unit of their last digit: see galu.precision)."""

import sys
from pathlib import Path

from galu.claims import describe_differences, readme_differences
from galu.provenance import log_to_file

log_to_file(snakemake.log[0])
readme = Path(snakemake.input.readme).read_text()
differences = readme_differences(readme, Path(snakemake.input.md).read_text())
if differences:
    sys.exit(
        f"README.md's 'What reproduces' section differs from results/claims.md in"
        f" {len(differences)} line(s):\n{describe_differences(differences)}\n"
        "Update it with:  galu readme --update"
    )
