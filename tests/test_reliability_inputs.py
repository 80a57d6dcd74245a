"""Bad input: each bad configuration or command line gets one clear error before any job runs.

Every case goes through ``snakemake -n`` in a copy of the repository, as a user would type it,
and must exit non-zero with exactly one message that names the key (or target) and the
value, and with no Python traceback. A valid control run proves the harness can tell
success from failure. The cases run two at a time, once per module.
"""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import warm_commands
import yaml

from galu.workflow.settings.config import ConfigError, load_yaml
from galu.workflow.settings.consistency import check_consistency, consistency_problems
from galu.workflow.settings.runconfig import merge

from conftest import REPO, copy_repo, tool

SCHEMA_FAIL = "(1 problem(s))"


@dataclass(frozen=True)
class Case:
    """One bad input: a config overlay and/or extra arguments, and the message it must give."""

    id: str
    expect: str
    overlay: Any = None
    args: tuple[str, ...] = ()
    env: dict[str, str] = field(default_factory=dict)
    one_problem: bool = True  # a galu config message must report exactly one problem
    by_galu: bool = True  # the message is galu's (False: Snakemake's own, for command lines)
    parse_time: bool = True  # refused while the workflow is parsed (before the DAG is built)


def _sub(**kw: Any) -> dict[str, Any]:
    entry = {
        "dataset": "mnist",
        "file": "train-images-idx3-ubyte.gz",
        "path": "copy.gz",
        "sha256": "0" * 64,
        "note": "test",
    }
    return {"data": {"substitutes": [{**entry, **kw}]}}


def _norm(section: str, **kw: Any) -> dict[str, Any]:
    return {"normalization": {section: kw}}


A_FILE = str(Path(__file__).resolve())  # exists everywhere the tests run, and is not a folder

