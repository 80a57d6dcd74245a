"""Inputs are what they claim to be, in the workflow and not only in the audit (issue #39,
pattern 4): a processed array or a result whose sidecar is missing, describes another file
(another dataset's array copied over it with its sidecar), is malformed or unsealed, or
records other bytes, is set aside by the pre-flight, refused by ``load_processed`` and
refused by the job that would read it (``Run.from_snakemake``), before anything is computed
from it; the other files are left byte for byte as they were."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest

from galu.workflow.data import DataError, load_processed
from galu.workflow.data.prepare import write_npz
from galu.workflow.output import Run
from galu.workflow.provenance import sealed_sidecar, sha256_file
from galu.workflow.running.preflight import preflight
from galu.workflow.vouch import describes, is_product, unvouched_inputs, vouch_problem

MNIST, FASHION = "data/processed/mnist.npz", "data/processed/fashion_mnist.npz"
TABLE, OTHER = "results/s/table.csv", "results/s/other.csv"


def _arrays(label: int) -> dict[str, np.ndarray]:
    return {
        "x_train": np.full((2, 3), label, dtype=np.uint8),
        "y_train": np.array([label, 0], dtype=np.int64),
        "x_test": np.zeros((1, 3), dtype=np.uint8),
        "y_test": np.array([label], dtype=np.int64),
    }


@pytest.fixture
def tree(tmp_path, monkeypatch):
    """Two processed datasets and two result tables, each with its sidecar."""
    monkeypatch.chdir(tmp_path)
    for path, label in ((MNIST, 1), (FASHION, 2)):
        write_npz(Path(path), _arrays(label))
        Run("prepare", wildcards={"dataset": Path(path).stem}).stamp(path)
    Run("make").write_csv(pd.DataFrame({"x": [1, 2]}), TABLE)
    Run("make").write_csv(pd.DataFrame({"x": [3, 4]}), OTHER)
    return tmp_path


def sums(root: Path) -> dict[str, str]:
    """sha256 of every file in the tree (set-aside ones included)."""
    return {
        p.relative_to(root).as_posix(): sha256_file(p)
        for p in sorted(root.rglob("*"))
        if p.is_file() and ".snakemake" not in p.parts
    }


def _swap(root: Path, source: str, target: str) -> None:
    """Copy ``source`` with its sidecar over ``target`` (a hostile or careless ``cp``)."""
    for suffix in ("", ".meta.json"):
        shutil.copyfile(root / f"{source}{suffix}", root / f"{target}{suffix}")


# -- the pre-flight ----------------------------------------------------------------------------


def test_an_array_copied_over_another_with_its_sidecar_is_set_aside(tree):
    _swap(tree, FASHION, MNIST)
    swapped = sha256_file(tree / MNIST)
    (finding,) = preflight(tree)
    assert finding.path == MNIST
    assert f"its sidecar describes {FASHION}, not this file" in finding.problem
    assert "rebuilds it from the verified raw archives" in finding.action
    assert not (tree / MNIST).exists() and sha256_file(tree / f"{MNIST}.rejected") == swapped
    assert load_processed(Path(FASHION))["y_test"].tolist() == [2]  # the original untouched


def test_an_array_without_a_sidecar_is_set_aside_and_a_dry_run_only_says_so(tree):
    (tree / f"{MNIST}.meta.json").unlink()
    before = sums(tree)
    (finding,) = preflight(tree, dry_run=True)
    assert finding.path == MNIST and finding.problem.startswith("has no provenance sidecar")
    assert "a real run moves it to data/processed/mnist.npz.rejected" in finding.action
    assert sums(tree) == before
    (finding,) = preflight(tree)
    assert not (tree / MNIST).exists() and (tree / f"{MNIST}.rejected").is_file()
    assert preflight(tree) == []  # nothing else was touched, and nothing is left to find


@pytest.mark.parametrize(
    "damage",
    ["unsealed", "malformed", "other_bytes"],
)
def test_an_array_whose_sidecar_does_not_vouch_for_it_is_set_aside(tree, damage):
    side = tree / f"{MNIST}.meta.json"
    record = json.loads(side.read_text())
    if damage == "unsealed":  # an edit that keeps the JSON valid breaks the seal
        side.write_text(side.read_text().replace('"prepare"', '"prepared"'))
    elif damage == "malformed":
        side.write_text('{"output": "data/processed/mnist.npz"}')
    else:  # a sealed sidecar, honestly made, for other bytes
        record["output"]["sha256"] = sha256_file(tree / FASHION)
        side.write_bytes(sealed_sidecar(record))
    other = {k: v for k, v in sums(tree).items() if not k.startswith(MNIST)}
    (finding,) = preflight(tree)
    assert finding.path == MNIST and (tree / f"{MNIST}.rejected").is_file()
    expected = {
        "unsealed": "changed after it was written (its bytes do not match its seal)",
        "malformed": "its sidecar is unreadable or malformed",
        "other_bytes": "changed after it was written (sha256",
    }[damage]
    assert expected in finding.problem
    assert {k: v for k, v in sums(tree).items() if not k.startswith(MNIST)} == other


# -- load_processed ----------------------------------------------------------------------------


@pytest.mark.parametrize("case", ["swapped", "no_sidecar", "other_file_sidecar"])
def test_load_processed_refuses_what_its_sidecar_does_not_vouch_for(tree, case):
    if case == "swapped":
        _swap(tree, FASHION, MNIST)
    elif case == "no_sidecar":
        (tree / f"{MNIST}.meta.json").unlink()
    else:  # only the sidecar copied: it describes (and hashes) the other array
        shutil.copyfile(tree / f"{FASHION}.meta.json", tree / f"{MNIST}.meta.json")
    before = sums(tree)
    with pytest.raises(DataError) as error:
        load_processed(Path(MNIST))
    message = str(error.value)
    assert message.startswith(f"{MNIST} is not what its provenance sidecar says (")
    assert ("has no provenance sidecar" if case == "no_sidecar" else FASHION) in message
    assert f"snakemake --cores 2 {MNIST}" in message
    assert sums(tree) == before  # refusing changes nothing


def test_load_processed_takes_a_checkout_copied_elsewhere(tree, tmp_path_factory):
    """A sidecar records the path relative to the checkout where its job ran; the same file
    under an absolute path of a copied checkout is still the file it describes."""
    copy = Path(shutil.copytree(tree, tmp_path_factory.mktemp("elsewhere") / "repo"))
    assert load_processed(copy / MNIST)["y_test"].tolist() == [1]
    _swap(copy, FASHION, MNIST)
    with pytest.raises(DataError, match="its sidecar describes data/processed/fashion_mnist"):
        load_processed(copy / MNIST)


# -- every job checks what it reads --------------------------------------------------------


def _smk(inputs: list[str], log: Path) -> SimpleNamespace:
    """The parts of Snakemake's ``snakemake`` object that Run.from_snakemake reads."""
    return SimpleNamespace(
        rule="plot", input=inputs, log=[str(log)], params={}, wildcards={}, output=[]
    )


