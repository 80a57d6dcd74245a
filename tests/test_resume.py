"""Continuing a published run (galu/workflow/publishing/resume.py,
galu/workflow/running/snakemake_metadata.py)."""

from __future__ import annotations

import json
import os
import re
import shutil
import time
from pathlib import Path

import pandas as pd
import pytest
import torch

from galu.checkpoints import FOLDER as CHECKPOINTS
from galu.checkpoints import Checkpoint
from galu.workflow.cli import main
from galu.workflow.closure import CodeScanner
from galu.workflow.equivalence import Equivalence, Ledger
from galu.workflow.output import Run
from galu.workflow.provenance import sidecar_path
from galu.workflow.publication_folders import STATE
from galu.workflow.publishing.publish import publish
from galu.workflow.publishing.resume import ResumeError, resume
from galu.workflow.running.snakemake_metadata import metadata_record_path, read_metadata

from conftest import run, tool

SOURCE = "results/paper-cpu/scm/stability.csv"
PART = "results/paper-cpu/scm/runs/part0.csv"  # a per-job table the source is stacked from
CLAIMS = "results/paper-cpu/claims.csv"
BENCHMARK = "logs/paper-cpu/benchmarks/scm/stability.tsv"
CHECKPOINT = f"{CHECKPOINTS.as_posix()}/results/paper-cpu/scm/runs/relu_k3m2_sim.csv.pt"


def _record(rule: str) -> dict:
    """A stand-in for Snakemake's metadata record of an output."""
    return {"rule": rule, "params": [rule], "incomplete": False}


def _run_with_records() -> None:
    """A finished paper-cpu run: a data array, a per-job table, the table stacked from it,
    the verdict; Snakemake's records of each output and a benchmark table."""
    Path("data/processed").mkdir(parents=True)
    Path("data/processed/a.npz").write_bytes(b"array")
    Run("scm_ode", inputs=["data/processed/a.npz"]).write_csv(pd.DataFrame({"r": [1]}), PART)
    Run("scm_stability", inputs=[PART]).write_csv(pd.DataFrame({"eta": [0.5, 2.0]}), SOURCE)
    Run("claims", inputs=[SOURCE]).write_csv(pd.DataFrame({"verdict": ["pass"]}), CLAIMS)
    for path, rule in ((PART, "scm_ode"), (SOURCE, "scm_stability"), (CLAIMS, "claims")):
        for target in (path, f"{path}.meta.json"):
            record = metadata_record_path(target)
            record.parent.mkdir(parents=True, exist_ok=True)
            record.write_text(json.dumps(_record(rule)))
    Path(BENCHMARK).parent.mkdir(parents=True)
    Path(BENCHMARK).write_text("s\tmax_rss\n1.5\t100\n")


def _elsewhere(tmp_path: Path, monkeypatch) -> Path:
    """Publish the run, then move to a fresh checkout holding only the publication."""
    publish("paper-cpu", configfiles=[], machine="m")
    fresh = tmp_path / "fresh"
    fresh.mkdir()
    shutil.copytree("published", fresh / "published")
    monkeypatch.chdir(fresh)
    return fresh


def test_metadata_record_path_is_where_snakemake_keeps_its_record(tmp_path):
    # A target long enough that its base64 name is cut into folder names.
    long_name = "results/" + "".join(f"{i:03d}" for i in range(70)) + ".txt"
    (tmp_path / "Snakefile").write_text(
        "rule all:\n"
        f"    input: 'short.txt', '{long_name}'\n"
        "rule make:\n"
        "    output: '{name}.txt'\n"
        "    shell: 'echo made > {output}'\n"
    )
    run([tool("snakemake"), "--cores", "1", "--quiet"], tmp_path)
    metadata = tmp_path / ".snakemake/metadata"
    records = read_metadata(["short.txt", long_name, "absent.txt"], metadata)
    assert records.keys() == {"short.txt", long_name}
    assert {r["rule"] for r in records.values()} == {"make"}
    assert len(metadata_record_path(long_name, metadata).parts) > len(metadata.parts) + 1