CASES = [
    # -- types and ranges --
    Case(
        "seed_negative",
        "seed: -1 is not allowed; expected integer in [0, 4294967295]",
        {"seed": -1},
    ),
    Case("seed_too_large", "seed: 4294967296 is not allowed", {"seed": 2**32}),
    Case("seed_not_a_number", "seed: 'zero' is not allowed; expected integer", {"seed": "zero"}),
    Case("seed_boolean", "seed: True is not allowed; expected integer", {"seed": True}),
    Case("seed_fraction", "seed: 1.5 is not allowed; expected integer", {"seed": 1.5}),
    Case(
        "scale_unknown",
        "scale: 'huge' is not allowed; expected one of quick, paper",
        {"scale": "huge"},
    ),
    Case(
        "device_unknown",
        "device: 'gpu' is not allowed; expected one of auto, cpu, cuda",
        {"device": "gpu"},
    ),
    Case(
        "ode_tolerance_out_of_range",
        "scm.ode.rtol: 0.5 is not allowed; expected number in (0, 0.001]",
        {"scm": {"ode": {"rtol": 0.5}}},
    ),
    Case(
        "ode_method_unknown",
        "scm.ode.method: 'Euler' is not allowed; expected one of LSODA",
        {"scm": {"ode": {"method": "Euler"}}},
    ),
    Case(
        "momentum_at_its_exclusive_bound",
        "normalization.trainability.momentum: 1.0 is not allowed; expected number in [0, 1)",
        _norm("trainability", momentum=1.0),
    ),
    Case(
        "width_zero",
        "generalization.images.widths[0]: 0 is not allowed; expected integer in [1, 4096]",
        {"generalization": {"images": {"widths": [0]}}},
    ),
    Case(
        "timeout_zero",
        "data.timeout_s: 0 is not allowed; expected number in (0, 3600]",
        {"data": {"timeout_s": 0}},
    ),
    Case(
        "download_not_boolean",
        "data.download: 'maybe' is not allowed; expected boolean",
        {"data": {"download": "maybe"}},
    ),
    Case(
        "section_not_a_mapping",
        "normalization: 5 is not allowed; expected a mapping with keys",
        {"normalization": 5},
    ),
    # -- unknown keys --
    Case(
        "unknown_top_level_key",
        "seeds: unknown key; allowed keys here: base, data, device",
        {"seeds": 3},
    ),
    Case(
        "misspelt_section", "normalisation: unknown key; allowed keys here:", {"normalisation": {}}
    ),
    Case(
        "unknown_nested_key",
        "normalization.plot.colour: unknown key; allowed keys here: x_max",
        _norm("plot", colour="red"),
    ),
    # -- empty or repeated grids --
    Case(
        "empty_depth_grid",
        "normalization.trainability.depths: [] is not allowed",
        _norm("trainability", depths=[]),
    ),
    Case(
        "empty_learning_rate_grid",
        "normalization.trainability.lr_sweep.lrs: [] is not allowed",
        _norm("trainability", lr_sweep={"lrs": []}),
    ),
    Case(
        "empty_dataset_list",
        "generalization.datasets: [] is not allowed",
        {"generalization": {"datasets": []}},
    ),
    Case(
        "repeated_grid_value",
        "normalization.trainability.depths: [10, 10] is not allowed",
        _norm("trainability", depths=[10, 10]),
    ),
    # -- mirrors and dataset names --
    Case(
        "mirror_plain_http",
        "data.mirrors[0]: 'http://example.org/d' is not allowed",
        {"data": {"mirrors": ["http://example.org/d"]}},
    ),
    Case(
        "mirror_is_a_file",
        f"data.mirrors[0]: {A_FILE!r} is a file, not a folder",
        {"data": {"mirrors": [A_FILE]}},
    ),
    Case(
        "mirror_other_scheme",
        "data.mirrors[0]: 'ftp://example.org/d' is neither a folder nor an https URL",
        {"data": {"mirrors": ["ftp://example.org/d"]}},
    ),
    Case(
        "mirrors_not_a_list",
        "data.mirrors: '/srv/data' is not allowed; expected a list",
        {"data": {"mirrors": "/srv/data"}},
    ),
    Case(
        "mirror_from_environment",
        f"environment variable GALU_DATA_MIRRORS: {A_FILE!r} is a file, not a folder",
        env={"GALU_DATA_MIRRORS": A_FILE},
    ),
    Case(
        "dataset_with_path_separator",
        "generalization.datasets[0]: '../mnist' is not allowed; expected one of mnist",
        {"generalization": {"datasets": ["../mnist"]}},
    ),
    Case(
        "substitute_dataset_with_path_separator",
        "data.substitutes[0].dataset: 'mnist/../cifar10' is not allowed",
        _sub(dataset="mnist/../cifar10"),
    ),
    Case(
        "substitute_checksum_malformed",
        "data.substitutes[0].sha256: 'abc' is not allowed",
        _sub(sha256="abc"),
    ),
    # -- contradictory settings --
    Case(
        "cuda_without_cuda",
        "device: 'cuda' was requested but no CUDA device is visible",
        {"device": "cuda"},
        env={"CUDA_VISIBLE_DEVICES": ""},
        one_problem=False,
    ),
    Case(
        "gpu_request_with_cpu_device",
        "normalization.trainability.gpus: 1 asks the scheduler for a GPU, but device: 'cpu' never",
        {"device": "cpu", "normalization": {"trainability": {"gpus": 1}}},
    ),
    Case(
        "substitute_file_of_another_dataset",
        "data.substitutes[0].file 'train-images-idx3-ubyte.gz' is not one of: cifar-10-binary",
        _sub(dataset="cifar10"),
    ),
    Case(
        "scm_shapes_disagree",
        "scm.relu_k2m2: R0 is 1 x 2 (K = 1 student units, M = 2 teacher units) but Q0 is 2 x 2",
        {"scm": {"relu_k2m2": {"R0": [[0.001, 0.0]]}}},
    ),
    Case(
        "scm_overlaps_not_symmetric",
        "scm.relu_k2m2.Q0: [[0.2, 0.1], [0.0, 0.3]] is not symmetric",
        {"scm": {"relu_k2m2": {"Q0": [[0.2, 0.1], [0.0, 0.3]]}}},
    ),
    Case(
        "scm_start_no_student_has",
        "scm.perceptron: no student has these overlaps",
        {"scm": {"perceptron": {"R0": [[0.9]], "Q0": [[0.25]]}}},
    ),
    Case(
        "stability_range_reversed",
        "scm.stability: eta_min = 2.0 is larger than eta_max = 1.0; swap them",
        {"scm": {"stability": {"eta_min": 2.0, "eta_max": 1.0}}},
    ),
    Case(
        "search_range_reversed",
        "memorization.min_width.mse: width_min = 64 is larger than width_max = 8",
        {"memorization": {"min_width": {"mse": {"width_min": 64, "width_max": 8}}}},
    ),
    Case(
        "grid_with_no_qualifying_point",
        "memorization.underparam: no point has k * d <= m",
        {"memorization": {"underparam": {"ms": [8], "ds": [4], "ks": [4]}}},
    ),
    Case(
        "parity_subset_larger_than_input",
        "generalization.parity.subset_sizes: [40] exceed(s) dim = 30",
        {"generalization": {"parity": {"subset_sizes": [2, 40]}}},
    ),
    # -- command lines --
    Case(
        "config_value_empty",
        "seed: None is not allowed; expected integer",
        args=("--config", "seed="),
    ),
    Case(
        "config_value_not_a_number",
        "seed: 'abc' is not allowed; expected integer",
        args=("--config", "seed=abc"),
    ),
    Case(
        "config_replaces_a_section",
        "normalization: 5 is not allowed; expected a mapping",
        args=("--config", "normalization=5"),
    ),
    Case(
        "unknown_target",
        "No rule to produce no_such_target",
        args=("no_such_target",),
        parse_time=False,
        by_galu=False,
    ),
    Case(
        "target_dataset_with_path_separator",
        "No rule to produce data/processed/mn/ist.npz",
        args=("data/processed/mn/ist.npz",),
        parse_time=False,
        by_galu=False,
    ),
    Case(
        "cores_not_a_number",
        "Error parsing number of cores (--cores, -c): must be integer or 'all'",
        args=("--cores", "abc"),
        by_galu=False,
    ),
    Case(
        "configfile_not_yaml",
        "Config file is not valid JSON or YAML",
        overlay="seed: [1, 2\n  x: :\n",
        by_galu=False,
    ),
    Case(
        "configfile_top_level_list",
        "Config file must be given as JSON or YAML with keys at top level",
        overlay=[1, 2],
        by_galu=False,
    ),
]

