"""The configuration schema, the shipped configs, and bad configs with their messages."""

from __future__ import annotations

import copy
import re
from collections.abc import Iterator
from typing import Any

import pytest

from galu.workflow.settings.config import (
    ConfigError,
    fill_declared,
    load_schema,
    load_yaml,
    validate,
)
from galu.workflow.stages import STAGE_NAMES

from conftest import REPO, run, tool

SCHEMA = load_schema(REPO / "workflow/schemas/config.schema.yaml")
QUICK_FILE = load_yaml(REPO / "config/config.yaml")
# The quick configuration as the workflow runs it: the file, with the keys it leaves to the
# stages' declarations (`stages`) filled in.
QUICK = fill_declared(copy.deepcopy(QUICK_FILE))
PAPER = load_yaml(REPO / "config/paper.yaml")


def leaves(schema: dict[str, Any], path: str = "") -> Iterator[tuple[str, dict[str, Any]]]:
    """Every (dotted key, sub-schema) pair of the schema, objects included."""
    for key, sub in schema.get("properties", {}).items():
        here = f"{path}.{key}".lstrip(".")
        yield here, sub
        if sub.get("type") == "object":
            yield from leaves(sub, here)


def defaults(schema: dict[str, Any]) -> dict[str, Any]:
    """The config the schema's defaults describe (objects built from their children)."""
    out = {}
    for key, sub in schema["properties"].items():
        # an object with declared keys is built from them; a free mapping has its own default
        nested = sub.get("type") == "object" and "properties" in sub
        out[key] = defaults(sub) if nested else sub["default"]
    return out


def merged(base: dict[str, Any], overlay: dict[str, Any]) -> dict[str, Any]:
    """Snakemake's merge of a --configfile over the config: mappings merge, the rest replaces."""
    out = copy.deepcopy(base)
    for key, value in overlay.items():
        both = isinstance(value, dict) and isinstance(out.get(key), dict)
        out[key] = merged(out[key], value) if both else copy.deepcopy(value)
    return out


def test_shipped_configs_are_valid():
    validate(QUICK, SCHEMA)
    validate(merged(QUICK, PAPER), SCHEMA)
    for overlay in ("cifar10-reconstruction.yaml", "tiny.yaml"):
        validate(merged(QUICK, load_yaml(REPO / "config" / overlay)), SCHEMA)
    assert QUICK["scale"] == "quick" and PAPER["scale"] == "paper"
    assert "data" not in PAPER  # site settings stay with the site (config/local.yaml)


def test_schema_defaults_are_the_quick_config():
    assert defaults(SCHEMA) == QUICK


def test_every_declared_stage_runs_by_default():
    """config/config.yaml names no stage: a stage that a galu/<paper>/stage.py declares is in
    the quick run (and in every scale whose overlay does not pick its stages) unedited."""
    assert "stages" not in QUICK_FILE
    assert SCHEMA["properties"]["stages"]["default"] == QUICK["stages"] == list(STAGE_NAMES)


@pytest.mark.parametrize("key,sub", list(leaves(SCHEMA)), ids=lambda v: str(v)[:40])
def test_every_key_is_documented_and_bounded(key, sub):
    assert sub.get("description"), f"{key} has no description"
    assert "default" in sub, f"{key} has no default"
    kind = sub.get("type")
    assert kind, f"{key} has no type"
    if kind in ("integer", "number"):
        assert {"minimum", "exclusiveMinimum"} & set(sub), f"{key} has no lower bound"
        assert {"maximum", "exclusiveMaximum"} & set(sub), f"{key} has no upper bound"
    if kind == "string":
        assert "enum" in sub or "pattern" in sub, f"{key} accepts any string"
    if kind == "object":
        # a free mapping (e.g. seeds_of) bounds its keys by propertyNames and its values
        free = "propertyNames" in sub and isinstance(sub.get("additionalProperties"), dict)
        assert sub.get("additionalProperties") is False or free, f"{key} accepts unknown keys"


def _setting(config: dict[str, Any], key: str) -> Any:
    """The value at dotted ``key`` of ``config``, or a sentinel when it is not set there."""
    for part in key.split("."):
        if not isinstance(config, dict) or part not in config:
            return "<not set>"
        config = config[part]
    return config


# Keys whose meaning no scale may change (a scale that did would judge another statement):
# the schema marks them with `x-same-at-every-scale`, saying why.
SAME_EVERYWHERE = [key for key, sub in leaves(SCHEMA) if "x-same-at-every-scale" in sub]


def test_a_key_the_schema_keeps_for_every_scale_is_set_by_no_overlay():
    assert "normalization.trainability.loss_fraction" in SAME_EVERYWHERE
    overlays = sorted(
        p for p in (REPO / "config").glob("*.yaml") if p.name not in ("config.yaml", "local.yaml")
    )
    assert len(overlays) >= 5  # paper, paper-cpu, paper-smoke, tiny, cifar10-reconstruction
    for key in SAME_EVERYWHERE:
        for overlay in overlays:
            assert _setting(load_yaml(overlay), key) == "<not set>", (key, overlay.name)
    # and the mark states a reason
    for key, sub in leaves(SCHEMA):
        if key in SAME_EVERYWHERE:
            assert len(str(sub["x-same-at-every-scale"]).split()) >= 5, key


