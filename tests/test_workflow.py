"""End to end: the default workflow in a fresh copy of the repository."""

from __future__ import annotations

import json
import zipfile

import pandas as pd
import pytest

from conftest import run, tool

pytestmark = pytest.mark.slow

CONTRACT = {
    "results/normalization/coefficients.csv": ["activation", "alpha", "beta", "gamma"],
    "results/claims.csv": [
        "claim_id",
        "paper",
        "statement",
        "expected",
        "measured",
        "tolerance",
        "verdict",
    ],
}
FIGURES = ["figures/normalization/activations.png", "figures/normalization/activations.pdf"]


def test_default_workflow_end_to_end(repo_copy):
    snakemake, galu = tool("snakemake"), tool("galu")
    dry = run([snakemake, "-n", "--cores", "2"], repo_copy)
    assert "normalization_coefficients" in dry.stdout
    assert not (repo_copy / "results").exists()  # a dry run writes nothing

    run([snakemake, "--cores", "2"], repo_copy)
    for path, columns in CONTRACT.items():
        table = pd.read_csv(repo_copy / path)
        assert list(table.columns[: len(columns)]) == columns
        meta = json.loads((repo_copy / f"{path}.meta.json").read_text())
        assert meta["git"]["dirty"] is False and len(meta["git"]["commit"]) == 40
    for path in FIGURES:
        assert (repo_copy / path).stat().st_size > 1000
        assert (repo_copy / f"{path}.meta.json").is_file()
    relu = pd.read_csv(repo_copy / "results/normalization/coefficients.csv").set_index("activation")
    assert relu.loc["relu", "alpha"] == pytest.approx(0.5, abs=1e-10)

    claims = pd.read_csv(repo_copy / "results/claims.csv")
    assert set(claims["verdict"]) <= {"pass", "fail", "not_run"}
    assert not claims.loc[claims["verdict"] == "not_run", "reason"].isna().any()
    # The README's "What reproduces" section is the one this run generates (CI fails on drift).
    run([snakemake, "--cores", "1", "readme_check"], repo_copy)

    again = run([snakemake, "-n", "--cores", "2"], repo_copy)
    assert "Nothing to be done" in again.stdout + again.stderr

    report = repo_copy / "results/report.zip"
    run([snakemake, "--report", str(report)], repo_copy)
    with zipfile.ZipFile(report) as archive:
        names = archive.namelist()
        assert any(n.endswith("activations.png") for n in names)
        html = "".join(
            archive.read(n).decode(errors="ignore") for n in names if n.endswith((".html", ".js"))
        )
    assert "half-range Gauss-Hermite" in html  # the caption made it into the report

    assert run([galu, "audit"], repo_copy).returncode == 0
    # One changed byte in a recorded input makes the audit fail and name the file.
    csv = repo_copy / "results/normalization/coefficients.csv"
    data = bytearray(csv.read_bytes())
    data[-3] = ord("7") if data[-3] != ord("7") else ord("8")
    csv.write_bytes(bytes(data))
    audit = run([galu, "audit"], repo_copy, check=False)
    assert audit.returncode == 1
    assert "results/normalization/coefficients.csv: changed after it was written" in audit.stdout
    assert "activations.png: input results/normalization/coefficients.csv changed" in audit.stdout


def test_missing_sidecar_fails_the_audit(repo_copy):
    run([tool("snakemake"), "--cores", "2"], repo_copy)
    (repo_copy / "figures/normalization/activations.pdf.meta.json").unlink()
    audit = run([tool("galu"), "audit"], repo_copy, check=False)
    assert audit.returncode == 1
    assert "figures/normalization/activations.pdf: no provenance sidecar" in audit.stdout


def test_lint_passes():
    from conftest import REPO

    lint = run([tool("snakemake"), "--lint"], REPO)
    assert "Congratulations" in lint.stdout + lint.stderr
