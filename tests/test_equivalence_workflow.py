"""Number-neutral code changes end to end (galu/workflow/equivalence.py,
galu/workflow/trust/equivalence_check.py).

A copy of the repository runs the SCM stage at the tiny scale (one stage: every stage's
outputs take the same path through the ledger, and that an edit reaches exactly the jobs whose
closure holds the file, in every stage, is tests/test_code_reruns.py's). Then:

- a number-neutral edit (a private helper of galu/plotting.py renamed, which every figure
  of every stage imports) first makes the stage's figures stale in the plan and in the audit;
  after `galu equivalence --base HEAD~1` has run both commits (that stage) and found
  every output byte-identical, `snakemake -n` plans nothing and `galu audit --strict`
  passes, naming the evidence;
- a number-changing edit (a factor in an SCM equation, galu/scm/odes.py) makes stale
  exactly the outputs whose code reaches that file, and what was made from them, in the
  plan and in the audit, and `--strict` fails naming the file.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from galu.workflow.equivalence import LEDGER, Ledger
from galu.workflow.provenance import SIDECAR_SUFFIX
from galu.workflow.trust.audit import STALE, STALE_INPUT, audit_tree

from conftest import run, site_configured_repo, tool

pytestmark = pytest.mark.slow

TINY = ["--configfile", "config/tiny.yaml"]
STAGES = {"stages": ["scm"]}
STAGE_ARGS = [arg for stage in STAGES["stages"] for arg in ("--stage", stage)]
FOLDERS = ["results", "figures"]


def smk(root: Path, *args: str) -> str:
    return run([tool("snakemake"), *args, *TINY], root).stdout


def planned_outputs(root: Path) -> set[str]:
    """Outputs `snakemake -n` would make (empty when it plans nothing)."""
    out = smk(root, "-n")
    if "Nothing to be done" in out:
        return set()
    lines = re.findall(r"^\s+output: (.+)$", out, flags=re.M)
    found = {p.strip() for line in lines for p in line.split(",")}
    return {p for p in found if p and not p.endswith(SIDECAR_SUFFIX)}


def galu(root: Path, *args: str, check: bool = True):
    return run([tool("galu"), *args], root, check=check)


def commit(root: Path, message: str) -> None:
    run(["git", "commit", "-qam", message], root)


def edit(root: Path, rel: str, old: str, new: str) -> None:
    path = root / rel
    text = path.read_text()
    assert old in text, f"{old!r} not in {rel}"
    path.write_text(text.replace(old, new))


def stale_by_code(root: Path) -> set[str]:
    """Outputs the audit finds made by other code than the tree's (not through an input)."""
    return {
        f.path
        for f in audit_tree(root, FOLDERS)
        if f.problem.startswith(STALE) and not f.problem.startswith(STALE_INPUT)
    }


def made_with(root: Path, module: str) -> set[str]:
    """Outputs whose recorded code closure contains ``module``."""
    found = set()
    for folder in FOLDERS:
        for side in (root / folder).rglob(f"*{SIDECAR_SUFFIX}"):
            files = (json.loads(side.read_text()).get("code") or {}).get("files", {})
            if module in files:
                found.add(str(side.relative_to(root))[: -len(SIDECAR_SUFFIX)])
    return found


@pytest.fixture(scope="module")
def tiny_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = site_configured_repo(tmp_path_factory.mktemp("equivalence") / "repo", STAGES)
    smk(root, "--cores", "2")
    return root


def test_a_neutral_edit_recorded_by_its_evidence_reruns_nothing(tiny_run: Path):
    root = tiny_run
    assert planned_outputs(root) == set()
    figures = made_with(root, "galu/plotting.py")
    assert figures and all(p.startswith("figures/") for p in figures)
    edit(root, "galu/plotting.py", "_first_artist", "_handle_artist")
    commit(root, "rename a private helper")
    assert planned_outputs(root) >= figures  # code changed: without evidence, they rerun
    assert stale_by_code(root) == figures

    kept = Ledger.load(root).entries  # the repository's own evidence
    said = galu(root, "equivalence", "--base", "HEAD~1", "--scale", "tiny", *STAGE_ARGS).stdout
    entries = Ledger.load(root).entries
    assert all(entries[sha] == step for sha, step in kept.items())
    recorded = [step for sha, step in entries.items() if sha not in kept]
    assert {e.script for e in recorded} == {"scripts/plot.py (galu.scm.figures)"}
    assert all(e.changed == ("galu/plotting.py",) and e.outputs > 0 for e in recorded)
    assert "recorded scripts/plot.py (galu.scm.figures)" in said and LEDGER in said
    commit(root, "record the evidence")

    assert planned_outputs(root) == set()
    audited = galu(root, "audit", "--strict", "--verbose", "--folders", *FOLDERS)
    assert "number-neutral" in audited.stdout and "byte-identical at tiny" in audited.stdout


def test_a_machinery_edit_replans_nothing_and_the_strict_audit_passes(tiny_run: Path):
    """The machinery is in no job's closure (galu.workflow.closure, RESULT_CODE): a function
    added to the provenance records, the audit and the pre-flight reruns nothing, and the
    outputs stay current without any evidence."""
    root = tiny_run
    assert not made_with(root, "galu/workflow/provenance.py")
    for rel in (
        "galu/workflow/provenance.py",
        "galu/workflow/trust/audit.py",
        "galu/workflow/running/preflight.py",
    ):
        path = root / rel
        path.write_text(path.read_text() + "\n\ndef _added_for_the_test():\n    return 1\n")
    commit(root, "machinery edits")
    assert planned_outputs(root) == set()
    assert galu(root, "audit", "--strict", "--folders", *FOLDERS).returncode == 0


def test_a_number_changing_edit_makes_exactly_its_outputs_stale(tiny_run: Path):
    root = tiny_run
    depends = made_with(root, "galu/scm/odes.py")
    made = made_with(root, "galu/workflow/output.py")  # every output of the run
    assert depends and depends < made  # the fixed points and schedules need no ODE file
    edit(root, "galu/scm/odes.py", "dR = self.eta * drive", "dR = 1.01 * self.eta * drive")
    commit(root, "change a factor of the SCM equations")

    findings = audit_tree(root, FOLDERS)
    direct = stale_by_code(root)
    assert direct == depends
    assert all("galu/scm/odes.py" in f.problem for f in findings if f.path in direct)
    downstream = {f.path for f in findings if f.problem.startswith(STALE_INPUT)}
    # (The report is no job: the workflow rebuilds it after every successful run.)
    assert planned_outputs(root) == (direct | downstream) - {"results/report.zip"}
    strict = galu(root, "audit", "--strict", "--folders", *FOLDERS, check=False)
    assert strict.returncode == 1 and "galu/scm/odes.py" in strict.stdout
    # (`galu equivalence` refusing such a change: tests/test_equivalence.py, on fake runs.)
