"""The package metadata, the conda environment and the README agree."""

import re
import tomllib

from galu import __version__
from galu.workflow.pages.readme_pages import (
    PAPER_PAGE,
    PAPER_SUMMARY_MARKERS,
    QUICK_PAGE,
    QUICK_SUMMARY_MARKERS,
)
from galu.workflow.pages.readme_sections import readme_section
from galu.workflow.settings.config import load_yaml
from galu.workflow.verdict_lines import PAPER_NAMES

from conftest import REPO


def pyproject():
    return tomllib.loads((REPO / "pyproject.toml").read_text())


def test_environment_yml_lists_exactly_the_package_dependencies():
    env = load_yaml(REPO / "environment.yml")
    pip = next(d["pip"] for d in env["dependencies"] if isinstance(d, dict))
    listed = sorted(p.replace(" ", "") for p in pip if not p.startswith("-e"))
    declared = sorted(p.replace(" ", "") for p in pyproject()["project"]["dependencies"])
    assert listed == declared
    assert "-e ." in pip  # the conda environment installs galu itself


def test_version_is_single_sourced():
    assert pyproject()["tool"]["setuptools"]["dynamic"]["version"] == {"attr": "galu.__version__"}
    assert re.fullmatch(r"\d+\.\d+\.\d+", __version__)


def test_torch_requirement_is_a_range_not_a_pin():
    # Users bring their own (CUDA) torch; only the install steps pin the CPU build.
    torch = [d for d in pyproject()["project"]["dependencies"] if d.startswith("torch")]
    assert torch and "==" not in torch[0]


def test_ci_runs_the_readme_test_command():
    readme = (REPO / "README.md").read_text()
    ci = (REPO / ".ci/run").read_text()
    command = re.search(r"<!-- test-command -->\n```sh\n(.+?)\n```", readme, re.S).group(1)
    assert command.strip() in ci


def test_readme_first_screen_has_the_two_commands_and_each_papers_verdicts():
    """A reader sees, without scrolling (the first 40 lines): the two commands and each
    paper's verdict counts at both scales, each linked to the page of every claim; what the
    run leaves behind and the resources it takes follow."""
    readme = (REPO / "README.md").read_text()
    first = "\n".join(readme.splitlines()[:40])
    assert "<!-- reproduce-command -->\n```sh\nmake reproduce\n```" in first
    assert "<!-- test-command -->\n```sh\nmake test\n```" in first
    scales = [(QUICK_SUMMARY_MARKERS, QUICK_PAGE, "quick"),
              (PAPER_SUMMARY_MARKERS, PAPER_PAGE, "paper-cpu")]  # fmt: skip
    for markers, page, scale in scales:
        block = readme_section(first, markers)
        lines = [line for line in block.splitlines() if line.startswith("- **")]
        assert [line.split("**")[1] for line in lines] == list(PAPER_NAMES.values()), block
        assert all(line.endswith(f" ([every claim]({page}))") for line in lines), block
        # The counts it quotes are those of the generated verdict section on the page.
        held = (REPO / page).read_text()
        counts = re.search(rf"Claims checked at the \*\*{scale}\*\* scale: ([^.]+)\.", held)
        assert f"At the **{scale}** scale" in block and f" claims: {counts.group(1)}." in block
    after = "\n".join(readme.splitlines()[:60])
    assert "**What you get**" in after and "results/claims.html" in after
    assert "**Resources**" in after and "GB" in after
    assert "| Version |" not in after  # measurement history lives in benchmarks/README.md
