"""The pre-flight checks every intermediate result, not only the datasets: whatever the audit
would reject (changed bytes, a missing, malformed or edited sidecar, a result made from
bytes that have since changed) is set aside before any job can read it, so its job remakes
it; a dry run only reports; a clean tree is hashed once, not on every call."""

from __future__ import annotations

import errno
import json
import os
import subprocess

import pandas as pd
import pytest

import galu.workflow.running.preflight
from galu.atomic import atomic_write_bytes
from galu.workflow.output import Run
from galu.workflow.provenance import sealed_sidecar, sha256_file
from galu.workflow.running.preflight import CHECKED_CACHE, preflight
from galu.workflow.running.preflight_findings import announce, blocked

TABLE = "results/s/table.csv"
FIGURE = "figures/s/plot.png"


@pytest.fixture
def tree(tmp_path, monkeypatch):
    """A table and a figure drawn from it, each with its sidecar, as a workflow makes them."""
    monkeypatch.chdir(tmp_path)
    Run("make").write_csv(pd.DataFrame({"x": [1, 2, 3]}), TABLE)
    (tmp_path / "figures/s").mkdir(parents=True)
    (tmp_path / FIGURE).write_bytes(b"png bytes")
    Run("plot", inputs=[TABLE]).stamp(FIGURE)
    return tmp_path


def rejected(root):
    return sorted(p.relative_to(root).as_posix() for p in root.rglob("*.rejected"))


def test_a_clean_tree_passes_and_is_hashed_once(tree, monkeypatch):
    assert preflight(tree) == []
    calls = []
    real = galu.workflow.running.preflight.sha256_file
    monkeypatch.setattr(
        galu.workflow.running.preflight, "sha256_file", lambda p: calls.append(p) or real(p)
    )
    assert preflight(tree) == [] and calls == []  # size, mtime, inode unchanged: no rehash


def test_a_truncated_result_is_set_aside_with_its_sidecar_and_a_dry_run_only_says_so(tree):
    (tree / TABLE).write_text("x\n1\n")  # truncated; the sidecar is untouched
    (finding,) = preflight(tree, dry_run=True)
    assert finding.path == TABLE and "changed after it was written" in finding.problem
    assert "a real run moves it to results/s/table.csv.rejected" in finding.action
    assert rejected(tree) == [] and (tree / TABLE).read_text() == "x\n1\n"
    (finding,) = preflight(tree)
    assert "its job remakes it in this run, or in the next one that needs it" in finding.action
    assert rejected(tree) == [f"{TABLE}.meta.json.rejected", f"{TABLE}.rejected"]
    assert not (tree / TABLE).exists()
    # The figure drawn from it is not judged on a table that is gone: its job reruns anyway.
    assert (tree / FIGURE).exists()


@pytest.mark.parametrize(
    ("sidecar", "problem"),
    [
        (None, "has no provenance sidecar"),
        (b"{not json", "its sidecar is unreadable or malformed"),
        (b"null", "its sidecar is unreadable or malformed"),
        (b'{"output": "a string"}', "its sidecar is unreadable or malformed"),
        (b'{"output": {"sha256": null}}', "has no output.sha256"),
        (b'["a", "list"]', "its sidecar is unreadable or malformed"),
    ],
)
def test_a_missing_or_malformed_sidecar_never_crashes_and_its_output_is_remade(
    tree, sidecar, problem
):
    side = tree / f"{FIGURE}.meta.json"
    if sidecar is None:
        side.unlink()
    else:
        side.write_bytes(sidecar)
    (finding,) = preflight(tree)
    assert finding.path == FIGURE and problem in finding.problem
    assert not (tree / FIGURE).exists() and f"{FIGURE}.rejected" in rejected(tree)


