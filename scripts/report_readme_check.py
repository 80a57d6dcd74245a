"""Fail when one of README.md's generated sections is stale: "What reproduces" differs from
results/claims.md, or "What reproduces at the paper level" from published/
(galu/workflow/publish.py), beyond the precision shown (numbers may differ by one unit of their last
digit: see galu.workflow.precision)."""

import sys
from pathlib import Path

from galu.workflow.provenance import log_to_file
from galu.workflow.publish import PAPER_MARKERS, paper_section
from galu.workflow.readme_sections import QUICK_MARKERS, describe_differences, readme_differences
from galu.workflow.scales import QUICK

log_to_file(snakemake.log[0])
readme = Path(snakemake.input.readme).read_text()
sections = {
    "'What reproduces at the paper level' differs from published/": (
        paper_section("."),
        PAPER_MARKERS,
    ),
}
if snakemake.params.scale == QUICK:  # the first section is the quick run's verdict
    sections["'What reproduces' section differs from results/claims.md"] = (
        Path(snakemake.input.md).read_text(),
        QUICK_MARKERS,
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
