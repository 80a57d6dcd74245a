"""galu.yaml_files.load_yaml: libyaml's loader, read as the pure-Python safe loader reads.

Every job reads the equivalence ledger and the table contracts through it, and every
Snakemake call the schema and the claims: switching the parser must not change a value."""

from __future__ import annotations

import pytest
import yaml

from galu.yaml_files import load_yaml

from conftest import REPO, repo_files

SHIPPED = sorted(f for f in repo_files() if f.endswith((".yaml", ".yml")) and "published/" not in f)


@pytest.mark.parametrize("rel", SHIPPED)
def test_every_shipped_yaml_file_reads_as_the_safe_loader_reads_it(rel):
    assert load_yaml(REPO / rel) == yaml.safe_load((REPO / rel).read_text(encoding="utf-8"))


def test_a_yaml_mistake_raises_yamls_own_error(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("a: [1, 2\n")
    with pytest.raises(yaml.YAMLError):
        load_yaml(bad)
