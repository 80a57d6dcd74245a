"""The report appears whole under its name, with a sidecar the audit checks."""

import pandas as pd
import pytest

from galu.workflow.output import Run
from galu.workflow.pages.report_build import build_path, install_report
from galu.workflow.trust.audit import audit_tree


def test_report_is_renamed_into_place_with_a_sidecar_and_audited(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    Run("claims").write_csv(pd.DataFrame({"claim_id": ["a"]}), "results/claims.csv")
    built = build_path(tmp_path)
    assert built.parent.is_dir() and not built.exists()
    built.write_bytes(b"PK archive")
    final = install_report(
        built, ["results/claims.csv", "results/absent.csv"], "results/report.zip"
    )
    assert final.read_bytes() == b"PK archive" and not built.exists()
    assert audit_tree(".", ["results"]) == []
    final.write_bytes(b"PK trunc")  # a report changed after it was written is named
    (problem,) = audit_tree(".", ["results"])
    assert "report.zip" in str(problem) and "changed after it was written" in str(problem)


def test_a_build_that_left_nothing_keeps_the_previous_report(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    previous = tmp_path / "results/report.zip"
    previous.parent.mkdir()
    previous.write_bytes(b"old")
    with pytest.raises(FileNotFoundError, match="left no archive"):
        install_report(build_path(tmp_path), [], previous)
    assert previous.read_bytes() == b"old"
