"""Check every claim on this run's CSVs -> results/claims.csv and results/claims.md."""

from galu.claims import evaluate, markdown_table, parse_claims
from galu.config import load_yaml
from galu.provenance import Run, atomic_write_bytes

run = Run.from_snakemake(snakemake)
claims = parse_claims(load_yaml(snakemake.input.claims), snakemake.params.scale)
table = evaluate(claims, ".", snakemake.params.scale)
run.write_csv(table, snakemake.output.csv)
atomic_write_bytes(snakemake.output.md, markdown_table(table).encode())
run.stamp(snakemake.output.md)