def _start(inputs: list[str], tree: Path, monkeypatch) -> Run:
    monkeypatch.setattr("galu.workflow.feedback.start_heartbeat", lambda *a: None)
    return Run.from_snakemake(_smk(inputs, tree / "logs/plot.log"))


def test_a_job_reads_inputs_its_sidecars_vouch_for(tree, monkeypatch):
    run = _start([TABLE, MNIST, "README.md"], tree, monkeypatch)
    assert run.inputs == [TABLE, MNIST]  # README.md is not in the tree: skipped as before


@pytest.mark.parametrize("case", ["swapped", "no_sidecar", "truncated"])
def test_a_job_refuses_an_input_damaged_after_the_preflight(tree, monkeypatch, capsys, case):
    if case == "swapped":
        _swap(tree, OTHER, TABLE)
    elif case == "no_sidecar":
        (tree / f"{TABLE}.meta.json").unlink()
    else:
        (tree / TABLE).write_text("x\n1\n")
    before = sums(tree)
    with pytest.raises(SystemExit) as stop:
        _start([TABLE, MNIST], tree, monkeypatch)
    assert stop.value.code == 1
    err = capsys.readouterr().err
    assert err.startswith("galu: this job's input is not what its sidecar says it is")
    why = {"swapped": f"its sidecar describes {OTHER}", "no_sidecar": "has no provenance sidecar"}
    assert f"{TABLE} {why.get(case, 'changed after it was written')}" in err
    assert MNIST not in err  # the sound input is not named
    assert "Traceback" not in err
    log = (tree / "logs/plot.log").read_text()
    assert "this job's input is not what its sidecar says" in log
    assert {k: v for k, v in sums(tree).items() if k != "logs/plot.log"} == {
        k: v for k, v in before.items() if k != "logs/plot.log"
    }


def test_only_workflow_products_need_a_sidecar(tree):
    assert [is_product(p) for p in (TABLE, MNIST, "figures/a.png")] == [True, True, True]
    assert [is_product(p) for p in ("README.md", "workflow/claims.yaml")] == [False, False]
    assert not is_product("published/paper-cpu/results/claims.csv")  # the audit's to check
    (tree / "notes.md").write_text("by hand")
    assert unvouched_inputs({"notes.md": sha256_file(tree / "notes.md")}) == []


def test_describes_is_exact_for_relative_paths_and_a_suffix_for_absolute_ones():
    assert describes("results/a.csv", "results/a.csv")
    assert not describes("results/a.csv", "x/results/a.csv")  # relative: exact
    assert describes("results/a.csv", "/copy/of/repo/results/a.csv")
    assert not describes("results/a.csv", "/copy/of/repo/results/b/a.csv")
    assert not describes("results/a.csv", "/copy/of/repo/xresults/a.csv")


def test_a_folder_in_the_sidecars_place_is_no_sidecar(tree):
    side = tree / f"{TABLE}.meta.json"
    side.unlink()
    side.mkdir()  # a folder where the sidecar should be: reading it fails
    assert vouch_problem(TABLE).startswith("has no provenance sidecar")
