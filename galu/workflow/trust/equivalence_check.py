"""``galu equivalence --base <commit>``: show that a code change changes no output, and record it.

The evidence is mechanical (galu/workflow/equivalence.py says what it vouches for):

1. both commits are exported (``git archive``) into scratch folders, with this checkout's
   site settings (``config/local.yaml``: data mirrors, substitutes), and every script's code
   closure is computed in each; the scripts whose closure differs are the change;
2. in each folder the whole workflow runs from nothing at every checked scale (the tiny and
   the paper-smoke configurations by default, the head commit's files in both folders, so
   that only the code differs): no output is copied from anywhere;
3. every output whose sidecar names a changed script is compared byte for byte between the
   two folders (the sidecars themselves hold times and commits, and are left out).

A changed script whose every output is identical, and was made from identical inputs (the
hashes its sidecars record), has its closure recorded as the same as its base closure in
:data:`galu.workflow.equivalence.LEDGER`; a script with an output that differs, or that read
inputs which differ, gets no record, and the differing files are named (so a change that
alters one table still vouches for the scripts it left alone, never for those downstream of
the altered table). Its cost is two runs of each scale (minutes on 2 cores).
"""

from __future__ import annotations

import io
import json
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import NamedTuple

import yaml

from galu.workflow.closure import CodeScanner, changed_files, code_label
from galu.workflow.equivalence import LEDGER, Equivalence, Ledger
from galu.workflow.provenance import SIDECAR_SUFFIX, sha256_file
from galu.workflow.stages import PLOT_SCRIPT

# The configurations a check runs (overlays on config/config.yaml), by name.
# Every scale whose numbers are published or quoted: the README's first table is the quick
# run's, and a path only the quick grid takes (60 points; tiny has 6) is checked only there.
SCALES = {
    "tiny": ("config/tiny.yaml",),
    "paper-smoke": ("config/paper.yaml", "config/paper-smoke.yaml"),
    "quick": (),
}
DEFAULT_SCALES = ("tiny", "paper-smoke", "quick")
SITE_FILES = ("config/local.yaml",)
# Written into the scratch trees only, when the check is limited to some stages.
STAGES_OVERLAY = "config/equivalence-stages.yaml"
# Folders whose outputs are compared (each output's sidecar names the script that made it):
# data/raw for the download manifests (the archives have no sidecar of their own), without
# which no change of the download job's closure could be vouched for, and every dataset's
# array and every job made from it would be planned again.
COMPARED = ("results", "figures", "data/processed", "data/raw")
# The claims rule names the stages' caption-sentence modules, which its script imports by
# name (workflow/rules/report.smk): part of its unit, as a figures module is of a plot rule's.
CLAIMS_SCRIPT = "scripts/report_claims.py"


def named_imports() -> dict[str, tuple[str, ...]]:
    """Scripts besides the plot script whose rule names modules they import by name, with
    those names (the running galu's, in the order its rules give them)."""
    from galu.workflow.stages import sentence_modules

    return {CLAIMS_SCRIPT: sentence_modules()}


class EquivalenceError(Exception):
    """The check cannot start or could not run (a dirty tree, an unknown commit, a failed run)."""


@dataclass
class Change:
    """One script whose code closure differs between the two commits."""

    script: str
    base: str
    head: str
    changed: list[str]


@dataclass
class Outcome:
    """What the check found: the changes, the outputs compared and those that differ."""

    base: str
    head: str
    changes: list[Change] = field(default_factory=list)
    compared: dict[str, int] = field(default_factory=dict)  # script -> outputs compared
    different: list[str] = field(default_factory=list)
    unproven: set[str] = field(default_factory=set)  # scripts whose outputs are no evidence
    recorded: list[Equivalence] = field(default_factory=list)


def _git(root: Path, *args: str, binary: bool = False) -> str | bytes:
    proc = subprocess.run(["git", *args], cwd=root, capture_output=True, check=False)
    if proc.returncode != 0:
        raise EquivalenceError(f"git {' '.join(args)} failed: {proc.stderr.decode().strip()}")
    return proc.stdout if binary else proc.stdout.decode().strip()


def _clean_head(root: Path) -> str:
    """HEAD's commit; refuses tracked changes other than the ledger's (the evidence must name
    a commit that holds exactly the code it ran)."""
    # Names alone (no status columns to cut, which stripping the output would shift).
    changed = str(_git(root, "diff", "--name-only", "HEAD", "--")).splitlines()
    dirty = [path for path in changed if path != LEDGER]
    if dirty:
        raise EquivalenceError(
            f"the checkout has uncommitted changes ({', '.join(dirty[:3])}); commit them"
            " first, so that the evidence names the commit whose code it ran"
        )
    return str(_git(root, "rev-parse", "HEAD"))


