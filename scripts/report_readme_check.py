"""Fail when one of README.md's generated sections is stale: "What reproduces" differs from
results/claims.md, or "What reproduces at the paper level" from published/ beside this quick
run's claims (galu/workflow/publish.py, scale_table.py), beyond the precision shown (numbers
may differ by one unit of their last digit: see galu.workflow.precision)."""

import logging
import sys
from pathlib import Path

from galu.workflow.provenance import log_to_file
from galu.workflow.publish import PAPER_MARKERS, paper_section
from galu.workflow.readme_sections import QUICK_MARKERS, describe_differences, readme_differences
from galu.workflow.scales import QUICK

log_to_file(snakemake.log[0])
readme = Path(snakemake.input.readme).read_text()
sections = {}
# Both sections are the quick run's to judge: the first is its verdict, the second sets the
# published runs beside it (galu/workflow/scale_table.py). Another scale checks neither.
if snakemake.params.scale == QUICK:
    sections["'What reproduces' section differs from results/claims.md"] = (
        Path(snakemake.input.md).read_text(),
        QUICK_MARKERS,
    )
    sections["'What reproduces at the paper level' differs from published/"] = (
        paper_section(".", Path(snakemake.input.csv)),
        PAPER_MARKERS,
    )
else:
    logging.getLogger("galu").info(
        "README's sections are judged by the quick run; the %s scale checks neither",
        snakemake.params.scale,
    )
stale = []
for what, (section, markers) in sections.items():
    differences = readme_differences(readme, section, markers)
    if differences:
        stale.append(
            f"README.md's {what} in {len(differences)} line(s):\n"
            f"{describe_differences(differences)}"
        )
if stale:
    sys.exit("\n".join(stale) + "\nUpdate it with:  galu readme --update")
