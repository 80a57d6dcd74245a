"""Atomic writes and sidecars."""

import json

import pandas as pd
import pytest

from galu.atomic import atomic_path
from galu.provenance import Run, sha256_file, sha256_json, sidecar_path


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
