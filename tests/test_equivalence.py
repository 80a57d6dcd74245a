"""The equivalence ledger (galu/workflow/equivalence.py): canonical closures, evidence, bad
files."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from galu.workflow.equivalence import LEDGER, Equivalence, Ledger, LedgerError


def step(new: str, old: str, script: str = "scripts/scm_ode.py") -> Equivalence:
    return Equivalence(script, new, old, "b" * 40, "c" * 40, ("tiny",), 3, ("galu/x.py",))


def test_canonical_follows_the_chain_to_the_earliest_closure():
    ledger = Ledger([step("c3", "c2"), step("c2", "c1")])
    assert ledger.canonical("c3") == ledger.canonical("c2") == ledger.canonical("c1") == "c1"
    assert ledger.canonical("other") == "other"
    assert [s.closure for s in ledger.chain("c3")] == ["c3", "c2"]


def test_evidence_is_the_steps_between_two_closures_and_none_when_not_equivalent():
    ledger = Ledger([step("c3", "c2"), step("c2", "c1"), step("d2", "d1")])
    assert ledger.evidence("c1", "c1") == []
    assert [s.closure for s in ledger.evidence("c1", "c3")] == ["c3", "c2"]
    assert [s.closure for s in ledger.evidence("c2", "c3")] == ["c3"]
    assert ledger.evidence("c1", "d2") is None
    assert ledger.evidence("c1", "unrecorded") is None


def test_a_cycle_is_refused():
    with pytest.raises(LedgerError, match="cycle"):
        Ledger([step("a", "b"), step("b", "a")])


def test_save_and_load_round_trip(tmp_path: Path):
    c1, c2, c3 = ("1" * 64, "2" * 64, "3" * 64)
    ledger = Ledger([step(c2, c1), step(c3, c2, script="scripts/scm_sim.py")])
    (tmp_path / "workflow").mkdir()
    ledger.save(tmp_path)
    text = (tmp_path / LEDGER).read_text()
    assert text.startswith("# Code closures shown to make byte-identical outputs")
    assert Ledger.load(tmp_path).entries == ledger.entries


def test_no_ledger_is_an_empty_one(tmp_path: Path):
    assert Ledger.load(tmp_path).entries == {}


@pytest.mark.parametrize(
    "text, message",
    [
        ("equivalences: [\n", "not valid YAML"),
        ("equivalences: {}\n", "a list under `equivalences:`"),
        ("- a\n", "a list under `equivalences:`"),
        (
            "equivalences:\n  - script: s\n",
            "entry 1: an entry needs exactly the fields script, closure",
        ),
    ],
)
def test_a_broken_ledger_is_named_with_the_fix(tmp_path: Path, text: str, message: str):
    (tmp_path / "workflow").mkdir()
    (tmp_path / LEDGER).write_text(text)
    with pytest.raises(LedgerError, match=message):
        Ledger.load(tmp_path)


# `galu equivalence` (galu/workflow/trust/equivalence_check.py) on a toy repository, its runs faked:
# the orchestration (what changed, what is compared, what is recorded) without Snakemake.
# tests/test_equivalence_workflow.py runs the real workflow.


def _git(root: Path, *args: str) -> None:
    import subprocess

    env = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@t", "PATH": "/usr/bin:/bin"}  # fmt: skip
    subprocess.run(["git", *args], cwd=root, check=True, capture_output=True, env=env)


@pytest.fixture
def toy(tmp_path: Path, monkeypatch) -> Path:
    """Two scripts, each importing its own module; a fake run writes one output per script,
    whose bytes are what ``OUTPUT`` in that module says."""
    import galu.workflow.trust.equivalence_check as check_module

    root = tmp_path / "toy"
    files = {
        "galu/__init__.py": "",
        "galu/mod_a.py": "OUTPUT = 'a'\n\ndef _helper():\n    return 1\n",
        "galu/mod_b.py": "OUTPUT = 'b'\n",
        "scripts/a.py": "from galu.mod_a import OUTPUT\n",
        "scripts/b.py": "from galu.mod_b import OUTPUT\n",
        "config/config.yaml": "seed: 0\n",
        "config/tiny.yaml": "scale: quick\n",
        "workflow/code-equivalence.yaml": "equivalences: []\n",
    }
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    _git(root, "init", "-q")
    _git(root, "add", "-A")
    _git(root, "commit", "-qm", "base")

    def fake_run(tree: Path, scale: str, cores: int, log: Path, stages=None) -> None:
        import json
        import re

        for name in ("a", "b"):
            text = (tree / f"galu/mod_{name}.py").read_text()
            out = tree / f"results/{name}.csv"
            out.parent.mkdir(parents=True, exist_ok=True)
            out.write_text(re.search(r"OUTPUT = '(\w+)'", text).group(1))
            side = {"code": {"script": f"scripts/{name}.py"}}
            (tree / f"results/{name}.csv.meta.json").write_text(json.dumps(side))

    monkeypatch.setattr(check_module, "run_scale", fake_run)
    return root


def _commit_edit(root: Path, rel: str, old: str, new: str) -> None:
    path = root / rel
    path.write_text(path.read_text().replace(old, new))
    _git(root, "commit", "-qam", "edit")


def test_a_neutral_change_is_recorded_for_the_changed_script_only(toy: Path):
    from galu.workflow.trust.equivalence_check import check

    _commit_edit(toy, "galu/mod_a.py", "_helper", "_renamed")
    outcome = check(toy, "HEAD~1", ["tiny"], say=lambda _: None)
    assert [c.script for c in outcome.changes] == ["scripts/a.py"]
    assert outcome.different == [] and outcome.compared == {"scripts/a.py": 1}
    (step,) = outcome.recorded
    assert step.changed == ("galu/mod_a.py",) and step.outputs == 1
    assert step.baseline == outcome.base and step.checked == outcome.head
    ledger = Ledger.load(toy)
    assert ledger.canonical(step.closure) == step.same_as
    assert "1 output(s) byte-identical at tiny" in step.evidence()


def test_a_change_of_an_output_records_nothing_and_names_it(toy: Path):
    from galu.workflow.trust.equivalence_check import check

    _commit_edit(toy, "galu/mod_a.py", "OUTPUT = 'a'", "OUTPUT = 'c'")
    outcome = check(toy, "HEAD~1", ["tiny"], say=lambda _: None)
    assert outcome.different == ["tiny: results/a.csv"] and outcome.recorded == []
    assert Ledger.load(toy).entries == {}


def test_a_script_left_unchanged_in_output_is_recorded_beside_one_that_changed(toy, monkeypatch):
    """One commit changes both modules: a's output changes, b's does not; b is recorded."""
    from galu.workflow.trust.equivalence_check import check

    (toy / "galu/mod_a.py").write_text("OUTPUT = 'c'\n")
    (toy / "galu/mod_b.py").write_text("OUTPUT = 'b'\nX = 1\n")
    _git(toy, "commit", "-qam", "both")
    outcome = check(toy, "HEAD~1", ["tiny"], say=lambda _: None)
    assert outcome.different == ["tiny: results/a.csv"]
    assert outcome.unproven == {"scripts/a.py"}
    assert [s.script for s in outcome.recorded] == ["scripts/b.py"]


def test_an_identical_output_made_from_other_inputs_is_no_evidence(toy, monkeypatch):
    """b's bytes do not change, but it read a's output, which did: b gets no record."""
    import json

    import galu.workflow.trust.equivalence_check as check_module

    faked = check_module.run_scale

    def reading_a(tree: Path, *args, **kwargs) -> None:
        faked(tree, *args, **kwargs)
        side = tree / "results/b.csv.meta.json"
        a_bytes = (tree / "results/a.csv").read_text()
        record = {**json.loads(side.read_text()), "inputs": [{"path": "results/a.csv",
                                                             "sha256": a_bytes}]}  # fmt: skip
        side.write_text(json.dumps(record))

    monkeypatch.setattr(check_module, "run_scale", reading_a)
    (toy / "galu/mod_a.py").write_text("OUTPUT = 'c'\n")
    (toy / "galu/mod_b.py").write_text("OUTPUT = 'b'\nX = 1\n")
    _git(toy, "commit", "-qam", "both")
    outcome = check_module.check(toy, "HEAD~1", ["tiny"], say=lambda _: None)
    assert outcome.different == ["tiny: results/a.csv"]
    assert outcome.unproven == {"scripts/a.py", "scripts/b.py"} and outcome.recorded == []


def test_a_changed_script_without_outputs_at_the_scales_run_gets_no_record(toy: Path):
    from galu.workflow.trust.equivalence_check import check

    (toy / "scripts/c.py").write_text("from galu.mod_b import OUTPUT\n")  # never run
    _git(toy, "add", "-A")
    _git(toy, "commit", "-qm", "c")
    _commit_edit(toy, "galu/mod_b.py", "OUTPUT = 'b'", "OUTPUT = 'b'\nX = 1")
    outcome = check(toy, "HEAD~1", ["tiny"], say=lambda _: None)
    assert {c.script for c in outcome.changes} == {"scripts/b.py", "scripts/c.py"}
    assert [s.script for s in outcome.recorded] == ["scripts/b.py"]


def test_a_download_manifest_and_a_unit_with_named_imports_are_compared(toy, monkeypatch):
    """The download job's manifest lies under data/raw, and the claims rule names the modules
    its script imports by name: without either, no change of every job's closure (a
    provenance module, say) could be vouched for, and the datasets would be fetched again."""
    import json

    import galu.workflow.trust.equivalence_check as check_module

    faked = check_module.run_scale

    def with_both(tree: Path, *args, **kwargs) -> None:
        faked(tree, *args, **kwargs)
        manifest = tree / "data/raw/toy/sources.json"
        manifest.parent.mkdir(parents=True)
        manifest.write_text('{"files": []}')
        side = {"code": {"script": "scripts/b.py"}}
        (tree / "data/raw/toy/sources.json.meta.json").write_text(json.dumps(side))
        side = {"code": {"script": "scripts/a.py", "imports": ["galu.mod_b"]}}
        (tree / "results/a_b.csv").write_text("ab")
        (tree / "results/a_b.csv.meta.json").write_text(json.dumps(side))

    monkeypatch.setattr(check_module, "run_scale", with_both)
    monkeypatch.setattr(check_module, "named_imports", lambda: {"scripts/a.py": ("galu.mod_b",)})
    _commit_edit(toy, "galu/mod_b.py", "OUTPUT = 'b'", "OUTPUT = 'b'\nX = 1")
    outcome = check_module.check(toy, "HEAD~1", ["tiny"], say=lambda _: None)
    assert outcome.compared == {"scripts/b.py": 2, "scripts/a.py (galu.mod_b)": 1}
    assert {s.script for s in outcome.recorded} == {"scripts/b.py", "scripts/a.py (galu.mod_b)"}


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"scales": ["huge"]}, "unknown scale"),
        ({"stages": ["physics"]}, "unknown stage"),
        ({"base": "no-such-commit"}, "git rev-parse"),
    ],
)
def test_bad_requests_are_refused_before_any_run(toy: Path, kwargs, message):
    from galu.workflow.trust.equivalence_check import EquivalenceError, check

    args = {"base": "HEAD", "scales": ["tiny"], **kwargs}
    with pytest.raises(EquivalenceError, match=message):
        check(toy, say=lambda _: None, **args)


def test_uncommitted_changes_are_refused(toy: Path):
    from galu.workflow.trust.equivalence_check import EquivalenceError, check

    (toy / "galu/mod_a.py").write_text("OUTPUT = 'z'\n")
    with pytest.raises(EquivalenceError, match="uncommitted changes.*commit them first"):
        check(toy, "HEAD", ["tiny"], say=lambda _: None)


def test_the_command_says_what_it_recorded_or_what_differs(toy: Path, capsys):
    from galu.workflow.cli import main

    args = ["equivalence", "--base", "HEAD~1", "--scale", "tiny", "--root", str(toy)]
    _commit_edit(toy, "galu/mod_a.py", "OUTPUT = 'a'", "OUTPUT = 'c'")
    assert main(args) == 1
    out = capsys.readouterr().out
    assert "1 output(s) differ: no evidence for scripts/a.py (an output differs" in out
    assert "tiny: results/a.csv" in out
    _commit_edit(toy, "galu/mod_b.py", "OUTPUT = 'b'", "OUTPUT = 'b'  # a comment only")
    assert main([*args[:2], "HEAD~1", *args[3:]]) == 0
    assert "no script's code closure differs" in capsys.readouterr().out
    _commit_edit(toy, "galu/mod_b.py", "OUTPUT = 'b'", "OUTPUT = 'b'\n_UNUSED = 1")
    assert main(args) == 0
    out = capsys.readouterr().out
    assert "recorded scripts/b.py: 1 output(s) byte-identical at tiny" in out
    assert "commit workflow/code-equivalence.yaml" in out


def test_each_tree_runs_its_own_code_whatever_pythonpath_or_the_install_says(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    """A job of an exported tree (a script run from elsewhere, as Snakemake runs it) imports
    the tree's galu, not this checkout's (the editable install) nor one on PYTHONPATH; and
    the tree's closures are those its own scanner makes."""
    import shutil
    import subprocess
    import sys

    from galu.workflow.trust.equivalence_check import own_code_env, tree_closures

    from conftest import REPO

    tree = tmp_path / "tree"
    for folder in ("galu", "scripts"):
        shutil.copytree(REPO / folder, tree / folder, ignore=shutil.ignore_patterns("__pycache__"))
    # The tree's scanner puts its whole machinery in every closure (the rule before RESULT_CODE).
    closure = tree / "galu/workflow/closure.py"
    closure.write_text(
        closure.read_text().replace('MACHINERY = "galu/workflow/"', 'MACHINERY = "-"')
    )
    elsewhere = tmp_path / "elsewhere"
    (elsewhere / "galu").mkdir(parents=True)
    (elsewhere / "galu/__init__.py").write_text("raise ImportError('the wrong galu')\n")
    monkeypatch.setenv("PYTHONPATH", str(elsewhere))
    job = tmp_path / "job.py"
    job.write_text("import galu, sys; sys.stdout.write(galu.__file__)")
    proc = subprocess.run(
        [sys.executable, str(job)], cwd=tmp_path, env=own_code_env(tree), capture_output=True,
        text=True, check=True,
    )  # fmt: skip
    assert proc.stdout == str(tree / "galu/__init__.py")
    files = tree_closures(tree)["scripts/scm_ode.py"][1]
    assert "galu/workflow/provenance.py" in files  # the tree's rule, not this process's


