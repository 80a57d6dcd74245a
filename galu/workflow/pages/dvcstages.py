"""``dvc.yaml``'s stage commands and code dependencies, generated from the workflow.

Each DVC stage runs Snakemake for one workflow stage. Its ``cmd`` allows exactly the
stage's rules and asks for the stage's targets, both read from the workflow
(:func:`stage_commands`: the rules Snakemake parsed, and what ``rule all`` asks for at the
quick scale, by the stage whose job makes it; the data stage's, which only other stages
read, are its final outputs). Its code deps are its rule files plus the code closure
(:mod:`galu.workflow.closure`) of every script they run: the same closures that decide
Snakemake's reruns, so the two tools agree on what a library edit touches. Other deps
(datasets, CSVs of other stages, ``workflow/claims.yaml``, caption templates), the outs and
the params are kept as written. ``galu dvc`` checks ``dvc.yaml`` against this and ``galu dvc
--update`` rewrites the commands and deps lists in place (comments and everything else
unchanged).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path

from galu.workflow.closure import CodeScanner
from galu.workflow.planning.dag import Dag, read_dag
from galu.workflow.planning.jobs import STAGE_ORDER, stage_of
from galu.workflow.sidecar_seal import SIDECAR_SUFFIX as SIDECAR
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
_CMD = re.compile(r"^    cmd: >-\s*$")
_ITEM = re.compile(r"^      - (.+?)\s*$")
_MORE = re.compile(r"^      (?!- )(\S.*?)\s*$")  # a continuation line of a folded cmd
# The width the generated commands are folded at (dvc.yaml's own lines stay under 100).
CMD_WIDTH = 92


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


def stage_commands(dag: Dag) -> dict[str, list[str]]:
    """Stage -> its DVC ``cmd`` as folded lines: Snakemake allowed only the stage's rules
    (every rule the workflow defines for it) and asked for its targets (see the module
    docstring), from the :class:`~galu.workflow.planning.dag.Dag` of the quick scale."""
    made_by = {out: p.job.stage for p in dag.jobs for out in p.outputs}
    commands = {}
    for stage in STAGE_ORDER:
        rules = [r for r in dag.rules if stage_of(r) == stage]
        targets = [t for t in dag.targets if made_by.get(t) == stage]
        if not targets:  # the data stage: what its jobs make that none of them reads
            own = [p for p in dag.jobs if p.job.stage == stage]
            read = {i for p in own for i in p.inputs}
            targets = [
                o for p in own for o in p.outputs if o not in read and not o.endswith(SIDECAR)
            ]
        if rules:
            commands[stage] = [
                "snakemake --cores all",
                *_fold(["--allowed-rules", *rules]),
                *_fold(["--", *targets]),
            ]
    return commands


def _fold(words: list[str]) -> list[str]:
    """``words`` as lines of at most :data:`CMD_WIDTH` characters (a longer word alone)."""
    lines: list[str] = []
    for word in words:
        if lines and len(lines[-1]) + 1 + len(word) <= CMD_WIDTH:
            lines[-1] += f" {word}"
        else:
            lines.append(word)
    return lines


def quick_dag(root: Path) -> Dag:
    """The DAG the commands are generated from: the quick scale with every declared stage
    (whatever the site settings leave out)."""
    return read_dag(root, (), {"stages": list(STAGE_NAMES)})


def _blocks(text: str, opener: re.Pattern[str], item: re.Pattern[str]) -> dict[str, list[str]]:
    """Stage -> the items (``item``'s group 1) of its block that a line matching ``opener``
    opens; a blank or comment line inside the block is skipped, any other line ends it. Every
    stage has an entry (empty when it has no such block)."""
    found: dict[str, list[str]] = {}
    stage, block = None, None
    for line in text.splitlines():
        head = _STAGE.match(line)
        if head:
            stage, block = head.group(1), None
            found[stage] = []
        elif stage is not None and opener.match(line):
            block = found[stage]
        elif block is not None and item.match(line):
            block.append(item.match(line).group(1))
        elif block is None or (line.strip() and not line.lstrip().startswith("#")):
            block = None

    return found


def read_commands(text: str) -> dict[str, list[str]]:
    """Stage -> its folded ``cmd`` lines as written in ``dvc.yaml``."""
    return {stage: lines for stage, lines in _blocks(text, _CMD, _MORE).items() if lines}


def read_deps(text: str) -> dict[str, list[str]]:
    """Stage -> deps list as written in ``dvc.yaml`` (stages without deps: empty)."""
    return _blocks(text, _DEPS, _ITEM)


def wanted_deps(root: Path, written: Mapping[str, list[str]]) -> dict[str, list[str]]:
    """Stage -> deps as they should be: generated code deps, then the kept non-code deps."""
    scanner = CodeScanner(root)
    return {
        stage: code_deps(root, stage, scanner)
        + [d for d in deps if not d.startswith(CODE_PREFIXES)]
        for stage, deps in written.items()
    }


def rewrite(
    text: str, deps: Mapping[str, list[str]], commands: Mapping[str, list[str]] | None = None
) -> str:
    """``dvc.yaml``'s text with each listed stage's deps replaced by ``deps[stage]`` and its
    ``cmd`` by ``commands[stage]``."""
    commands = commands or {}
    out: list[str] = []
    stage, skipping = None, None
    for line in text.splitlines(keepends=True):
        head = _STAGE.match(line)
        if head:
            stage, skipping = head.group(1), None
        elif skipping and (_ITEM if skipping == "deps" else _MORE).match(line):
            continue
        else:
            skipping = None
        if stage in deps and _DEPS.match(line):
            out.append(line)
            out.extend(f"      - {dep}\n" for dep in deps[stage])
            skipping = "deps"
            continue
        if stage in commands and _CMD.match(line):
            out.append(line)
            out.extend(f"      {part}\n" for part in commands[stage])
            skipping = "cmd"
            continue
        out.append(line)
    return "".join(out)


def command_differences(
    written: Mapping[str, list[str]], wanted: Mapping[str, list[str]]
) -> list[str]:
    """Human-readable lines: each stage whose ``cmd`` is not the generated one, and how."""
    lines = []
    for stage, parts in wanted.items():
        if stage not in written:
            lines.append(f"stage {stage}: not in dvc.yaml (add its stage, with a `cmd: >-`)")
        elif " ".join(written[stage]) != " ".join(parts):
            lines.append(f"stage {stage}: its cmd should read: {' '.join(parts)}")
    return lines


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
