"""The package metadata, the conda environment and the README agree."""

import re
import tomllib

from galu import __version__
from galu.workflow.config import load_yaml

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


def test_readme_first_screen_has_the_two_commands_and_what_you_get():
    """A reader sees, without scrolling: the two commands, what the run leaves behind with the
    current verdict, and the resources it takes."""
    readme = (REPO / "README.md").read_text()
    first = "\n".join(readme.splitlines()[:40])
    assert "<!-- reproduce-command -->\n```sh\nmake reproduce\n```" in first
    assert "<!-- test-command -->\n```sh\nmake test\n```" in first
    assert "**What you get**" in first and "results/claims.html" in first
    assert "**Resources**" in first and "GB" in first
    # The counts it quotes are those of the generated verdict section further down.
    counts = re.search(r"Claims checked at the \*\*quick\*\* scale: ([^.]+)\.", readme).group(1)
    assert f"now {counts} at the quick scale" in first.replace("\n", " ")
    assert "| Version |" not in first  # measurement history lives in benchmarks/README.md