GOOD = {
    "script": "scripts/scm_ode.py", "closure": "a" * 64, "same_as": "b" * 64,
    "baseline": "c" * 40, "checked": "d" * 40, "scales": ["tiny"], "outputs": 3,
    "changed": ["galu/scm/odes.py"],
}  # fmt: skip


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("equivalences: [\n", "is not valid YAML at line 2"),
        ("", "must hold a list under `equivalences:`"),
        ("outputs: many\n", "must hold a list under `equivalences:`"),
        ("equivalences: 5\n", "must hold a list under `equivalences:`"),
        (b"\x89PNG\r\n\x1a\n\x00\xff\xfe", "is not valid YAML"),
        ({**GOOD, "baseline": 0}, "entry 1: baseline is 0, not a full commit hash"),
        ({**GOOD, "checked": "abc123"}, "entry 1: checked is 'abc123', not a full commit hash"),
        ({**GOOD, "outputs": "many"}, "entry 1: outputs is 'many', not a count of outputs"),
        ({**GOOD, "scales": "tiny"}, "entry 1: scales is 'tiny', not a list of scale names"),
        ({**GOOD, "closure": "b" * 64}, "a cycle through closure"),
        ({"script": "scripts/x.py"}, "entry 1: an entry needs exactly the fields"),
    ],
)
def test_a_malformed_ledger_is_named_with_its_fix_by_every_reader(tmp_path, text, message):
    """Every command that reads the ledger (the workflow, audit, explain, resume, publish)
    goes through Ledger.load: one error naming the file, what is wrong and the fix."""
    import yaml

    from galu.workflow.cli import main

    ledger = tmp_path / LEDGER
    ledger.parent.mkdir(parents=True)
    if isinstance(text, dict):
        text = yaml.safe_dump({"equivalences": [text]})
    ledger.write_bytes(text if isinstance(text, bytes) else text.encode())
    with pytest.raises(LedgerError, match=re.escape(message)) as raised:
        Ledger.load(tmp_path)
    assert "git checkout -- workflow/code-equivalence.yaml" in str(raised.value)
    assert main(["audit", "--root", str(tmp_path)]) == 2


