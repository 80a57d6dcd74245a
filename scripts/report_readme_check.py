"""Fail when one of the generated verdict sections is stale: docs/verdicts-quick.md's differs
from results/claims.md, docs/verdicts-paper.md's "What reproduces at the paper level" from
published/ beside this quick run's claims (galu/workflow/pages/publication_readme.py,
scale_table.py), beyond the precision shown (numbers may differ by one unit of their last
digit: see galu.workflow.precision), or README.md's per-paper counts of either from the
claims tables they count (galu/workflow/pages/readme_pages.py), to the letter."""

import logging
import sys
from pathlib import Path

from galu.workflow.pages.readme_pages import generated_sections
from galu.workflow.pages.readme_sections import describe_differences
from galu.workflow.provenance import log_to_file
from galu.workflow.scales import QUICK

log_to_file(snakemake.log[0])
sections = []
# Every section is the quick run's to judge: the first is its verdict, the second sets the
# published runs beside it (galu/workflow/pages/scale_table.py), README's blocks count them.
# Another scale checks none.
if snakemake.params.scale == QUICK:
    sections = generated_sections(
        Path(snakemake.input.readme),
        Path(snakemake.input.md),
        Path(snakemake.input.csv),
        Path(snakemake.input.quick_page),
        Path(snakemake.input.paper_page),
    )
else:
    logging.getLogger("galu").info(
        "README's sections are judged by the quick run; the %s scale checks none",
        snakemake.params.scale,
    )
stale = []
for section in sections:
    differences = section.differences(section.path.read_text())
    if differences:
        stale.append(
            f"{section.path}'s {section.what} differ from {section.source} in"
            f" {len(differences)} line(s):\n"
            f"{describe_differences(differences, label=section.label)}"
        )
if stale:
    sys.exit("\n".join(stale) + "\nUpdate them with:  galu readme --update")