def test_an_edited_sidecar_fails_its_seal(tree):
    side = tree / f"{TABLE}.meta.json"
    record = json.loads(side.read_text())
    record["params"] = {"edited": True}
    side.write_text(json.dumps(record))  # valid JSON, but not what the job wrote
    (finding,) = preflight(tree)
    assert finding.path == TABLE and finding.problem.startswith("its sidecar ")


def test_a_result_resealed_by_hand_makes_its_consumers_stale(tree):
    """The table edited, its sidecar rewritten to match and its old mtime put back: the table
    itself passes, and Snakemake sees nothing newer, but the figure recorded other bytes for
    it, so the figure is remade."""
    stamp = (tree / TABLE).stat()
    (tree / TABLE).write_text("x\n9\n")
    record = json.loads((tree / f"{TABLE}.meta.json").read_text())
    record["output"]["sha256"] = galu.workflow.running.preflight.sha256_file(tree / TABLE)
    (tree / f"{TABLE}.meta.json").write_bytes(sealed_sidecar(record))
    os.utime(tree / TABLE, ns=(stamp.st_atime_ns, stamp.st_mtime_ns))
    (finding,) = preflight(tree)
    assert finding.path == FIGURE
    assert finding.problem.startswith(f"was made from {TABLE}, whose bytes have changed")
    assert (tree / TABLE).exists() and not (tree / FIGURE).exists()


def test_a_result_remade_by_its_job_is_no_problem_for_its_consumers(tree):
    """An incremental run remade the table (newer than the figure): Snakemake reruns the
    figure by itself, so the pre-flight says nothing."""
    Run("make").write_csv(pd.DataFrame({"x": [4, 5]}), TABLE)
    later = (tree / FIGURE).stat().st_mtime_ns + 10**9
    os.utime(tree / TABLE, ns=(later, later))
    assert preflight(tree) == [] and (tree / FIGURE).exists()


# The pre-flight never degrades silently: a result that fails and cannot be set aside (the
# set-aside name taken, a read-only folder), or cannot be read to be checked, blocks the run.


def sums(root, rels=(TABLE, f"{TABLE}.meta.json", FIGURE, f"{FIGURE}.meta.json")):
    return {r: sha256_file(root / r) for r in rels}


def damage(root):
    """A truncated table (sidecar untouched): what the audit would reject."""
    (root / TABLE).write_text("x\n1\n")
    return sums(root)


def test_a_set_aside_name_taken_by_a_folder_blocks_the_run_and_moves_nothing(tree):
    before = damage(tree)
    (tree / f"{TABLE}.rejected").mkdir()
    (finding,) = preflight(tree)
    assert finding.blocking and finding.path == TABLE
    assert finding.action == (
        f"could not move it to {TABLE}.rejected (the set-aside name is taken by a folder);"
        f" nothing started, so that no job reads it: remove or rename {TABLE}.rejected, which"
        " is in the way, then run again"
    )
    assert blocked([finding]) == (
        "nothing started: 1 file(s) fail their check and are still where a job would read"
        f" them ({TABLE}); do what each line above says, then run again"
    )
    assert sums(tree) == before  # nothing moved, nothing lost
    (tree / f"{TABLE}.rejected").rmdir()  # what it says; then the pre-flight sets it aside
    (finding,) = preflight(tree)
    assert not finding.blocking and blocked([finding]) is None
    assert rejected(tree) == [f"{TABLE}.meta.json.rejected", f"{TABLE}.rejected"]


def test_a_dry_run_says_that_a_real_run_would_stop(tree):
    before = damage(tree)
    (tree / f"{TABLE}.rejected").mkdir()
    (finding,) = preflight(tree, dry_run=True)
    assert not finding.blocking  # a dry run starts nothing anyway
    assert finding.action == (
        f"a real run cannot move it to {TABLE}.rejected ({TABLE}.rejected is a folder) and"
        f" stops before any job: remove or rename {TABLE}.rejected, which is in the way,"
        " then run again"
    )
    assert sums(tree) == before


