"""The files a user of PyPI or the Snakemake workflow catalog looks for: licence, citation,
configuration guide and catalog settings, consistent with the package and its papers."""

import re

from galu.workflow.settings.config import load_yaml

from conftest import REPO


def test_the_licence_is_the_one_the_package_declares():
    declared = re.search(r'^license = "(\w+)"', (REPO / "pyproject.toml").read_text(), re.M)
    assert declared and declared.group(1) == "MIT"
    assert (REPO / "LICENSE").read_text().startswith("MIT License\n")


def test_the_citation_cites_the_papers_the_stages_reproduce():
    cff = load_yaml(REPO / "CITATION.cff")
    assert cff["cff-version"] == "1.2.0" and cff["license"] == "MIT"
    assert {"message", "title", "authors"} <= set(cff)
    cited = {i["value"] for r in cff["references"] for i in r["identifiers"]}
    # the arXiv ids the papers' packages name (galu/<paper>/__init__.py, stage.py)
    named = {
        f"arXiv:{n}"
        for path in REPO.glob("galu/*/*.py")
        if path.name in ("__init__.py", "stage.py")
        for n in re.findall(r"arXiv (\d{4}\.\d{5})", path.read_text())
    }
    assert named and cited == named
    for ref in cff["references"]:
        assert ref["title"] and ref["authors"], ref
        # published no earlier than posted (an arXiv id starts with the year and month)
        assert all(ref["year"] >= 2000 + int(i["value"][6:8]) for i in ref["identifiers"]), ref


def test_the_catalog_settings_and_the_configuration_guide():
    catalog = load_yaml(REPO / ".snakemake-workflow-catalog.yml")["usage"]
    assert catalog["report"] is True and any(catalog["software-stack-deployment"].values())
    guide = (REPO / "config/README.md").read_text()
    overlays = sorted(p.name for p in (REPO / "config").glob("*.yaml") if p.name != "local.yaml")
    missing = [n for n in overlays if f"`{n}`" not in guide and f"`config/{n}`" not in guide]
    assert missing == []
