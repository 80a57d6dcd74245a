"""`galu data`: the command-line way to fetch datasets, with the data stage's messages."""

import shutil

import yaml

from galu.workflow.cli import main

from conftest import REPO


def site(tmp_path, monkeypatch, data):
    (tmp_path / "config").mkdir()
    shutil.copy(REPO / "config/config.yaml", tmp_path / "config/config.yaml")
    # The command validates the configuration against the workflow's schema.
    shutil.copytree(REPO / "workflow/schemas", tmp_path / "workflow/schemas")
    (tmp_path / "config/local.yaml").write_text(yaml.safe_dump({"data": data}))
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("GALU_DATA_MIRRORS", "")


def test_offline_fetch_fails_with_the_data_stage_message(tmp_path, monkeypatch, capsys):
    site(tmp_path, monkeypatch, {"mirrors": [], "download": False})
    assert main(["data", "fetch", "mnist"]) == 1
    err = capsys.readouterr().err
    assert "4 dataset file(s) could not be obtained" in err
    assert "mnist: train-images-idx3-ubyte.gz (9912422 bytes" in err
    assert "official URLs: not tried (data.download is false)" in err
    assert "drop it from generalization.datasets" in err
    assert not (tmp_path / "data/raw/mnist/train-images-idx3-ubyte.gz").exists()


def test_unknown_dataset_names_the_choices(tmp_path, monkeypatch, capsys):
    site(tmp_path, monkeypatch, {"mirrors": []})
    assert main(["data", "fetch", "imagenet"]) == 2  # a usage error, before any work
    assert "unknown dataset(s) imagenet; choose from mnist, fashion_mnist, cifar10" in (
        capsys.readouterr().err
    )


def test_site_mirror_from_local_yaml_is_used(tmp_path, monkeypatch, capsys):
    # A mirror holding a file with the right name but other bytes: found, then rejected.
    mirror = tmp_path / "mirror" / "mnist"
    mirror.mkdir(parents=True)
    (mirror / "t10k-labels-idx1-ubyte.gz").write_bytes(b"not the labels")
    site(tmp_path, monkeypatch, {"mirrors": [str(mirror.parent)], "download": False})
    assert main(["data", "fetch", "mnist"]) == 1
    err = capsys.readouterr().err
    assert f"{mirror.parent} (data.mirrors)" in err and "rejected" in err
