"""Every ``galu`` subcommand given a bad command line, a bad place or a bad configuration: one
message naming the problem and the fix, exit 2, never a traceback; and the site settings
file's mistakes named with their line."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import warm_commands

from galu.workflow.settings.config import ConfigError, read_site_file

from conftest import REPO, run, tool

GALU = [sys.executable, "-m", "galu.workflow.cli"]


def galu(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return warm_commands.run([*GALU, *args], cwd, dict(os.environ), timeout=120)


@pytest.fixture
def checkout(tmp_path) -> Path:
    """The parts of a checkout the command line reads: the configs and the schema."""
    root = tmp_path / "repo"
    shutil.copytree(REPO / "config", root / "config", ignore=shutil.ignore_patterns("local.yaml"))
    shutil.copytree(REPO / "workflow/schemas", root / "workflow/schemas")
    return root


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["readme"], "cannot read the README README.md: No such file or directory; run galu"),
        (["data", "fetch", "mnist"], "is not a galu checkout (no config/config.yaml)"),
        (["audit", "--explain", "/etc/hostname"], "is outside the audited tree"),
        (["audit", "--explain", "figures/none.png"], "figures/none.png does not exist under"),
    ],
)
def test_outside_a_checkout_each_command_says_what_to_do(tmp_path, args, message):
    out = galu(*args, cwd=tmp_path)
    assert out.returncode == 2, out.stdout + out.stderr
    assert message in out.stderr and "Traceback" not in out.stderr


def test_readme_without_a_run_says_to_run_the_workflow(tmp_path):
    (tmp_path / "README.md").write_text("# T\n")
    out = galu("readme", cwd=tmp_path)
    assert out.returncode == 2 and "run the workflow first (snakemake --cores 2)" in out.stderr


def test_data_names_an_unknown_dataset_and_validates_the_configuration(checkout):
    out = galu("data", "fetch", "mnst", cwd=checkout)
    assert out.returncode == 2
    assert "unknown dataset(s) mnst; choose from mnist, fashion_mnist, cifar10" in out.stderr
    # The same schema check as the workflow, before any download.
    (checkout / "config/local.yaml").write_text("data:\n  timeout_s: -5\n")
    out = galu("data", "fetch", "mnist", cwd=checkout)
    assert out.returncode == 2 and "data.timeout_s: -5 is not allowed" in out.stderr
    assert "Traceback" not in out.stderr and not (checkout / "data").exists()


def test_a_yaml_mistake_in_the_site_file_is_named_with_its_line(checkout):
    local = checkout / "config/local.yaml"
    local.write_text("data:\n  mirrors: [a, b\n  timeout_s: 5\n")
    with pytest.raises(ConfigError, match=r"config/local.yaml is not valid YAML at line 3"):
        read_site_file(local)
    out = galu("data", "fetch", "mnist", cwd=checkout)
    assert out.returncode == 2 and "local.yaml is not valid YAML at line 3" in out.stderr
    local.write_text("- data\n")
    with pytest.raises(ConfigError, match="must be a mapping of keys"):
        read_site_file(local)


def test_a_site_file_of_comments_only_means_no_settings(checkout):
    local = checkout / "config/local.yaml"
    local.write_text("# data:\n#   mirrors: [/srv/datasets]\n")
    assert read_site_file(local) == {}


def test_argparse_usage_errors_exit_2(tmp_path):
    out = galu("audit", "--no-such-flag", cwd=tmp_path)
    assert out.returncode == 2 and "unrecognized arguments: --no-such-flag" in out.stderr


@pytest.mark.slow
def test_workflow_names_a_broken_site_file_and_accepts_one_of_comments(repo_copy):
    local = repo_copy / "config/local.yaml"
    local.write_text("data:\n  mirrors: [a, b\n")
    plan = run([tool("snakemake"), "-n", "--cores", "1"], repo_copy, check=False)
    assert plan.returncode == 2, plan.stderr[-2000:]
    assert "galu: config/local.yaml is not valid YAML at line 3, column 1" in plan.stderr
    assert "Traceback" not in plan.stderr and "WorkflowError" not in plan.stderr
    local.write_text("# data:\n#   mirrors: [/srv/datasets]\n")
    plan = run([tool("snakemake"), "-n", "--cores", "1"], repo_copy, check=False)
    assert plan.returncode == 0 and "normalization_coefficients" in plan.stdout, plan.stderr


# `galu run`: the two command-line mistakes on which Snakemake itself prints a traceback
# (kept as strict xfails in test_reliability_inputs.UPSTREAM) are refused here first.
@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--config", "seed"], "--config seed: entries are KEY=VALUE pairs, e.g. --config seed=3"),
        (["--config=seed"], "--config seed: entries are KEY=VALUE pairs"),
        (["-n", "--config", "seed=3", "=4"], "--config =4: entries are KEY=VALUE pairs"),
        (["--configfile", "no/such.yaml"], "--configfile no/such.yaml: no such file under"),
        (["--configfile", "config/bad.yaml"], "config/bad.yaml is not valid YAML at line 2, col"),
        (["--configfile", "config/list.yaml"], "config/list.yaml must be a mapping of keys"),
        # the traps Snakemake takes silently (#61): each would run another run than the one named
        (
            ["--configfile", "config/paper.yaml", "--configfile", "config/paper-cpu.yaml"],
            "--configfile is given more than once: Snakemake keeps only the last",
        ),
        (
            ["--config", "scm.simulation.N=10"],
            "--config scm.simulation.N=10: Snakemake would set"
            " a top-level key named 'scm.simulation.N'",
        ),
        (
            ["--configfile", "config/twice.yaml"],
            "config/twice.yaml is not valid YAML at line 2,"
            " column 1: the key 'seed' is given twice",
        ),
        (
            ["--configfile", "config/comments.yaml"],
            "--configfile config/comments.yaml sets nothing",
        ),
        (
            ["--configfile", "config/paper.yaml", "readme_check"],
            "--configfile readme_check: no such file under",
        ),
        (
            ["--configfile", "config/paper.yaml", "readme_check"],
            "if readme_check is a target, put it before --configfile (or after --)",
        ),
    ],
)
def test_run_refuses_what_snakemake_would_answer_with_a_traceback(checkout, args, message):
    (checkout / "config/bad.yaml").write_text("seed: [1,\n")
    (checkout / "config/list.yaml").write_text("- seed\n")
    (checkout / "config/twice.yaml").write_text("seed: 1\nseed: 2\n")
    (checkout / "config/comments.yaml").write_text("# seed: 1\n")
    out = galu("run", "-n", *args, cwd=checkout)
    assert out.returncode == 2, out.stdout + out.stderr
    assert message in out.stderr and out.stderr.startswith("galu run: ")
    assert "Traceback" not in out.stderr
    assert out.stdout == ""  # Snakemake never started


def test_run_passes_a_valid_command_line_to_snakemake_unchanged(checkout):
    from galu.workflow.settings.snakemake_args import check

    check(["-n", "--config", "seed=3", "lr=-1", "--configfile", "config/paper.yaml"], checkout)
    out = galu("run", "--version", cwd=checkout)
    expected = run([tool("snakemake"), "--version"], cwd=checkout).stdout
    assert out.returncode == 0 and out.stdout == expected


# Hostile places and arguments (#39, pattern 5): each one message naming the problem and
# the fix, exit 2, no traceback; nothing read outside the tree given.
@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["dvc"], "is not a galu checkout (no config/config.yaml): run galu from the repo"),
        (["dvc", "--update", "--root", "/no/such"], "/no/such is not a galu checkout (no config"),
        (["audit", "--folders", "../.."], "--folders ../.. is outside the audited tree"),
        (["audit", "--explain", "../secret.txt"], "--explain ../secret.txt is outside the audited"),
    ],
)
def test_outside_a_checkout_every_command_refuses_without_a_traceback(tmp_path, args, message):
    (tmp_path / "secret.txt").write_text("not yours")
    place = tmp_path / "here"
    place.mkdir()
    out = galu(*args, cwd=place)
    assert out.returncode == 2, out.stdout + out.stderr
    assert message in out.stderr and "Traceback" not in out.stderr, out.stderr


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["plan", "--configfile", "config/bad.yaml"], "config/bad.yaml is not valid YAML at line"),
        (["plan", "--config", "seed=[1,"], "--config 'seed=[1,': the value is not valid YAML"),
        (["explain", "--results", "../.."], "--results ../.. is outside the checkout"),
        (["explain", "--results", "/etc"], "--results /etc is outside the checkout"),
        (["publish", "--scale", "paper-cpu", "--configfile", "/etc/passwd"],
         "--configfile /etc/passwd is outside the checkout"),
        (["dvc"], "cannot read the DVC stages"),
    ],
)  # fmt: skip
def test_garbage_arguments_in_a_checkout_are_named_without_a_traceback(checkout, args, message):
    (checkout / "config/bad.yaml").write_text("seed: [1,\n")
    out = galu(*args, cwd=checkout)
    assert out.returncode == 2, out.stdout + out.stderr
    assert message in out.stderr and "Traceback" not in out.stderr, out.stderr


def test_a_folder_galu_may_not_write_is_named_with_the_fix(tmp_path, monkeypatch, capsys):
    """A read-only checkout (simulated: the tests run as root, who may write anywhere): the
    command names the folder and the fix, exit 2, no traceback, the README and its pages untouched;
    GALU_TRACEBACK=1 shows where it happened instead."""
    import errno
    import tempfile

    from readme_support import write_claims, write_readme

    from galu.workflow.cli import main

    monkeypatch.chdir(tmp_path)
    files = write_readme(tmp_path)
    Path("claims.md").write_text("new table\n")
    write_claims(Path("claims.csv"), {"gap": "pass"})

    def read_only(*args, dir=None, **kwargs):
        raise PermissionError(errno.EACCES, "Permission denied", str(dir))

    monkeypatch.setattr(tempfile, "mkstemp", read_only)
    assert main(["readme", "--update", "--claims", "claims.md"]) == 2
    err = capsys.readouterr().err
    assert err == (
        f"galu readme: {tmp_path / 'docs'}: Permission denied; make it writable (or run galu"
        " where you may write). Nothing it had written is left half-done (set GALU_TRACEBACK=1"
        " to see where it happened)\n"
    )
    assert all(Path(name).read_text() == text for name, text in files.items())
    monkeypatch.setenv("GALU_TRACEBACK", "1")
    with pytest.raises(PermissionError):
        main(["readme", "--update", "--claims", "claims.md"])
