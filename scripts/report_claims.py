"""Check every claim on this run's CSVs -> results/claims.csv, results/claims.md, and each
figure's report caption (its template plus the verdicts of the claims it shows)."""

from pathlib import Path

from galu.claims import caption_verdicts, evaluate, markdown_table, parse_claims
from galu.config import load_yaml
from galu.observations import observations_rst
from galu.provenance import Run, atomic_write_bytes

run = Run.from_snakemake(snakemake)
claims = parse_claims(load_yaml(snakemake.input.claims), snakemake.params.scale)
table = evaluate(claims, ".", snakemake.params.scale)
run.write_csv(table, snakemake.output.csv)
atomic_write_bytes(snakemake.output.md, markdown_table(table).encode())
run.stamp(snakemake.output.md)
figures = snakemake.params.figures
for (figure, template), caption in zip(figures.items(), snakemake.output.captions, strict=True):
    text = Path(template).read_text() + observations_rst(figure) + caption_verdicts(table, figure)
    atomic_write_bytes(caption, text.encode())
    run.stamp(caption)