def export(root: Path, commit: str, dest: Path, paths: Sequence[str] = ()) -> Path:
    """The tree of ``commit`` under ``dest`` (only ``paths`` of it, if given), with this
    checkout's site settings."""
    archive = _git(root, "archive", "--format=tar", commit, *paths, binary=True)
    dest.mkdir(parents=True)
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        tar.extractall(dest, filter="data")
    for rel in SITE_FILES:
        if (root / rel).is_file():
            (dest / rel).parent.mkdir(parents=True, exist_ok=True)  # a partial export too
            shutil.copy2(root / rel, dest / rel)
    return dest


def same_configuration(head: Path, base: Path, scales: Sequence[str]) -> None:
    """Give the base tree the head's configuration files, so that the two runs differ in
    their code only (a base whose schema rejects them fails its run, saying so)."""
    for rel in {"config/config.yaml", *(f for s in scales for f in SCALES[s])}:
        if (head / rel).is_file():
            shutil.copy2(head / rel, base / rel)


def script_closures(tree: Path) -> dict[str, tuple[str, dict[str, str]]]:
    """Every script's closure in ``tree``, and the plot script's with each stage's figures
    module (the plot rules' units): label (:func:`galu.workflow.closure.code_label`) ->
    (sha256, files). The tree's files are read, never imported."""
    scanner = CodeScanner(tree)
    units: list[tuple[Path, tuple[str, ...]]] = [
        (script, ()) for script in sorted((tree / "scripts").glob("*.py"))
    ]
    if (tree / PLOT_SCRIPT).is_file():
        units += [
            (tree / PLOT_SCRIPT, (f"galu.{module.parent.name}.figures",))
            for module in sorted((tree / "galu").glob("*/figures.py"))
        ]
    for rel, modules in named_imports().items():  # (a tree that lacks one: no such unit)
        if (tree / rel).is_file() and all(_module_path(tree, m).is_file() for m in modules):
            units.append((tree / rel, modules))
    found = {}
    for script, imports in units:
        closure = scanner.closure(script, imports)
        found[closure.label] = (closure.sha256, dict(closure.files))
    return found


def _module_path(tree: Path, module: str) -> Path:
    return tree / (module.replace(".", "/") + ".py")


def own_code_env(tree: Path) -> dict[str, str]:
    """The environment in which a process runs ``tree``'s own galu: its root first on the
    path, whatever ``PYTHONPATH`` or the installed package (an editable install of another
    checkout) would give."""
    return {**os.environ, "PYTHONPATH": str(tree), "DVC_NO_ANALYTICS": "1"}


def tree_closures(tree: Path) -> dict[str, tuple[str, dict[str, str]]]:
    """:func:`script_closures` as ``tree``'s own code computes them (what its jobs record:
    which modules a closure holds is that code's rule, not this process's); a tree without
    that code (a test's toy tree) gets this process's."""
    if not (tree / "galu/workflow/trust/equivalence_check.py").is_file():
        return script_closures(tree)
    code = (
        "import json, sys; from pathlib import Path;"
        " from galu.workflow.trust.equivalence_check import script_closures;"
        " json.dump(script_closures(Path(sys.argv[1])), sys.stdout)"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code, str(tree)],
        cwd=tree, env=own_code_env(tree), capture_output=True, text=True,
    )  # fmt: skip
    if proc.returncode != 0:
        raise EquivalenceError(f"the closures of {tree} could not be computed: {proc.stderr}")
    return {label: (sha, files) for label, (sha, files) in json.loads(proc.stdout).items()}


def changes_between(base: Path, head: Path) -> list[Change]:
    """Scripts of ``head`` whose closure differs from the same script's in ``base``, each
    closure as its own tree's code makes it."""
    before, after = tree_closures(base), tree_closures(head)
    return [
        Change(script, before[script][0], sha, changed_files(before[script][1], files))
        for script, (sha, files) in after.items()
        if script in before and before[script][0] != sha
    ]


def run_scale(
    tree: Path, scale: str, cores: int, log: Path, stages: Sequence[str] | None = None
) -> None:
    """The whole workflow at ``scale`` in ``tree``, from nothing (only ``stages``, if given:
    an overlay written beside the scale's)."""
    snakemake = Path(sys.executable).parent / "snakemake"
    overlays = list(SCALES[scale])
    if stages:
        (tree / STAGES_OVERLAY).write_text(yaml.safe_dump({"stages": list(stages)}))
        overlays.append(STAGES_OVERLAY)
    cmd = [str(snakemake), "--cores", str(cores)] + (
        ["--configfile", *overlays] if overlays else []
    )
    env = own_code_env(tree)  # its jobs import its own galu, not this checkout's
    with open(log, "ab") as out:
        proc = subprocess.run(cmd, cwd=tree, stdout=out, stderr=subprocess.STDOUT, env=env)
    if proc.returncode != 0:
        raise EquivalenceError(
            f"the {scale} run in {tree} failed (exit {proc.returncode}); see {log}"
        )


class Made(NamedTuple):
    """One output as its run made it: the script (unit label), the sha256 of its bytes, and
    the inputs its sidecar records, (path, sha256) sorted."""

    script: str
    sha256: str
    inputs: tuple[tuple[str, str], ...]