def test_a_published_run_is_put_back_with_its_records_and_benchmarks(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    _run_with_records()
    _elsewhere(tmp_path, monkeypatch)
    state = json.loads(Path(f"published/paper-cpu/{STATE}").read_text())
    assert len(state["snakemake_metadata"]) == 6  # three files and their sidecars
    done = resume("paper-cpu")
    assert sorted(done.restored) == sorted([CLAIMS, PART, SOURCE])
    assert done.present == [] and done.records == 6 and done.benchmarks == 1
    assert done.missing_data == ["data/processed/a.npz"]
    for path in (CLAIMS, PART, SOURCE):
        published = Path("published/paper-cpu/results") / Path(path).relative_to(
            "results/paper-cpu"
        )
        assert Path(path).read_bytes() == published.read_bytes()
        assert sidecar_path(path).read_bytes() == sidecar_path(published).read_bytes()
    assert read_metadata([SOURCE])[SOURCE] == _record("scm_stability")
    assert Path(BENCHMARK).read_text() == "s\tmax_rss\n1.5\t100\n"
    # One modification time for all: Snakemake's mtime trigger finds no output older than
    # the input it was made from.
    times = {os.stat(p).st_mtime for p in (CLAIMS, PART, SOURCE)}
    assert len(times) == 1
    # Resuming again changes nothing and writes no record over an existing one.
    again = resume("paper-cpu")
    assert again.restored == [] and len(again.present) == 3 and again.records == 0


def test_a_dataset_prepared_between_two_resumes_reruns_nothing(tmp_path, monkeypatch):
    """The order the resume's own note asks for (resume, prepare the missing dataset, resume
    again): the second resume makes every restored output and benchmark table newer than
    the dataset, so Snakemake's mtime trigger (which counts a job's benchmark among its
    outputs) reruns nothing."""
    monkeypatch.chdir(tmp_path)
    _run_with_records()
    _elsewhere(tmp_path, monkeypatch)
    assert resume("paper-cpu").missing_data == ["data/processed/a.npz"]
    old = time.time() - 3600
    for path in (CLAIMS, PART, SOURCE, BENCHMARK):
        os.utime(path, (old, old))  # the first resume, an hour before the dataset
    Path("data/processed").mkdir(parents=True)
    Path("data/processed/a.npz").write_bytes(b"array")
    assert resume("paper-cpu").missing_data == []
    dataset = os.stat("data/processed/a.npz").st_mtime
    assert all(os.stat(p).st_mtime >= dataset for p in (CLAIMS, PART, SOURCE, BENCHMARK))
    assert Path(BENCHMARK).read_text() == "s\tmax_rss\n1.5\t100\n"  # touched, not rewritten


def test_resume_overwrites_nothing_and_puts_back_nothing_corrupted(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    _run_with_records()
    _elsewhere(tmp_path, monkeypatch)
    # This checkout's run has another stability table: nothing is copied, the file is named.
    Path(SOURCE).parent.mkdir(parents=True)
    Path(SOURCE).write_text("eta\n9\n")
    with pytest.raises(ResumeError, match="already has different file.*: " + SOURCE):
        resume("paper-cpu")
    assert not Path(CLAIMS).exists() and Path(SOURCE).read_text() == "eta\n9\n"
    assert not Path(".snakemake").exists()
    Path(SOURCE).unlink()
    # A published copy that no longer matches its sidecar is not put back.
    published = Path("published/paper-cpu/results/scm/runs/part0.csv")
    published.write_text(published.read_text() + "2\n")
    with pytest.raises(ResumeError, match="part0.csv does not match its provenance sidecar"):
        resume("paper-cpu")
    assert not Path(CLAIMS).exists()


def test_galu_resume_says_what_it_did_and_what_is_missing(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    Path("config").mkdir()
    Path("config/config.yaml").write_text("scale: quick\n")
    assert main(["resume", "--scale", "paper-cpu"]) == 2
    err = capsys.readouterr().err
    assert "no published run of the paper-cpu scale" in err and "galu publish" in err
    _run_with_records()
    _elsewhere(tmp_path, monkeypatch)
    shutil.copytree(tmp_path / "config", "config")
    assert main(["resume", "--scale", "paper-cpu"]) == 0
    out = capsys.readouterr().out
    assert "3 file(s) of the published paper-cpu run put back (0 already there)" in out
    assert "6 Snakemake record(s) and 1 benchmark table(s) written" in out
    assert "NOTE the run was made from data/processed/a.npz, missing here" in out


def _planned_rules(out: str) -> set[str]:
    return set(re.findall(r"^\s*(?:local)?rule (\w+):", out, flags=re.M)) - {"all"}


def _closures(root: Path) -> dict[str, str]:
    scanner = CodeScanner(root)
    return {f"scripts/{p.name}": scanner.closure(p).sha256 for p in (root / "scripts").glob("*.py")}


@pytest.mark.slow
def test_a_run_stage_by_stage_resumes_elsewhere_and_reruns_only_what_changed(tmp_path):
    from test_reliability_support import TINY, smk, tiny_repo

    root = tiny_repo(tmp_path / "repo", {**TINY, "scale": "paper-cpu", "stages": ["scm"]})
    smk(root, "--cores", "2")
    claims = pd.read_csv(root / "results/paper-cpu/claims.csv").set_index("claim_id")
    left_out = claims[claims["paper"] != "scm"]
    assert (left_out["verdict"] == "not_run").all()
    assert left_out["reason"].str.contains("not among this run's stages").all()
    assert (claims.loc[claims["paper"] == "scm", "verdict"] != "not_run").any()
    assert not (root / "results/paper-cpu/memorization").exists()

    galu = tool("galu")
    run([galu, "publish", "--scale", "paper-cpu", "--configfile", "reliability.yaml"], root)
    # Elsewhere: the checkout as git would give it, the publication its only results.
    for folder in ("results", "figures", "logs", ".snakemake"):
        shutil.rmtree(root / folder)
    out = run([galu, "resume", "--scale", "paper-cpu", "--configfile", "reliability.yaml"], root)
    assert "put back (0 already there)" in out.stdout
    assert "Will rerun: any job whose parameters differ from the run's; none for" in out.stdout
    assert "consistent with their provenance sidecars" in run([galu, "audit"], root).stdout
    # Tables and figures are published: nothing reruns, not even a plot.
    planned = _planned_rules(smk(root, "-n").stdout)
    assert planned == set(), planned
    # A refactor recorded as number-neutral (here by hand; `galu equivalence` records it from
    # its evidence, tests/test_equivalence_workflow.py) reruns nothing of the publication.
    before = _closures(root)
    helper = root / "galu/scm/stability.py"
    helper.write_text(helper.read_text().replace("_richardson_steps", "_step_ladder"))
    after = _closures(root)
    changed = {s for s in after if after[s] != before[s]}
    assert "scripts/scm_stability.py" in changed
    assert {"scm_stability", "claims"} <= _planned_rules(smk(root, "-n").stdout)
    # An entry is trusted only when its commits are in the checkout's history and hold the
    # closures it names (the audit recomputes them): the refactor is committed first.
    base = run(["git", "rev-parse", "HEAD"], root).stdout.strip()
    run(["git", "commit", "-qam", "refactor"], root)
    head = run(["git", "rev-parse", "HEAD"], root).stdout.strip()
    ledger = Ledger.load(root)  # the repository's own evidence stays
    ledger.add(
        Equivalence(s, after[s], before[s], base, head, ("by hand",), 1, ()) for s in changed
    )
    ledger.save(root)
    assert _planned_rules(smk(root, "-n").stdout) == planned
    run(["git", "commit", "-qam", "its evidence"], root)
    audited = run([galu, "audit", "--strict", "--verbose"], root)  # the publication is current
    assert (
        "number-neutral" in audited.stdout and f"at by hand between {base[:12]}" in audited.stdout
    )
    # An edit of one job's code reruns that job and what reads its table, nothing else.
    with open(root / "scripts/scm_stability.py", "a") as script:
        script.write("\nRESUME_TEST_EDIT = 1\n")
    planned = _planned_rules(smk(root, "-n").stdout)
    assert {"scm_stability", "claims"} <= planned
    assert not planned & {"scm_ode", "scm_simulation", "scm_schedules"}, planned
    strict = run([galu, "audit", "--strict"], root, check=False)
    assert strict.returncode == 1 and "published/paper-cpu: " in strict.stdout
    assert "scripts/scm_stability.py" in strict.stdout


def test_a_run_kept_in_progress_is_put_back_from_its_own_folder(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    _run_with_records()
    publish("paper-cpu", configfiles=[], machine="m", in_progress=True)
    fresh = tmp_path / "fresh"
    shutil.copytree("published", fresh / "published")
    monkeypatch.chdir(fresh)
    Path("config").mkdir()
    Path("config/config.yaml").write_text("scale: quick\n")
    with pytest.raises(ResumeError, match="no published run of the paper-cpu scale"):
        resume("paper-cpu")  # the scale's own publication: none
    assert main(["resume", "--scale", "paper-cpu", "--in-progress"]) == 0
    assert "3 file(s) of the published paper-cpu run put back" in capsys.readouterr().out
    assert (
        Path(SOURCE).read_bytes()
        == Path("published/in-progress/paper-cpu/results/scm/stability.csv").read_bytes()
    )


def test_the_checkpoints_of_cut_off_jobs_go_with_a_run_kept_in_progress(
    tmp_path, monkeypatch, capsys
):
    """A simulation cut off by the end of a sitting goes on from its checkpoint on the next
    machine: published in progress with the run, put back where the checkout has none."""
    monkeypatch.chdir(tmp_path)
    _run_with_records()
    state = {"done": 4096, "J": torch.arange(6.0)}
    Checkpoint(CHECKPOINT, "key").save(state)
    Checkpoint(CHECKPOINT.replace("paper-cpu", "paper-smoke"), "key").save(state)  # not this run
    publish("paper-cpu", configfiles=[], machine="m", in_progress=True)
    kept = json.loads(Path("published/in-progress/paper-cpu", STATE).read_text())["checkpoints"]
    assert list(kept) == [CHECKPOINT]
    fresh = tmp_path / "fresh"
    shutil.copytree("published", fresh / "published")
    monkeypatch.chdir(fresh)
    Path("config").mkdir()
    Path("config/config.yaml").write_text("scale: quick\n")
    assert main(["resume", "--scale", "paper-cpu", "--in-progress"]) == 0
    assert "1 checkpoint(s) of cut-off jobs" in capsys.readouterr().out
    assert Path(CHECKPOINT).read_bytes() == (tmp_path / CHECKPOINT).read_bytes()
    loaded = Checkpoint(CHECKPOINT, "key").load()
    assert loaded is not None and loaded["done"] == 4096
    Checkpoint(CHECKPOINT, "key").save({"done": 8192})  # this checkout's own, newer state
    assert resume("paper-cpu", in_progress=True).checkpoints == 0
    assert Checkpoint(CHECKPOINT, "key").load() == {"done": 8192}
    # one too large for git (a width-1024 network) stays in the checkout that made it
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr("galu.workflow.publishing.publication_manifest.CHECKPOINT_MAX_BYTES", 10)
    publish("paper-cpu", configfiles=[], machine="m", in_progress=True)
    state = json.loads(Path("published/in-progress/paper-cpu", STATE).read_text())
    assert "checkpoints" not in state and state["checkpoints_left_out"] == [CHECKPOINT]
    monkeypatch.undo()
    monkeypatch.chdir(tmp_path)
    # a finished run has none (each job clears its own): its run state says nothing of them
    Path(CHECKPOINT).unlink()
    publish("paper-cpu", configfiles=[], machine="m", in_progress=True)
    assert "checkpoints" not in json.loads(
        Path("published/in-progress/paper-cpu", STATE).read_text()
    )


def test_a_resumed_run_publishes_again_without_the_file_its_publication_left_out(
    tmp_path, monkeypatch, capsys
):
    """A table too large to publish is left out (and listed); a run resumed elsewhere lacks
    it by design, so the next publication neither refuses the tables made from it nor forgets
    that it was left out."""
    import galu.workflow.publishing.publish as publishing

    monkeypatch.chdir(tmp_path)
    big = "results/paper-cpu/normalization/isometry_eigenvalues.csv"
    Run("normalization_isometry").write_csv(pd.DataFrame({"eig": range(2000)}), big)
    Run("normalization_isometry", inputs=[big]).write_csv(pd.DataFrame({"ks": [0.1]}), SOURCE)
    Run("claims", inputs=[SOURCE]).write_csv(pd.DataFrame({"verdict": ["pass"]}), CLAIMS)
    monkeypatch.setattr(publishing, "MAX_BYTES", 1000)
    first = publish("paper-cpu", configfiles=[], machine="m", in_progress=True)
    assert first["left_out"] == ["results/normalization/isometry_eigenvalues.csv"]
    fresh = tmp_path / "fresh"
    shutil.copytree("published", fresh / "published")
    monkeypatch.chdir(fresh)
    done = resume("paper-cpu", in_progress=True)
    assert not Path(big).exists() and Path(SOURCE).is_file()  # made from it
    assert done.left_out == ["results/normalization/isometry_eigenvalues.csv"]
    capsys.readouterr()
    Path("config").mkdir()
    Path("config/config.yaml").write_text("scale: quick\n")
    assert main(["resume", "--scale", "paper-cpu", "--in-progress"]) == 0  # names it too
    assert (
        "Left out of the publication as too large:"
        " results/normalization/isometry_eigenvalues.csv;" in capsys.readouterr().out
    )
    # the audit checks what was put back, the output made from the missing file included,
    # and names that file without calling it a problem (it is missing by design)
    assert main(["audit", "--folders", "results"]) == 0  # (the fake run records no commit)
    assert (
        "NOTE 1 output(s) were made from a file their run's publication left out as too large,"
        f" which this checkout lacks (e.g. {SOURCE} ({big}))" in capsys.readouterr().out
    )
    manifest = publish("paper-cpu", configfiles=[], machine="m", in_progress=True)
    assert manifest["left_out"] == first["left_out"] and manifest["files"] == first["files"]


@pytest.mark.parametrize(
    ("name", "text", "says"),
    [
        ("publication.json", '{"scale": "paper-cpu", "fi', "is not readable JSON"),
        ("publication.json", '["not", "a", "record"]', "does not hold a publication's record"),
        ("run-state.json", '{"snakemake_metadata": {', "is not readable JSON"),
    ],
)
def test_a_damaged_manifest_or_state_stops_the_resume_before_any_copy(
    tmp_path, monkeypatch, name, text, says
):
    monkeypatch.chdir(tmp_path)
    _run_with_records()
    _elsewhere(tmp_path, monkeypatch)
    Path(f"published/paper-cpu/{name}").write_text(text)
    with pytest.raises(ResumeError, match=f"published/paper-cpu/{name} {says}"):
        resume("paper-cpu")
    assert not Path("results").exists()  # nothing was copied


@pytest.mark.parametrize(
    ("name", "key", "value", "says"),
    [
        ("publication.json", "files", ["../../outside.csv"], "names '../../outside.csv': not a"),
        ("publication.json", "files", ["/etc/passwd"], "names '/etc/passwd': not a file of a run"),
        ("publication.json", "files", [7], "names 7: not a file of a run inside the repository"),
        ("publication.json", "files", ["README.md"], "names 'README.md': not a file of a run"),
        ("run-state.json", "benchmarks", {"../../x.tsv": "s\n"}, "names '../../x.tsv': not a"),
        ("run-state.json", "benchmarks", {"logs/a.tsv": 3}, "holds a benchmark table that is not"),
        ("run-state.json", "snakemake_metadata", [], "holds snakemake_metadata as a list, not"),
        ("run-state.json", "checkpoints", {"../../x.pt": "AA=="}, "names '../../x.pt': not a"),
        ("run-state.json", "checkpoints", {".snakemake/metadata/x": "AA=="}, "names '.snakemake/"),
        ("run-state.json", "checkpoints", {f"{CHECKPOINT}": "not base64!"}, "holds the checkpoint"),
        ("run-state.json", "checkpoints", {f"{CHECKPOINT}": 3}, "holds the checkpoint"),
    ],
)
def test_a_publication_naming_files_outside_the_run_is_refused_before_any_copy(
    tmp_path, monkeypatch, name, key, value, says
):
    """A manifest or run state edited to name paths outside the run (``..``, absolute, a
    file of the checkout) or fields of the wrong type: the resume names it and writes
    nothing, anywhere (it used to copy to and write benchmarks at the named path)."""
    monkeypatch.chdir(tmp_path)
    _run_with_records()
    fresh = _elsewhere(tmp_path, monkeypatch)
    path = Path(f"published/paper-cpu/{name}")
    content = json.loads(path.read_text())
    path.write_text(json.dumps({**content, key: value}))
    before = sorted(p.as_posix() for p in tmp_path.rglob("*"))
    with pytest.raises(ResumeError, match=re.escape(f"{path.as_posix()} {says}")):
        resume("paper-cpu")
    assert sorted(p.as_posix() for p in tmp_path.rglob("*")) == before
    assert not (fresh / "results").exists()


def test_a_table_with_the_same_bytes_but_another_record_is_not_taken_for_the_run(
    tmp_path, monkeypatch
):
    """Resume compares the sidecars too: the same table bytes with another provenance record
    (another run's, or edited) would make its "Will rerun: none" wrong."""
    monkeypatch.chdir(tmp_path)
    _run_with_records()
    _elsewhere(tmp_path, monkeypatch)
    published = Path("published/paper-cpu/results/scm/stability.csv")
    Path(SOURCE).parent.mkdir(parents=True)
    shutil.copy(published, SOURCE)
    side = json.loads(Path(f"{published}.meta.json").read_text())
    Path(f"{SOURCE}.meta.json").write_text(json.dumps({**side, "rule": "another"}))
    with pytest.raises(ResumeError, match="or provenance records \\(sidecars\\): " + SOURCE):
        resume("paper-cpu")
    assert not Path(CLAIMS).exists()


def test_a_full_disk_names_the_destination(tmp_path, monkeypatch):
    import errno

    from galu.workflow.publishing import resume as resume_module

    def full(source, dest):
        raise OSError(errno.ENOSPC, "No space left on device", str(source))

    monkeypatch.setattr(resume_module.shutil, "copyfile", full)
    (tmp_path / "src").write_text("x")
    with pytest.raises(OSError) as raised:
        resume_module.copy_to(tmp_path / "src", tmp_path / "out/dest.csv")
    assert raised.value.filename == str(tmp_path / "out/dest.csv")
    assert not (tmp_path / "out/dest.csv").exists()
