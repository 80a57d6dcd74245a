"""The code dependencies of ``dvc.yaml``'s stages, generated from the rules' code closures.

Each DVC stage runs Snakemake for one workflow stage, whose rules live in
``workflow/rules/<stage>*.smk``. A stage's code deps are those rule files plus the code
closure (:mod:`galu.workflow.closure`) of every script they run: the same closures that decide
Snakemake's reruns, so the two tools agree on what a library edit touches. Other deps
(datasets, CSVs of other stages, ``workflow/claims.yaml``, caption templates) are not
code and are kept as written. ``galu dvc`` checks ``dvc.yaml`` against this and
``galu dvc --update`` rewrites the deps lists in place (comments and everything else
unchanged).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path

from galu.workflow.closure import CodeScanner
from galu.workflow.stages import FIGURE_RULES, PLOT_SCRIPT, STAGE_NAMES, sentence_modules
from galu.workflow.stages import stage as declared

# The claims rule's script imports every stage's caption sentences by name (its `modules`
# param in workflow/rules/report.smk): part of its closure.
CLAIMS_SCRIPT = "scripts/report_claims.py"

# Deps under these prefixes are generated; any other dep is kept as written.
CODE_PREFIXES = ("galu/", "scripts/", "workflow/rules/")
_SCRIPT = re.compile(r'^\s*script:\s*\n\s*(?:f?)"\.\./\.\./(scripts/[^"]+\.py)"', re.M)
_STAGE = re.compile(r"^  ([\w-]+):\s*$")
_DEPS = re.compile(r"^    deps:\s*$")
_ITEM = re.compile(r"^      - (.+?)\s*$")


def rule_files(root: Path, stage: str) -> list[Path]:
    """The rule files of a DVC stage: ``workflow/rules/<stage>.smk`` and ``<stage>_*.smk``."""
    rules = root / "workflow" / "rules"
    return sorted(
        p for p in rules.glob(f"{stage}*.smk") if p.stem == stage or p.stem.startswith(stage + "_")
    )


def scripts_of(rule_file: Path) -> list[str]:
    """The scripts (repository-relative) the rules of one rule file run."""
    return sorted(set(_SCRIPT.findall(rule_file.read_text())))


def code_deps(root: Path, stage: str, scanner: CodeScanner | None = None) -> list[str]:
    """Sorted code deps of one stage: its rule files and its scripts' code closures, and for
    a declared stage its ``galu/<paper>/stage.py``, the rule file that makes its plot rules
    and the closure of the plot script with the stage's figures module."""
    scanner = scanner or CodeScanner(root)
    deps: set[str] = set()
    for rule_file in rule_files(root, stage):
        deps.add(rule_file.relative_to(root).as_posix())
        for script in scripts_of(rule_file):
            by_name = sentence_modules() if script == CLAIMS_SCRIPT else ()
            deps.update(scanner.closure(script, by_name).files)
    if stage in STAGE_NAMES:  # its declaration, read by name (galu.workflow.stages)
        deps.update({FIGURE_RULES, f"galu/{stage}/stage.py"})
        deps.update(scanner.closure(PLOT_SCRIPT, [declared(stage).figures_module]).files)
    return sorted(deps)


def read_deps(text: str) -> dict[str, list[str]]:
    """Stage -> deps list as written in ``dvc.yaml`` (stages without deps: empty)."""
    found: dict[str, list[str]] = {}
    stage, in_deps = None, False
    for line in text.splitlines():
        head = _STAGE.match(line)
        if head:
            stage, in_deps = head.group(1), False
            found[stage] = []
            continue
        if stage is None:
            continue
        if _DEPS.match(line):
            in_deps = True
        elif in_deps and _ITEM.match(line):
            found[stage].append(_ITEM.match(line).group(1))
        elif in_deps and line.strip() and not line.lstrip().startswith("#"):
            in_deps = False
    return found


def wanted_deps(root: Path, written: Mapping[str, list[str]]) -> dict[str, list[str]]:
    """Stage -> deps as they should be: generated code deps, then the kept non-code deps."""
    scanner = CodeScanner(root)
    return {
        stage: code_deps(root, stage, scanner)
        + [d for d in deps if not d.startswith(CODE_PREFIXES)]
        for stage, deps in written.items()
    }


def rewrite(text: str, deps: Mapping[str, list[str]]) -> str:
    """``dvc.yaml``'s text with each listed stage's deps replaced by ``deps[stage]``."""
    out: list[str] = []
    stage, in_deps = None, False
    for line in text.splitlines(keepends=True):
        head = _STAGE.match(line)
        if head:
            stage, in_deps = head.group(1), False
        elif stage in deps and _DEPS.match(line):
            out.append(line)
            out.extend(f"      - {dep}\n" for dep in deps[stage])
            in_deps = True
            continue
        elif in_deps and _ITEM.match(line):
            continue
        elif in_deps:
            in_deps = False
        out.append(line)
    return "".join(out)


def differences(written: Mapping[str, list[str]], wanted: Mapping[str, list[str]]) -> list[str]:
    """Human-readable lines: per stage, the deps missing from and extra in ``dvc.yaml``."""
    lines = []
    for stage in written:
        missing = sorted(set(wanted[stage]) - set(written[stage]))
        extra = sorted(set(written[stage]) - set(wanted[stage]))
        if missing:
            lines.append(f"stage {stage}: missing deps {', '.join(missing)}")
        if extra:
            lines.append(f"stage {stage}: deps no stage rule uses {', '.join(extra)}")
    return lines
