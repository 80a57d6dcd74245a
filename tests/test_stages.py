"""The stages' declarations (galu/<paper>/stage.py) against the code they name.

A declaration names drawing functions, the functions that computed each table, caption
templates and contract paths; the plot rules, the sidecars and the report take them from
it, so each name must exist, at every configuration the project ships."""

from __future__ import annotations

import importlib

import pytest

from galu.workflow.claim_spec import PAPERS
from galu.workflow.pages.dvcstages import rule_files
from galu.workflow.planning.jobs import EXPERIMENT_STAGES
from galu.workflow.settings.config import load_schema, load_yaml
from galu.workflow.settings.runconfig import run_config
from galu.workflow.stages import stage, stages

from conftest import REPO

CONFIGS = {
    "quick": (),
    "tiny": ("config/tiny.yaml",),
    "paper": ("config/paper.yaml",),
    "paper-smoke": ("config/paper.yaml", "config/paper-smoke.yaml"),
}


def _function(dotted: str):
    module, name = dotted.rsplit(".", 1)
    return getattr(importlib.import_module(module), name, None)


@pytest.mark.parametrize("scale", list(CONFIGS))
def test_every_figure_names_code_and_files_that_exist(scale):
    config = run_config(REPO, CONFIGS[scale])
    for each in stages():
        figures = importlib.import_module(each.figures_module)
        declared = each.figures(config)
        assert declared, each.name
        assert len({f.name for f in declared}) == len({f.file for f in declared}) == len(declared)
        for figure in declared:
            draw = figures.DRAW[figure.name]
            # drawn by the stage's figures module or one it imports from the same package
            assert draw.__module__.rpartition(".")[0] == f"galu.{each.name}", draw.__module__
            assert draw.__module__.endswith("figures"), draw.__module__
            caption = (REPO / "workflow/report" / figure.caption).read_text()
            assert draw.__name__ in caption and draw.__module__ in caption, figure.caption
            for table in figure.tables.values():
                assert table.path.startswith(f"results/{each.name}/"), table.path
                assert table.path.endswith(".csv")
                assert table.computed_by
                assert all(callable(_function(f)) for f in table.computed_by), table
        assert set(figures.DRAW) >= {f.name for f in declared}


def test_the_stages_are_the_configs_stages_and_the_claims_papers():
    """Every galu/<paper>/stage.py is a stage, in its declared order, and nothing else: the
    configuration's stages, the claims' papers and the rule files follow from them."""
    entry = load_schema(REPO / "workflow/schemas/config.schema.yaml")["properties"]["stages"]
    declared = sorted(p.parent.name for p in (REPO / "galu").glob("*/stage.py"))
    names = [each.name for each in stages()]
    assert sorted(names) == declared and names
    assert [each.order for each in stages()] == sorted({each.order for each in stages()})
    assert list(EXPERIMENT_STAGES) == names
    assert entry["items"]["enum"] == entry["default"] == names
    # the claims' papers: each stage's, each once, in stage order; every paper has a claim
    assert PAPERS == tuple(dict.fromkeys(each.paper for each in stages()))
    claimed = {claim["paper"] for claim in load_yaml(REPO / "workflow/claims.yaml")}
    assert claimed == set(PAPERS)
    for name in names:
        assert stage(name).name == name
        assert (REPO / f"galu/{name}/__init__.py").is_file(), name
        assert rule_files(REPO, name), f"{name}: no workflow/rules/{name}*.smk"
    with pytest.raises(KeyError, match=f"no stage 'report'; the stages are {', '.join(names)}"):
        stage("report")


def test_only_the_configured_datasets_get_a_generalization_figure():
    config = run_config(REPO, (), ["generalization.datasets=[parity,mnist]"])
    figures = stage("generalization").figures(config)
    assert [f.name for f in figures] == ["mnist", "parity"]  # declaration order
    mnist, parity = figures
    assert mnist.draw == {"dataset": "mnist", "depth": config["generalization"]["images"]["depth"]}
    assert parity.draw == {} and list(parity.tables) == ["parity"]


def test_a_figure_of_seed_means_names_the_seeds_its_tables_averaged():
    config = run_config(REPO, (), ["seed=7", "scm.simulation.seeds=3"])
    (schedules,) = [f for f in stage("scm").figures(config) if f.name == "schedules"]
    assert list(schedules.seeds) == [7, 8, 9]
    assert all(f.seeds is None for f in stage("memorization").figures(config))
