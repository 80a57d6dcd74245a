"""A job's code closure holds what can change its bytes, and nothing else.

The machinery (``galu/workflow/``) is outside every closure unless a module declares
``RESULT_CODE`` (galu.workflow.closure): adding a function to any other machinery module
changes no job's closure, so it reruns nothing; adding one to a declared module changes the
closures of the jobs that import it. Each declared module is named in docs/design.md and
pinned here, or by the test named in ``PINNED_BY``, on fixed inputs and exact bytes.
"""

from __future__ import annotations

import hashlib
import io
import shutil
from pathlib import Path

import matplotlib
import numpy as np
import pandas as pd
import pytest

from galu.workflow.closure import MACHINERY, CodeScanner
from galu.workflow.output import Run, figure_files, write_figure_bytes, write_table_bytes
from galu.workflow.stages import STAGES, sentence_modules

from conftest import REPO

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

# Each declared module -> the test that pins the bytes it writes (exact outputs of tiny inputs).
PINNED_BY = {
    "galu/workflow/output.py": "tests/test_result_code.py",
    "galu/workflow/cifar_job.py": "tests/test_normalization_deep_mlp.py",
    "galu/workflow/plot_job.py": "tests/test_result_code.py",
    "galu/workflow/job_checkpoints.py": "tests/test_checkpoints.py",
    "galu/workflow/data/prepare.py": "tests/test_result_code.py",
    "galu/workflow/data/convert.py": "tests/test_data_convert.py",
    "galu/workflow/data/registry.py": "tests/test_data_convert.py",
    "galu/workflow/claims.py": "tests/test_claims.py",
    "galu/workflow/claim_spec.py": "tests/test_claims.py",
    "galu/workflow/claims_text.py": "tests/test_claims.py",
    "galu/workflow/landing.py": "tests/test_landing.py",
    "galu/workflow/verdict_lines.py": "tests/test_verdict_lines.py",
    "galu/workflow/verdict_table.py": "tests/test_landing.py",
    "galu/workflow/observations.py": "tests/test_observations.py",
    "galu/workflow/precision.py": "tests/test_precision.py",
    "galu/workflow/rst.py": "tests/test_report_text.py",
    "galu/workflow/commits.py": "tests/test_result_code.py",
    "galu/workflow/scales.py": "tests/test_scales.py",
    "galu/workflow/stages.py": "tests/test_stages.py",
}


def machinery_modules(root: Path) -> list[Path]:
    return sorted((root / MACHINERY).rglob("*.py"))


def declared(root: Path) -> set[str]:
    scanner = CodeScanner(root)
    return {
        p.relative_to(root).as_posix()
        for p in machinery_modules(root)
        if scanner.info(p).result_code
    }


def job_closures(root: Path) -> dict[str, str]:
    """Every job script's closure hash, as the rules ask for them (the plot script once per
    figures module, the claims script with the sentence modules)."""
    # the parse cache (keyed by each file's bytes): only the edited file is parsed again
    scanner = CodeScanner(root, cache=root / "code-cache.json")
    units = {str(p.relative_to(root)): () for p in sorted((root / "scripts").glob("*.py"))}
    found = {s: scanner.closure(s, imports).sha256 for s, imports in units.items()}
    for stage in STAGES:
        module = f"galu.{stage.name}.figures"
        found[f"plot {module}"] = scanner.closure("scripts/plot.py", [module]).sha256
    claims = list(sentence_modules())
    found["claims"] = scanner.closure("scripts/report_claims.py", claims).sha256
    scanner.save_cache()
    return found


