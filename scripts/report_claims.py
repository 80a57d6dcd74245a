"""Check every claim on this run's CSVs -> results/claims.csv, results/claims.md, the report's
landing page (results/captions/index.rst, and as HTML results/claims.html), and each figure's
report caption (the verdicts of the claims it shows, its template, then what the data show)."""

import json
import os
from pathlib import Path

from galu.atomic import atomic_write_bytes
from galu.workflow.claim_spec import parse_claims
from galu.workflow.claims import evaluate, reduced_claims
from galu.workflow.claims_text import caption_reductions, caption_verdicts, markdown_table
from galu.workflow.commits import made_on_files
from galu.workflow.landing import landing_html, landing_page, verdict_metrics
from galu.workflow.observations import observations_rst
from galu.workflow.output import Run
from galu.workflow.provenance import git_state, versions
from galu.workflow.scales import OutputRoot, judged_as
from galu.yaml_files import load_yaml

# This scale's outputs: the claims and figures name contract paths (galu/workflow/scales.py).
scale = snakemake.params.scale
root = OutputRoot(scale=scale)
claims = parse_claims(load_yaml(snakemake.input.claims), judged_as(scale))
reductions = snakemake.params.reductions
reduced = reduced_claims(reductions, [c.claim_id for c in claims])
table = evaluate(claims, root, scale, reduced, snakemake.params.stages)
substitute = sorted(set(table.loc[table["data_substitute"], "source"]))
run = Run.from_snakemake(snakemake, extra={"data_substitute": bool(substitute)})
run.write_csv(table, snakemake.output.csv)


def write_text(path, text):
    atomic_write_bytes(path, text.encode())
    run.stamp(path)


write_text(snakemake.output.md, markdown_table(table))
figures = snakemake.params.figures
provenance = {
    "git": git_state(),
    # The commits the tables were made on (a run over several sittings can span several).
    "made_on": made_on_files({path: Path(path) for path in snakemake.input}),
    "versions": versions(),
    "scale": scale,
    "reductions": reductions,
    "data": (
        "substitute data behind " + ", ".join(substitute)
        if substitute
        else "official or generated data only (no substitute dataset)"
    ),
}
landing = landing_page(table, figures, provenance)
write_text(snakemake.output.landing, landing)
# claims.html links each figure's file, relative to where the page is.
page_dir = Path(snakemake.output.html).parent
links = {figure: os.path.relpath(root / figure, page_dir) for figure in figures}
write_text(snakemake.output.html, landing_html(landing, links))
metrics = verdict_metrics(table)
write_text(snakemake.output.summary, json.dumps(metrics, indent=1, allow_nan=False) + "\n")
# What `dvc metrics show` prints, one column per key: the counts alone keep its lines short
# (each claim's value: `dvc metrics show results/claims_summary.json`, or `galu compare`).
counts = {key: value for key, value in metrics.items() if key != "measured"}
write_text(snakemake.output.counts, json.dumps(counts, indent=1, allow_nan=False) + "\n")
for (figure, template), caption in zip(figures.items(), snakemake.output.captions, strict=True):
    # The verdict first, so a reader sees it without scrolling past the parameters; then the
    # template, then what the data show (computed from the figure's CSVs).
    # What this scale reduces from the paper's settings comes right after the verdicts.
    text = caption_verdicts(table, figure) + caption_reductions(scale, reductions)
    text += "\n" + Path(template).read_text()
    write_text(caption, text + observations_rst(figure, root))