@pytest.fixture
def read_only(tmp_path):
    """Make a folder read-only for the test: a read-only bind mount (root ignores modes),
    else its mode; skipped, saying why, where neither holds."""
    mounted = []

    def make(folder):
        if os.geteuid() != 0:
            folder.chmod(0o555)
            mounted.append(("chmod", folder))
            return
        for cmd in (
            ["mount", "--bind", str(folder), str(folder)],
            ["mount", "-o", "remount,ro,bind", str(folder)],
        ):
            proc = subprocess.run(cmd, capture_output=True, text=True)
            if proc.returncode != 0:
                subprocess.run(["umount", str(folder)], capture_output=True)
                pytest.skip(f"cannot make a read-only folder here ({proc.stderr.strip()})")
        mounted.append(("mount", folder))

    yield make
    for how, folder in mounted:
        if how == "mount":
            subprocess.run(["umount", str(folder)], check=False)
        else:
            folder.chmod(0o755)


def test_a_read_only_folder_blocks_the_run_and_says_to_make_it_writable(tree, read_only):
    before = damage(tree)
    read_only(tree / "results/s")
    dry = preflight(tree, dry_run=True)
    assert "(results/s/ is not writable) and stops before any job" in dry[0].action
    (finding,) = preflight(tree)
    assert finding.blocking and finding.path == TABLE
    assert finding.action.startswith(f"could not move it to {TABLE}.rejected (")
    assert finding.action.endswith(
        "nothing started, so that no job reads it: make results/s/ writable, then run again"
    )
    assert sums(tree) == before


def test_a_processed_array_that_cannot_be_set_aside_blocks_the_run(tree):
    npz = "data/processed/d.npz"
    atomic_write_bytes(tree / npz, b"array")
    Run("convert").stamp(npz)
    (tree / npz).write_bytes(b"arrax")  # a flip; its sidecar untouched
    (tree / f"{npz}.rejected").mkdir()
    before = sums(tree, (npz, f"{npz}.meta.json"))
    (finding,) = preflight(tree)
    assert finding.blocking and finding.path == npz
    assert finding.problem.startswith("changed after it was written")
    assert f"remove or rename {npz}.rejected, which is in the way" in finding.action
    assert sums(tree, (npz, f"{npz}.meta.json")) == before


def test_a_result_that_cannot_be_read_blocks_the_run(tree, monkeypatch):
    """An I/O error while hashing (a bad disk block, a file another user owns): the file is
    not known to be sound, so no job may read it."""
    real = galu.workflow.running.preflight.sha256_file

    def failing(path):
        if str(path).endswith(TABLE):
            raise OSError(errno.EIO, "Input/output error", str(path))
        return real(path)

    monkeypatch.setattr(galu.workflow.running.preflight, "sha256_file", failing)
    (finding,) = preflight(tree)
    assert finding.blocking and finding.path == TABLE
    assert finding.problem == "could not be read to check it (Input/output error)"
    assert finding.action == (
        "nothing started, so that no job reads it unchecked: make it readable, or move it out"
        " of the tree, then run again"
    )
    assert rejected(tree) == []


def test_a_sidecar_that_cannot_be_set_aside_does_not_block_once_its_output_is(tree):
    damage(tree)
    (tree / f"{TABLE}.meta.json.rejected").mkdir()
    (finding,) = preflight(tree)
    assert not finding.blocking and not (tree / TABLE).exists()  # nothing can read it now
    assert finding.action == (
        f"moved it to {TABLE}.rejected (its sidecar could not be moved: the set-aside name is"
        " taken by a folder); its job remakes it in this run, or in the next one that needs it"
    )


@pytest.mark.parametrize("cache", [b"[1, 2]", b'"text"', b"null", b"{not json"])
def test_a_damaged_pass_cache_is_no_cache(tree, cache):
    assert preflight(tree) == []
    (tree / CHECKED_CACHE).write_bytes(cache)
    damage(tree)
    (finding,) = preflight(tree)  # no crash: everything is hashed again
    assert finding.path == TABLE and "changed after it was written" in finding.problem