def test_every_key_is_commented_in_the_quick_config():
    # Every line that sets a value (not a section header) has a comment line right above it.
    # A folded text's lines (after `key: >-`, indented deeper) are its value, not keys.
    lines = (REPO / "config/config.yaml").read_text().splitlines()
    folded_at = None  # the indentation of the key whose folded text is being read
    for i, line in enumerate(lines):
        stripped = line.strip()
        indent = len(line) - len(line.lstrip())
        if folded_at is not None and (not stripped or indent > folded_at):
            continue
        folded_at = None
        if stripped.endswith((">-", ">", "|", "|-")):
            folded_at = indent + (2 if stripped.startswith("- ") else 0)
        if stripped and not stripped.startswith(("#", "-")) and not stripped.endswith(":"):
            assert lines[i - 1].strip().startswith("#"), f"uncommented key: {line}"


def mutate(path: str, value: Any = None, delete: bool = False) -> dict[str, Any]:
    config = copy.deepcopy(QUICK)
    *parents, last = path.split(".")
    node = config
    for part in parents:
        node = node[part]
    if delete:
        del node[last]
    else:
        node[last] = value
    return config


BAD = [
    ("seed", -1, "seed: -1 is not allowed; expected integer in [0, 4294967295]"),
    ("seed", "zero", "seed: 'zero' is not allowed; expected integer"),
    ("seed", 1.5, "seed: 1.5 is not allowed; expected integer"),
    ("device", "gpu", "device: 'gpu' is not allowed; expected one of auto, cpu, cuda"),
    (
        "scale",
        "huge",
        "scale: 'huge' is not allowed; expected one of quick, paper, paper-cpu, paper-smoke, test",
    ),
    (
        "normalization.coefficients.activations",
        ["relu", "swish"],
        "normalization.coefficients.activations[1]: 'swish' is not allowed; "
        "expected one of relu, abs, tanh",
    ),
    (
        "normalization.coefficients.activations",
        [],
        "normalization.coefficients.activations: [] is not allowed",
    ),
    (
        "normalization.coefficients.activations",
        ["relu", "relu"],
        "normalization.coefficients.activations: ['relu', 'relu'] is not allowed",
    ),
    (
        "normalization.coefficients.quadrature_order",
        -3,
        "normalization.coefficients.quadrature_order: -3 is not allowed; "
        "expected integer in [2, 50]",
    ),
    (
        "normalization.coefficients.quadrature_order",
        "48",
        "normalization.coefficients.quadrature_order: '48' is not allowed; expected integer",
    ),
    (
        "normalization.coefficients.convergence_tolerance",
        0,
        "normalization.coefficients.convergence_tolerance: 0 is not allowed; "
        "expected number in (0, 0.001]",
    ),
    ("normalization.plot.x_max", -4.0, "normalization.plot.x_max: -4.0 is not allowed"),
    ("normalization.plot.colour", "red", "normalization.plot.colour: unknown key; allowed keys"),
    ("extra_stage", {}, "extra_stage: unknown key; allowed keys here: base, data, device"),
    ("normalization.plot", [1], "normalization.plot: [1] is not allowed; expected a mapping"),
    # A float with zero fraction is not an integer (the code uses these as counts and seeds).
    ("seed", 1e3, "seed: 1000.0 is not allowed; expected integer in [0, 4294967295]; write it"
     " as an integer (1000), not as a float"),
    ("normalization.coefficients.quadrature_order", 2.0,
     "quadrature_order: 2.0 is not allowed; expected integer in [2, 50]; write it as an"
     " integer (2)"),
    # NaN passes every bound and inf every lower bound: refused by type, named as such.
    ("normalization.plot.x_max", float("nan"), "normalization.plot.x_max: nan is not allowed;"
     " expected number in (0, 20]; non-finite numbers (nan, inf) are never valid"),
    ("normalization.plot.x_max", float("inf"), "x_max: inf is not allowed"),
    ("normalization.coefficients.convergence_tolerance", float("-inf"),
     "convergence_tolerance: -inf is not allowed"),
    ("seed", True, "seed: True is not allowed; expected integer"),
]  # fmt: skip


@pytest.mark.parametrize("path,value,message", BAD, ids=[b[0] + "=" + repr(b[1]) for b in BAD])
def test_bad_value_is_named_with_the_allowed_values(path, value, message):
    with pytest.raises(ConfigError) as error:
        validate(mutate(path, value), SCHEMA)
    assert message in str(error.value)


@pytest.mark.parametrize(
    "path", ["scale", "normalization.coefficients.quadrature_order", "normalization.plot"]
)
def test_missing_key_is_named(path):
    with pytest.raises(ConfigError, match=f"{path}: required key is missing"):
        validate(mutate(path, delete=True), SCHEMA)


def test_all_problems_are_reported_at_once():
    config = mutate("seed", -1)
    config["device"] = "gpu"
    with pytest.raises(ConfigError, match=r"2 problem\(s\)"):
        validate(config, SCHEMA)