@pytest.fixture(scope="module")
def tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A copy of the code the closures are made of (galu/ and scripts/)."""
    root = tmp_path_factory.mktemp("code")
    for folder in ("galu", "scripts"):
        shutil.copytree(REPO / folder, root / folder, ignore=shutil.ignore_patterns("__pycache__"))
    return root


def test_every_declared_module_is_named_in_the_design_and_pinned_by_a_test():
    design = (REPO / "docs/design.md").read_text()
    assert declared(REPO) == set(PINNED_BY)
    for module, test in PINNED_BY.items():
        assert f"`{module.removeprefix('galu/workflow/')}`" in design, module
        assert (REPO / test).is_file()


def test_a_new_function_in_any_other_machinery_module_changes_no_closure(tree):
    before = job_closures(tree)
    result_code = declared(tree)
    others = [
        p for p in machinery_modules(tree) if p.relative_to(tree).as_posix() not in result_code
    ]
    assert len(others) > 30  # provenance, audit, preflight, publish, resume, cli, ...
    for path in others:
        original = path.read_text()
        path.write_text(original + "\n\ndef _added_for_the_test():\n    return 1\n")
        try:
            assert job_closures(tree) == before, path
        finally:
            path.write_text(original)


def test_a_new_function_in_a_declared_module_changes_the_closures_that_hold_it(tree):
    before = job_closures(tree)
    for module in sorted(declared(tree)):
        path = tree / module
        original = path.read_text()
        path.write_text(original + "\n\ndef _added_for_the_test():\n    return 1\n")
        try:
            after = job_closures(tree)
        finally:
            path.write_text(original)
        changed = {unit for unit in before if after[unit] != before[unit]}
        assert changed, f"{module} is in no job's closure: it need not declare RESULT_CODE"


def test_a_table_is_written_with_exact_bytes(tmp_path):
    table = pd.DataFrame(
        {"model": ["relu", "galu"], "k": [1, 20], "loss": [1 / 3, 2.5e-12], "ok": [True, False]}
    )
    path = tmp_path / "t.csv"
    write_table_bytes(table, path)
    assert path.read_bytes() == (
        b"model,k,loss,ok\nrelu,1,0.3333333333,True\ngalu,20,2.5e-12,False\n"
    )


def test_a_figure_is_written_with_the_same_bytes_every_time_and_no_date(tmp_path):
    fig, ax = plt.subplots(figsize=(1, 1), dpi=20)
    ax.plot([0, 1], [1, 0])
    ax.set_axis_off()
    digests = []
    for attempt in ("a", "b"):
        png = tmp_path / attempt / "f.png"
        png.parent.mkdir()
        for target, metadata in figure_files(png).items():
            write_figure_bytes(fig, target, metadata)
        digests.append([hashlib.sha256(p.read_bytes()).hexdigest() for p in figure_files(png)])
        assert b"CreationDate" not in png.with_suffix(".pdf").read_bytes()
        assert b"Software" not in png.read_bytes()
        pixels = plt.imread(io.BytesIO(png.read_bytes()))
        assert pixels.ndim == 3 and pixels[..., :3].min() < 0.7  # the line is drawn
    plt.close(fig)
    assert digests[0] == digests[1]
    assert list(figure_files("x/f.png")) == [Path("x/f.png"), Path("x/f.pdf")]


def test_run_writes_through_these_bytes_then_stamps(tmp_path):
    path = tmp_path / "t.csv"
    Run("make").write_csv(pd.DataFrame({"x": [0.1]}), path)
    assert path.read_bytes() == b"x\n0.1\n"
    assert (tmp_path / "t.csv.meta.json").is_file()


def test_a_processed_array_file_has_exact_bytes(tmp_path):
    """data/prepare.py's .npz: uncompressed, fixed member dates, so the same arrays give the
    same file on any machine and day."""
    from galu.workflow.data.prepare import write_npz

    path = tmp_path / "a.npz"
    write_npz(path, {"x": np.arange(6, dtype=np.uint8).reshape(2, 3), "y": np.array([1.5])})
    assert hashlib.sha256(path.read_bytes()).hexdigest() == (
        "09dc0618b805a8afce55dffe16ad50ebd4f599db0fdfc9170394aa20b0a84505"
    )
    with np.load(path) as loaded:
        assert loaded["x"].tolist() == [[0, 1, 2], [3, 4, 5]] and loaded["y"].tolist() == [1.5]


def test_the_commits_a_run_was_made_on_are_counted_from_its_sidecars():
    records = {
        "a.csv": {"git": {"commit": "c1", "dirty": False}},
        "b.csv": {"git": {"commit": "c1", "dirty": True}},
        "c.csv": {"git": {"commit": "c2"}},
        "d.csv": {"git": None},
    }
    from galu.workflow.commits import made_on

    assert made_on(records) == ({"c1": 2, "c2": 1, "unknown": 1}, ["b.csv"])


def test_the_seeds_a_figure_shows_follow_its_module_then_its_stage(tmp_path):
    from types import SimpleNamespace

    from galu.workflow.plot_job import shown_seeds

    tables = {"t": pd.DataFrame({"seed": [3, 1, 3, 2]})}
    own = SimpleNamespace(SHOWN_SEEDS={"f": lambda tables: [7]})
    assert shown_seeds(own, "f", tables, [5]) == [7]
    assert shown_seeds(SimpleNamespace(), "f", tables, [5]) == [5]
    assert shown_seeds(SimpleNamespace(), "f", tables, None) == [1, 2, 3]