def test_the_ledger_changed_first_is_no_uncommitted_change_and_other_files_are_named(toy: Path):
    """The ledger is the one file that may differ (the evidence is being recorded in it),
    even as the first changed file; another is named whole, not cut by a column."""
    from galu.workflow.trust.equivalence_check import EquivalenceError, _clean_head

    (toy / "workflow/code-equivalence.yaml").write_text("equivalences: []\n# note\n")
    assert len(_clean_head(toy)) == 40
    (toy / "galu/mod_b.py").write_text("OUTPUT = 'x'\n")
    with pytest.raises(EquivalenceError, match=r"changes \(galu/mod_b\.py\)"):
        _clean_head(toy)


def test_an_entry_whose_commits_are_not_in_the_history_is_not_trusted(toy: Path):
    """The ledger is verified before it is trusted: a hand-written entry naming commits that
    do not exist, or are not ancestors of HEAD, vouches for nothing (kept in the file, left
    out of every chain); so is every entry of a copy without git history."""
    import shutil
    import subprocess

    head = subprocess.run(
        ["git", "rev-parse", "HEAD"], cwd=toy, capture_output=True, text=True, check=True
    ).stdout.strip()
    real = Equivalence("scripts/a.py", "1" * 64, "0" * 64, head, head, ("tiny",), 1, ())
    forged = Equivalence("scripts/b.py", "3" * 64, "2" * 64, "e" * 40, head, ("tiny",), 1, ())
    Ledger([real, forged]).save(toy)
    ledger = Ledger.load(toy)
    assert set(ledger.entries) == {"1" * 64, "3" * 64}  # both kept in the file
    assert list(ledger.untrusted) == ["3" * 64]
    assert (
        "eeeeeeeeeeee of its evidence are not in this checkout's history"
        in ledger.untrusted["3" * 64]
    )
    assert ledger.canonical("1" * 64) == "0" * 64 and ledger.canonical("3" * 64) == "3" * 64
    assert ledger.evidence("2" * 64, "3" * 64) is None
    copy = toy.parent / "no-git"
    shutil.copytree(toy, copy, ignore=shutil.ignore_patterns(".git"))
    assert set(Ledger.load(copy).untrusted) == {"1" * 64, "3" * 64}