@pytest.mark.parametrize(
    "override,message",
    [
        (["seed=-2"], "seed: -2 is not allowed"),
        (["device=tpu"], "device: 'tpu' is not allowed; expected one of auto, cpu, cuda"),
        (["normalization={'plot':{'x_max':'wide'}}"], "normalization.plot.x_max: 'wide'"),
        (["seed=1e3"], "seed: 1000.0 is not allowed; expected integer"),
        (["seed=1e999"], "seed: inf is not allowed; expected integer"),
    ],
)
def test_workflow_refuses_bad_config_before_any_job(override, message):
    proc = run([tool("snakemake"), "-n", "--cores", "1", "--config", *override], REPO, check=False)
    assert proc.returncode != 0
    assert message in proc.stderr
    assert "Traceback" not in proc.stderr + proc.stdout


def _leaf_keys(config: dict[str, Any], path: str = "") -> Iterator[str]:
    for key, value in config.items():
        here = f"{path}.{key}".lstrip(".")
        if isinstance(value, dict):
            yield from _leaf_keys(value, here)
        else:
            yield here


# What config/paper-cpu.yaml may change in config/paper.yaml: the scale, the device, the
# reductions list, and only what a 2-core machine cannot afford.
PAPER_CPU_MAY_CHANGE = re.compile(
    r"scale|overlay_on|device|reductions"
    r"|(memorization|generalization|scm\.simulation)\.gpu|normalization\.trainability\.gpus"
    r"|memorization\.ensemble_overhead"
    r"|memorization\.underparam\.seeds|memorization\.min_width\.\w+\.(probe_seeds|parts)"
    r"|generalization\.\w+\.seeds|generalization\.images\.(models|lrs|widths|gate_scales)"
    # (scm.simulation.block: how many inputs are drawn at once; the process is the same)
    r"|scm\.simulation\.(N|seeds|n_test|block)|scm\.\w+\.sim_alpha_max"
    # (normalization.wide: runs beside the paper's, at its other width; not a change to them)
    r"|normalization\.wide\.\w+"
    r"|normalization\.trainability\.(seeds_of\.)?\w+|normalization\.ablation\.(lrs\.\w+|gain_factors)"
)


def test_paper_cpu_keeps_the_papers_per_network_settings():
    overlay = load_yaml(REPO / "config/paper-cpu.yaml")
    config = merged(merged(QUICK, PAPER), overlay)
    validate(config, SCHEMA)
    assert config["scale"] == "paper-cpu" and config["device"] == "cpu"
    changed = [k for k in _leaf_keys(overlay) if not PAPER_CPU_MAY_CHANGE.fullmatch(k)]
    assert changed == [], f"paper-cpu.yaml changes per-network settings: {changed}"
    # Hence every setting that makes one network is the paper's: steps, rates, batch, data.
    assert config["memorization"]["underparam"]["steps"] == 100_000
    assert config["generalization"]["images"]["steps"] == 100_000
    assert config["generalization"]["images"]["train_subset"] == 0  # all 60,000 images
    # Nothing runs on a GPU; every reduction names claims that exist.
    assert not any(config[s]["gpu"] for s in ("memorization", "generalization"))
    assert not config["scm"]["simulation"]["gpu"]
    ids = {c["id"] for c in load_yaml(REPO / "workflow/claims.yaml")}
    named = [c for r in overlay["reductions"] for c in r["claims"]]
    assert set(named) <= ids


@pytest.mark.parametrize("overlay", ["config/paper-cpu.yaml", "config/paper-smoke.yaml"])
def test_an_overlay_without_its_base_is_refused_by_the_workflow_and_the_plan(overlay, capsys):
    """config/paper-cpu.yaml alone would run the quick settings under the paper-cpu name, into
    results/paper-cpu/: the overlay names its base, and both the workflow's checks and
    `galu plan` refuse it without that base before it; with it, nothing is said."""
    from galu.workflow.cli import main
    from galu.workflow.settings.consistency import overlay_problems
    from galu.workflow.settings.runconfig import run_config

    alone = run_config(REPO, [overlay])
    (problem,) = overlay_problems(alone)
    assert f"pass both, --configfile config/paper.yaml {overlay}" in problem
    assert overlay_problems(run_config(REPO, ["config/paper.yaml", overlay])) == []
    assert overlay_problems(run_config(REPO, [])) == []
    assert main(["plan", "--root", str(REPO), "--configfile", overlay]) == 2
    assert "is an overlay on config/paper.yaml" in capsys.readouterr().err


def test_seeds_of_names_only_trained_activations_and_positive_counts():
    bad = merged(QUICK, {"normalization": {"trainability": {"seeds_of": {"foo": 1, "elu": 0}}}})
    with pytest.raises(ConfigError) as err:
        validate(bad, SCHEMA)
    text = str(err.value)
    assert "seeds_of: 'foo' is not allowed; expected one of relu," in text
    assert "seeds_of.elu: 0 is not allowed; expected integer in [1, 100]" in text
    validate(merged(QUICK, {"normalization": {"trainability": {"seeds_of": {"elu": 1}}}}), SCHEMA)