def outputs_of(tree: Path, scripts: set[str]) -> dict[str, Made]:
    """Output path -> how it was :class:`Made`, for every output one of ``scripts`` made."""
    found = {}
    for folder in COMPARED:
        for side in sorted((tree / folder).rglob(f"*{SIDECAR_SUFFIX}")):
            record = json.loads(side.read_text())
            code = record.get("code") or {}
            script = code_label(code) if code.get("script") else None
            if script in scripts:
                output = Path(str(side)[: -len(SIDECAR_SUFFIX)])
                inputs = tuple(sorted((i["path"], i["sha256"]) for i in record.get("inputs", [])))
                found[output.relative_to(tree).as_posix()] = Made(
                    script, sha256_file(output), inputs
                )
    return found


def compare(
    base: Path, head: Path, scripts: set[str]
) -> tuple[dict[str, int], list[str], set[str]]:
    """(outputs compared per script, the outputs that differ or exist on one side only, the
    scripts without evidence: one of their outputs differs, or was made from other inputs, so
    that its bytes say nothing of the code alone)."""
    before, after = outputs_of(base, scripts), outputs_of(head, scripts)
    counts: dict[str, int] = {}
    for made in {**before, **after}.values():
        counts[made.script] = counts.get(made.script, 0) + 1
    paths = set(before) | set(after)

    def sha(side: dict[str, Made], path: str) -> str | None:
        return side[path].sha256 if path in side else None

    different = sorted(p for p in paths if sha(before, p) != sha(after, p))
    unproven = {(before.get(p) or after[p]).script for p in paths if before.get(p) != after.get(p)}
    return counts, different, unproven


def check(
    root: str | Path,
    base: str,
    scales: Sequence[str] = DEFAULT_SCALES,
    cores: int = 2,
    say: Callable[[str], None] = print,
    workdir: str | Path | None = None,
    stages: Sequence[str] | None = None,
) -> Outcome:
    """Run the evidence for the change from ``base`` to HEAD and record it when it holds.

    ``stages`` limits the runs to those stages (config ``stages``): quicker, and a changed
    script of another stage then makes no output, so gets no record."""
    root = Path(root).resolve()
    unknown = [s for s in scales if s not in SCALES]
    if unknown or not scales:
        raise EquivalenceError(
            f"unknown scale(s) {', '.join(unknown) or '(none given)'}; choose from"
            f" {', '.join(SCALES)}"
        )
    from galu.workflow.planning.jobs import EXPERIMENT_STAGES

    wrong = [s for s in stages or () if s not in EXPERIMENT_STAGES]
    if wrong:
        raise EquivalenceError(
            f"unknown stage(s) {', '.join(wrong)}; choose from {', '.join(EXPERIMENT_STAGES)}"
        )
    ledger = Ledger.load(root)  # a broken ledger stops the check before any run
    head = _clean_head(root)
    base_commit = str(_git(root, "rev-parse", "--verify", f"{base}^{{commit}}"))
    outcome = Outcome(base_commit, head)
    with tempfile.TemporaryDirectory(prefix="galu-equivalence-", dir=workdir) as tmp:
        trees = {
            n: export(root, c, Path(tmp) / n) for n, c in (("base", base_commit), ("head", head))
        }
        same_configuration(trees["head"], trees["base"], scales)
        outcome.changes = changes_between(trees["base"], trees["head"])
        if not outcome.changes:
            say(f"galu equivalence: no script's code closure differs from {base_commit[:12]}")
            return outcome
        scripts = {c.script for c in outcome.changes}
        say(
            f"galu equivalence: {len(scripts)} script(s) whose code changed since"
            f" {base_commit[:12]}: {', '.join(sorted(scripts))}"
        )
        for scale in scales:
            for name, tree in trees.items():
                log = Path(tmp) / f"{name}-{scale}.log"
                say(
                    f"galu equivalence: running the {scale} scale at the {name} commit"
                    f" (its log: {log})…"
                )
                run_scale(tree, scale, cores, log, stages)
            counts, different, unproven = compare(trees["base"], trees["head"], scripts)
            for script, count in counts.items():
                outcome.compared[script] = outcome.compared.get(script, 0) + count
            outcome.different += [f"{scale}: {path}" for path in different]
            outcome.unproven |= unproven
            for name in trees:  # the next scale runs from nothing too
                for folder in ("results", "figures", "logs", ".snakemake"):
                    shutil.rmtree(trees[name] / folder, ignore_errors=True)
    outcome.recorded = [
        Equivalence(
            c.script,
            c.head,
            c.base,
            base_commit,
            head,
            tuple(f"{s} ({', '.join(stages)})" if stages else s for s in scales),
            outcome.compared[c.script],
            tuple(c.changed),
        )
        for c in outcome.changes
        # no output at these scales, or an output that differs: no evidence
        if outcome.compared.get(c.script) and c.script not in outcome.unproven
    ]
    if outcome.recorded:
        ledger.add(outcome.recorded)
        ledger.save(root)
    return outcome