def test_an_entry_is_checked_against_the_closures_its_commits_really_have(toy, monkeypatch):
    """Recomputed, not read: an entry recorded by `galu equivalence` holds; one whose closure
    is not the script's at its commit (written by hand) is named, saying which side."""
    from galu.workflow.trust.equivalence_check import check
    from galu.workflow.trust.ledger_verify import cache_folder, recomputed_problems

    monkeypatch.setenv("XDG_CACHE_HOME", str(toy.parent / "cache"))
    _commit_edit(toy, "galu/mod_b.py", "OUTPUT = 'b'", "OUTPUT = 'b'\nX = 1")
    (real,) = check(toy, "HEAD~1", ["tiny"], say=lambda _: None).recorded
    assert recomputed_problems(toy, [real]) == {}
    assert len(list(cache_folder().glob("*.json"))) == 2  # one per commit, kept
    forged = Equivalence(real.script, "9" * 64, real.same_as, real.baseline, real.checked,
                         real.scales, real.outputs, real.changed)  # fmt: skip
    (why,) = recomputed_problems(toy, [forged]).values()
    assert why.startswith("scripts/b.py: recomputed, its closure at") and "not 999999999999" in why


def test_compact_joins_two_recorded_changes_into_one_entry_its_commits_confirm(toy, monkeypatch,
                                                                               capsys):  # fmt: skip
    from galu.workflow.cli import main
    from galu.workflow.trust.equivalence_check import check
    from galu.workflow.trust.ledger_verify import recomputed_problems

    monkeypatch.setenv("XDG_CACHE_HOME", str(toy.parent / "cache"))
    made = []
    for n in (1, 2):
        _commit_edit(toy, "galu/mod_b.py", "OUTPUT = 'b'", f"OUTPUT = 'b'\nX{n} = 1")
        made += check(toy, "HEAD~1", ["tiny"], say=lambda _: None).recorded
        _git(toy, "commit", "-qam", "ledger")
    recorded = made[-1]
    before = Ledger.load(toy)
    assert len(before.entries) == 2
    assert main(["equivalence", "--compact", "--root", str(toy)]) == 0
    assert "holds 1 entries (was 2)" in capsys.readouterr().out
    (whole,) = Ledger.load(toy).entries.values()
    assert whole.steps == 2 and whole.closure == recorded.closure
    assert whole.same_as == before.canonical(recorded.closure)
    assert whole.changed == ("galu/mod_b.py",)
    assert recomputed_problems(toy, [whole]) == {}
    # a published run made with the first change's code keeps that closure's entry
    _git(toy, "checkout", "-q", "--", LEDGER)
    (toy / "published/results").mkdir(parents=True)
    side = {"code": {"script": "scripts/b.py", "sha256": made[0].closure}}
    (toy / "published/results/b.csv.meta.json").write_text(json.dumps(side))
    assert main(["equivalence", "--compact", "--root", str(toy)]) == 0
    assert len(Ledger.load(toy).entries) == 2