def test_a_pass_cache_that_cannot_be_written_is_said_not_fatal(tree):
    (tree / ".snakemake").write_text("a file where the folder belongs")
    (finding,) = preflight(tree)
    assert not finding.blocking and finding.path == CHECKED_CACHE.as_posix()
    assert finding.problem.startswith("could not record which files passed (")
    assert finding.action == "the next run hashes them again"
    assert blocked([finding]) is None


def test_an_integrity_log_that_cannot_be_written_is_said(tree):
    damage(tree)
    (tree / "logs/integrity.log").mkdir(parents=True)
    lines = []
    announce(preflight(tree), lines.append, tree)
    assert lines[0].startswith(f"galu: {TABLE}: changed after it was written")
    assert (
        lines[1] == "galu: could not append the lines above to logs/integrity.log (Is a directory)"
    )


def test_a_second_set_aside_keeps_the_first(tmp_path):
    """A file rejected twice (say, damaged again after its job remade it) keeps every
    rejected copy: x.csv.rejected, then x.csv.2.rejected, ..., none overwritten."""
    from galu.workflow.running.preflight_findings import _set_aside
    from galu.workflow.trust.audit import is_output

    path = tmp_path / "x.csv"
    names = []
    for version in ("first", "second", "third"):
        path.write_text(version)
        names.append(_set_aside(path).name)
    assert names == ["x.csv.rejected", "x.csv.2.rejected", "x.csv.3.rejected"]
    assert [(tmp_path / n).read_text() for n in names] == ["first", "second", "third"]
    assert not any(is_output(tmp_path / n) for n in names)  # the audit ignores them


def test_informational_commands_are_told_apart():
    from galu.workflow.settings.snakemake_args import informational

    for args in (["--list-rules"], ["-l"], ["--dag"], ["--summary"], ["--report=r.zip"],
                 ["--lint"], ["--unlock"], ["--cleanup-metadata", "x"]):  # fmt: skip
        assert informational(["snakemake", *args]), args
    for args in (["--cores", "2"], ["-n"], ["--configfile", "config/paper.yaml"], ["all"]):
        assert not informational(["snakemake", *args]), args


@pytest.mark.slow
def test_an_informational_command_moves_nothing(repo_copy):
    """`snakemake --list-rules` used to set a damaged table aside: under an informational
    command the pre-flight only reports, like a dry run."""
    from conftest import run, tool

    table = repo_copy / "results/normalization/coefficients.csv"
    table.parent.mkdir(parents=True)
    table.write_text("activation,alpha\nrelu,0.5\n")
    (repo_copy / "results/normalization/coefficients.csv.meta.json").write_text("{}")
    out = run([tool("snakemake"), "--list-rules"], repo_copy)
    assert "normalization_coefficients" in out.stdout
    assert table.is_file() and not list(repo_copy.rglob("*.rejected"))


def test_a_file_no_rule_makes_is_left_alone(tree):
    """A note of the user's under results/ has no sidecar like a killed job's output has
    none, but no rule makes it: the pre-flight leaves it (and a damaged output, which a rule
    does make, is still set aside)."""
    note = tree / "results/s/notes.txt"
    note.write_text("my notes\n")
    damage(tree)
    made = lambda path: path.startswith("results/s/table")  # noqa: E731
    (finding,) = preflight(tree, made=made)
    assert finding.path == TABLE
    assert note.read_text() == "my notes\n" and rejected(tree) == [
        f"{TABLE}.meta.json.rejected",
        f"{TABLE}.rejected",
    ]
    # without the rules to ask, every file is judged (the functions' own default)
    (tree / TABLE).write_text("x\n")
    assert {f.path for f in preflight(tree, dry_run=True)} >= {"results/s/notes.txt"}