# Snakemake 9.27 itself prints a traceback for these before it reads the workflow, so no
# galu code can intercept them; strict xfail turns green into a failure once upstream fixes it.
UPSTREAM = [
    Case(
        "config_without_equals_sign",
        "Config entries have to be defined as name=value pairs",
        args=("--config", "seed"),
    ),
    Case(
        "configfile_missing",
        "No such file or directory",
        args=("--configfile", "no/such/config.yaml"),
    ),
]


@dataclass(frozen=True)
class Outcome:
    returncode: int
    output: str


def _command(case: Case, folder: Path) -> list[str]:
    cmd = [tool("snakemake"), "-n", "--cores", "1"]
    if case.overlay is not None:
        path = folder / f"{case.id}.yaml"
        text = case.overlay if isinstance(case.overlay, str) else yaml.safe_dump(case.overlay)
        path.write_text(text)
        cmd += ["--configfile", str(path)]
    if "--cores" in case.args:
        cmd = cmd[:2]
    return [*cmd, *case.args]


def _run(case: Case, root: Path, folder: Path) -> Outcome:
    env = {k: v for k, v in os.environ.items() if k != "GALU_DATA_MIRRORS"}
    proc = warm_commands.run(_command(case, folder), root, {**env, **case.env}, timeout=300)
    return Outcome(proc.returncode, proc.stdout + proc.stderr)


CONTROL = Case("valid_control", "", args=("results/normalization/coefficients.csv",))


@pytest.fixture(scope="module")
def outcomes(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Outcome]:
    base = tmp_path_factory.mktemp("inputs")
    root = copy_repo(base / "repo")
    overlays = base / "overlays"
    overlays.mkdir()
    cases = [CONTROL, *CASES, *UPSTREAM]
    with ThreadPoolExecutor(2) as pool:
        results = list(pool.map(lambda c: _run(c, root, overlays), cases))
    # A dry run of any of these cases writes no output, log or dataset file.
    made = [
        p.name for p in (root / d for d in ("results", "figures", "logs", "data")) if p.exists()
    ]
    assert made == [], f"a bad-input dry run created {made}"
    return {case.id: outcome for case, outcome in zip(cases, results, strict=True)}


def test_there_are_at_least_25_cases():
    assert len({c.id for c in CASES}) == len(CASES) >= 25


@pytest.mark.parametrize(
    "overlay", ["paper.yaml", "cifar10-reconstruction.yaml", "tiny.yaml", None]
)
def test_the_shipped_configurations_are_consistent(overlay):
    config = load_yaml(REPO / "config/config.yaml")
    if overlay:
        config = merge(config, load_yaml(REPO / "config" / overlay))
    assert consistency_problems(config, environ={}) == []


def test_every_contradiction_is_reported_at_once():
    config = merge(
        load_yaml(REPO / "config/config.yaml"),
        {"generalization": {"parity": {"subset_sizes": [99]}},
         "scm": {"stability": {"eta_min": 9.0, "eta_max": 1.0}}},
    )  # fmt: skip
    with pytest.raises(ConfigError, match=r"contradictory configuration \(2 problem"):
        check_consistency(config, environ={})


@pytest.mark.slow
def test_the_valid_control_passes(outcomes):
    control = outcomes[CONTROL.id]
    assert control.returncode == 0, control.output
    assert "normalization_coefficients" in control.output


@pytest.mark.slow
@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_bad_input_gets_one_clear_error_before_any_job(case, outcomes):
    outcome = outcomes[case.id]
    assert outcome.returncode != 0, outcome.output
    assert "Traceback" not in outcome.output, outcome.output
    assert outcome.output.count(case.expect) == 1, outcome.output
    if case.by_galu:
        galu_lines = [line for line in outcome.output.splitlines() if line.startswith("galu:")]
        assert len(galu_lines) == 1, outcome.output
        if case.one_problem:
            assert SCHEMA_FAIL in galu_lines[0], outcome.output
    if case.parse_time:  # refused before Snakemake even plans the jobs
        assert "Building DAG of jobs" not in outcome.output, outcome.output
    assert "Job stats" not in outcome.output  # no job was planned, let alone run


@pytest.mark.slow
@pytest.mark.parametrize(
    "case",
    [
        pytest.param(c, marks=pytest.mark.xfail(strict=True, reason="Snakemake's own traceback"))
        for c in UPSTREAM
    ],
    ids=lambda c: c.id,
)
def test_upstream_command_line_errors(case, outcomes):
    outcome = outcomes[case.id]
    assert outcome.returncode != 0
    assert case.expect in outcome.output
    assert "Traceback" not in outcome.output
