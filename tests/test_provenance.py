"""Atomic writes and sidecars."""

import json
import subprocess
from types import SimpleNamespace

import pandas as pd
import pytest

from galu.atomic import atomic_path
from galu.seeding import seeds_in
from galu.workflow.output import Run
from galu.workflow.provenance import git_state, sha256_file, sha256_json, sidecar_path

from conftest import REPO


def test_atomic_path_keeps_previous_version_on_failure(tmp_path):
    target = tmp_path / "out.csv"
    target.write_text("old\n")
    with pytest.raises(RuntimeError), atomic_path(target) as tmp:
        tmp.write_text("half-writ")
        raise RuntimeError("killed")
    assert target.read_text() == "old\n"
    assert list(tmp_path.iterdir()) == [target]  # no temporary file left behind


def test_atomic_path_replaces_on_success(tmp_path):
    target = tmp_path / "sub" / "out.txt"
    with atomic_path(target) as tmp:
        tmp.write_text("new")
    assert target.read_text() == "new"


def test_sidecar_records_hashes_params_and_inputs(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    source = tmp_path / "in.txt"
    source.write_text("input bytes")
    run = Run("demo", wildcards={"seed": "3"}, params={"n": 2, "xs": (1, 2)}, inputs=["in.txt"])
    df = pd.DataFrame({"a": [1, 2], "b": [0.1, 1 / 3]})
    run.write_csv(df, "res/x.csv", seeds=[3])
    meta = json.loads(sidecar_path("res/x.csv").read_text())
    assert meta["output"] == {"path": "res/x.csv", "sha256": sha256_file("res/x.csv")}
    assert meta["rule"] == "demo" and meta["wildcards"] == {"seed": "3"}
    assert meta["params"] == {"n": 2, "xs": [1, 2]}
    assert meta["params_sha256"] == sha256_json({"n": 2, "xs": [1, 2]})
    assert meta["inputs"] == [{"path": "in.txt", "sha256": sha256_file(source)}]
    assert meta["seeds"] == [3] and meta["device"] == "cpu"
    assert set(meta["versions"]) >= {"python", "galu", "torch", "numpy", "snakemake"}
    assert set(meta["git"]) == {"commit", "dirty"}
    assert meta["started"] <= meta["finished"]
    assert (tmp_path / "res/x.csv").read_text() == "a,b\n1,0.1\n2,0.3333333333\n"


def test_same_table_gives_same_bytes(tmp_path):
    df = pd.DataFrame({"v": [0.1, 2.5e-12]})
    run = Run("r")
    run.write_csv(df, tmp_path / "a.csv")
    run.write_csv(df, tmp_path / "b.csv")
    assert (tmp_path / "a.csv").read_bytes() == (tmp_path / "b.csv").read_bytes()


def test_figure_gets_png_pdf_and_sidecars_with_stable_bytes(tmp_path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots()
    ax.plot([0, 1], [1, 0])
    run = Run("plot")
    run.save_figure(fig, tmp_path / "f.png")
    first = (tmp_path / "f.pdf").read_bytes()
    run.save_figure(fig, tmp_path / "f.png")
    for name in ("f.png", "f.pdf", "f.png.meta.json", "f.pdf.meta.json"):
        assert (tmp_path / name).is_file()
    assert (tmp_path / "f.pdf").read_bytes() == first  # no creation date in the PDF


def _job(tmp_path, inputs, **params):
    """A stand-in for the ``snakemake`` object a script receives, logging under tmp_path."""
    return SimpleNamespace(
        rule="job",
        log=[str(tmp_path / "logs/job.log")],
        input=[str(p) for p in inputs],
        wildcards={},
        params=params,
    )


def _official_and_substitute(tmp_path):
    official, substitute = tmp_path / "official.npz", tmp_path / "substitute.npz"
    for path, flag in ((official, False), (substitute, True)):
        path.write_bytes(path.name.encode())
        sidecar_path(path).write_text(json.dumps({"data_substitute": flag}))
    return official, substitute


@pytest.mark.parametrize(
    ("reads", "expected"), [((), False), (("official",), False), (("official", "sub"), True)]
)
def test_a_job_that_reads_a_substitute_records_it_without_being_told(
    tmp_path, monkeypatch, reads, expected
):
    monkeypatch.chdir(tmp_path)
    official, substitute = _official_and_substitute(tmp_path)
    paths = {"official": official, "sub": substitute}
    run = Run.from_snakemake(_job(tmp_path, [paths[name] for name in reads]))
    run.write_csv(pd.DataFrame({"x": [1]}), "out.csv")
    assert json.loads(sidecar_path("out.csv").read_text())["data_substitute"] is expected
    assert "rule job {} started" in (tmp_path / "logs/job.log").read_text()


def test_a_script_that_knows_better_overrides_the_substitute_flag(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    _, substitute = _official_and_substitute(tmp_path)
    run = Run.from_snakemake(_job(tmp_path, [substitute]), extra={"data_substitute": False})
    assert run.extra == {"data_substitute": False}


def test_seeds_in_a_table_are_its_distinct_seeds_ascending():
    table = pd.DataFrame({"seed": [2.0, None, 0.0, 2.0], "v": [1, 2, 3, 4]})
    assert seeds_in(table) == [0, 2]
    assert all(type(s) is int for s in seeds_in(table))
    assert seeds_in(pd.DataFrame({"v": [1]})) == []


def test_a_seeded_table_records_the_seeds_the_config_gives(tmp_path, monkeypatch):
    """A real job's table (the tiny scale's perceptron simulation, reseeded): without a
    ``seeds`` argument its sidecar records seed, seed + 1, ... as the config sets them."""
    from galu.scm.experiments import simulation_table
    from galu.workflow.settings.runconfig import run_config

    config = run_config(REPO, ["config/tiny.yaml"], ["seed=5", "scm.simulation.seeds=3"])
    scm = config["scm"]
    table = simulation_table("perceptron", scm["perceptron"], scm["simulation"], 5, "cpu")
    monkeypatch.chdir(tmp_path)
    Run("scm_simulation").write_csv(table, "sim.csv")
    assert json.loads(sidecar_path("sim.csv").read_text())["seeds"] == [5, 6, 7]
    Run("scm_simulation").write_csv(table, "named.csv", seeds=[5])
    assert json.loads(sidecar_path("named.csv").read_text())["seeds"] == [5]


def test_use_device_records_the_device_and_logs_a_fallback_in_the_jobs_log(tmp_path):
    import torch

    run = Run.from_snakemake(_job(tmp_path, []))
    assert run.use_device("cpu") == "cpu" and run.device == "cpu"
    if torch.cuda.is_available():
        pytest.skip("a GPU is visible: cuda does not fall back here")
    assert run.use_device("cuda") == "cpu" and run.device == "cpu"
    assert "no CUDA device is visible; using the CPU" in (tmp_path / "logs/job.log").read_text()


def _git_repo(root):
    """A repository with one commit: a code file and a published table."""
    (root / "galu").mkdir(parents=True)
    (root / "galu/code.py").write_text("x = 1\n")
    (root / "published/paper-cpu").mkdir(parents=True)
    (root / "published/paper-cpu/t.csv").write_text("a\n1\n")
    identity = ["-c", "user.name=t", "-c", "user.email=t@t"]
    for args in (["init", "-q"], ["add", "."], [*identity, "commit", "-qm", "one"]):
        subprocess.run(["git", *args], cwd=root, check=True)
    return root


@pytest.mark.parametrize("where", [".", "galu"])  # from the root and from a subfolder
def test_a_change_under_published_is_not_a_dirty_tree_and_a_code_change_is(
    tmp_path, monkeypatch, where
):
    root = _git_repo(tmp_path / "repo")
    monkeypatch.chdir(root / where)

    def dirty() -> bool | None:
        git_state.cache_clear()
        return git_state()["dirty"]

    assert dirty() is False
    # `galu publish --in-progress` rewrote a publication in the run's own checkout
    (root / "published/paper-cpu/t.csv").write_text("a\n2\n")
    (root / "published/paper-cpu/new.csv").write_text("b\n")
    assert dirty() is False
    (root / "galu/code.py").write_text("x = 2\n")
    assert dirty() is True
    git_state.cache_clear()
