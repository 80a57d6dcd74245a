"""Each compute job is declared once (issue #58): by its rule. Its name is written in its
rule file and in no other source file; the job lists of the plan and the cost fit, the
rules' costs and dvc.yaml's commands are read back from the workflow
(galu/workflow/planning/dag.py)."""

from __future__ import annotations

import re
import subprocess

import pytest

from galu.workflow.planning.dag import read_dag
from galu.workflow.planning.jobs import EXPERIMENT_STAGES, stage_of

from conftest import REPO


def mentions(name: str, text: str) -> int:
    """How often ``text`` names the rule ``name``: the word itself (``rules.<name>`` too),
    not a file named after it (``scm_ode.py``, ``.../generalization_images.rst``), not a
    function of the same name (``normalization_coefficients(...)``, its import, its dotted
    path ``module.name``)."""
    word = re.compile(rf"(?<![\w/]){re.escape(name)}(?![\w(])")
    count = 0
    for line in text.splitlines():
        if re.match(r"\s*(from \S+ )?import ", line):
            continue
        for m in word.finditer(line):
            before, after = line[: m.start()], line[m.end() :]
            if before.endswith("rules."):  # a rule file naming another rule's outputs
                count += 1
            elif not before.endswith(".") and not re.match(r"\.[a-z]+\b", after):
                count += 1
    return count


def test_mentions_count_the_rule_and_nothing_named_after_it():
    assert mentions("scm_ode", 'job_resources("scm_ode") and ``scm_ode`` jobs') == 2
    assert mentions("scm_ode", "rule scm_ode:\n    input: rules.scm_ode.output") == 2
    assert mentions("scm_ode", "scripts/scm_ode.py and scm_ode.rst, scm_odes, my_scm_ode") == 0
    text = "from m import norm_coeffs\ndef norm_coeffs(x): c.norm_coeffs"
    assert mentions("norm_coeffs", text) == 0


def _sources() -> dict[str, str]:
    """Every tracked source file but the tests: Python, rule files, the Snakefile."""
    listed = subprocess.run(
        ["git", "ls-files", "*.py", "*.smk", "Snakefile"],
        cwd=REPO, capture_output=True, text=True, check=True,
    ).stdout.split()  # fmt: skip
    return {p: (REPO / p).read_text() for p in listed if not p.startswith("tests/")}


@pytest.fixture(scope="module")
def compute_rules() -> list[str]:
    """The rules of the experiment stages (plot rules included: figures.smk names them
    from the figures' declarations), as Snakemake parsed them at the paper-cpu scale."""
    dag = read_dag(REPO, ["config/paper.yaml", "config/paper-cpu.yaml"])
    return [rule for rule in dag.rules if stage_of(rule) in EXPERIMENT_STAGES]


def test_each_compute_rule_is_named_in_one_source_file(compute_rules):
    sources = _sources()
    assert len(compute_rules) > 40 and "normalization_train_wide" in compute_rules
    for rule in compute_rules:
        files = sorted(path for path, text in sources.items() if mentions(rule, text))
        if "_plot_" in rule:  # made from a figure's declaration: written nowhere by name
            assert files == [], rule
            continue
        # the stage's rule file, where `rule <name>:` (or `use rule ... as <name>`) stands
        assert len(files) == 1 and files[0].startswith("workflow/rules/"), (rule, files)
        assert re.search(rf"^(rule {rule}:|use rule \w+ as {rule} with:)$", sources[files[0]], re.M)