@pytest.mark.parametrize(
    "args, message",
    [
        ([], "give either --base REV"),
        (["--base", "HEAD", "--compact"], "give either --base REV"),
        (["--base", "HEAD", "--keep", "HEAD"], "--keep goes with --compact"),
        (["--compact", "--keep", "nosuchrev"], "--keep nosuchrev: no such commit"),
    ],
)
def test_compact_and_base_requests_are_checked(toy, capsys, args, message):
    from galu.workflow.cli import main

    assert main(["equivalence", *args, "--root", str(toy)]) == 2
    assert message in capsys.readouterr().err


def test_a_ledger_with_a_check_follows_only_the_entries_that_pass_it():
    """The workflow's ledger checks each entry before a chain first goes through it (its
    closures recomputed from its commits), once per entry; one that fails ends the chain."""
    asked = []

    def verify(entry):
        asked.append(entry.closure)
        return "recomputed, not these closures" if entry.closure == "c2" else None

    ledger = Ledger([step("c3", "c2"), step("c2", "c1"), step("d2", "d1")], verify=verify)
    assert ledger.canonical("c3") == "c2"  # c3 -> c2 holds; c2 -> c1 does not
    assert ledger.untrusted == {"c2": "recomputed, not these closures"}
    assert ledger.canonical("c2") == "c2" and ledger.canonical("d2") == "d1"
    assert sorted(asked) == ["c2", "c3", "d2"]  # each once, as a chain first needed it
