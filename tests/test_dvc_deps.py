"""dvc.yaml's commands and code deps are generated from the workflow's rules and their code
closures (galu dvc)."""

from __future__ import annotations

from galu.workflow.cli import main
from galu.workflow.pages.dvcstages import (
    code_deps,
    command_differences,
    differences,
    quick_dag,
    read_commands,
    read_deps,
    rewrite,
    stage_commands,
    wanted_deps,
)
from galu.workflow.stages import STAGE_NAMES

from conftest import REPO, copy_repo


def test_dvc_yaml_deps_are_the_code_closures():
    """Fails when an import, a script or a rule file changed without `galu dvc --update`."""
    written = read_deps((REPO / "dvc.yaml").read_text())
    # a DVC stage per declared stage, beside the data and report ones
    assert set(written) == {"data", *STAGE_NAMES, "report"}
    assert differences(written, wanted_deps(REPO, written)) == []


def test_stage_deps_follow_imports_and_keep_data_deps():
    scm = code_deps(REPO, "scm")
    assert {"galu/scm/odes.py", "galu/device.py", "galu/styles/galu.mplstyle"} <= set(scm)
    assert {"workflow/rules/scm.smk", "workflow/rules/figures.smk", "scripts/plot.py",
            "galu/scm/figures.py"} <= set(scm)  # fmt: skip
    assert not any(d.startswith(("galu/normalization/", "galu/memorization")) for d in scm)
    norm = read_deps((REPO / "dvc.yaml").read_text())["normalization"]
    assert "data/processed/cifar10.npz" in norm  # not code: kept as written
    assert {"workflow/rules/normalization_static.smk", "workflow/rules/normalization_training.smk",
            "workflow/rules/figures.smk", "scripts/plot.py", "galu/normalization/figures.py",
            "galu/workflow/data/convert.py", "galu/device.py"} <= set(norm)  # fmt: skip


def test_rewrite_restores_a_drifted_file_and_changes_nothing_else():
    text = (REPO / "dvc.yaml").read_text()
    drifted = text.replace("      - galu/scm/odes.py\n", "", 1).replace(
        "      - galu/ensembles/training.py\n",
        "      - galu/ensembles/training.py\n      - galu/old.py\n",
        1,
    )
    assert drifted != text
    written = read_deps(drifted)
    lines = differences(written, wanted_deps(REPO, written))
    assert "stage scm: missing deps galu/scm/odes.py" in lines
    assert any(line.endswith("deps no stage rule uses galu/old.py") for line in lines)
    assert rewrite(drifted, wanted_deps(REPO, written)) == text


def test_cli_check_fails_on_a_new_import_and_update_fixes_it(tmp_path, capsys):
    root = copy_repo(tmp_path / "repo")
    script = root / "scripts/scm_trajectories.py"
    script.write_text(script.read_text() + "\nfrom galu.activations import ACTIVATIONS  # noqa\n")
    assert main(["dvc", "--root", str(root)]) == 1
    assert "stage scm: missing deps galu/activations.py" in capsys.readouterr().out
    assert main(["dvc", "--root", str(root), "--update"]) == 0
    assert main(["dvc", "--root", str(root)]) == 0
    assert "      - galu/activations.py\n" in (root / "dvc.yaml").read_text()


def test_dvc_yaml_commands_are_the_workflows_rules_and_targets():
    """Each stage's cmd allows exactly the rules the workflow defines for it and asks for
    what rule all wants of it (the data stage: the prepared arrays)."""
    text = (REPO / "dvc.yaml").read_text()
    wanted = stage_commands(quick_dag(REPO))
    assert command_differences(read_commands(text), wanted) == []
    data = " ".join(wanted["data"])
    assert data.startswith("snakemake --cores all --allowed-rules download prepare -- ")
    assert sorted(data.split(" -- ")[1].split()) == [
        f"data/processed/{name}.npz" for name in ("cifar10", "fashion_mnist", "mnist")
    ]
    scm = " ".join(wanted["scm"])
    assert "scm_schedules" in scm.split(" -- ")[0] and "figures/scm/k3m2.png" in scm
    assert "max_depth_by_fraction.csv" in " ".join(wanted["normalization"])
    # a stage's cmd drifted: named, and rewritten to the generated one, nothing else touched
    drifted = text.replace(" scm_stability ", " ", 1)
    assert drifted != text
    (line,) = command_differences(read_commands(drifted), wanted)
    assert line.startswith("stage scm: its cmd should read: snakemake --cores all")
    assert rewrite(drifted, read_deps(text), wanted) == text


def test_a_new_rule_joins_its_stages_command(tmp_path, capsys):
    root = copy_repo(tmp_path / "repo")
    rules = root / "workflow/rules/scm.smk"
    rules.write_text(
        rules.read_text()
        + """

rule scm_extra:
    output:
        "results/scm/extra.txt",
    shell:
        "touch {output}"
"""
    )
    assert main(["dvc", "--root", str(root)]) == 1
    assert "stage scm: its cmd should read:" in capsys.readouterr().out
    assert main(["dvc", "--root", str(root), "--update"]) == 0
    assert main(["dvc", "--root", str(root)]) == 0
    scm = read_commands((root / "dvc.yaml").read_text())["scm"]
    assert "scm_extra" in " ".join(scm).split(" -- ")[0].split()
