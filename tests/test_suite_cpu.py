"""benchmarks/suite_cpu.py's summary: CPU per module from the workers' rows."""

from __future__ import annotations

import importlib.util
import json

from conftest import REPO


def _module():
    spec = importlib.util.spec_from_file_location("suite_cpu", REPO / "benchmarks/suite_cpu.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_summary_sums_each_module_over_both_workers(tmp_path, capsys):
    rows = {
        "gw0": [["tests/test_a.py::test_x", 10.0, 6.0], ["tests/test_b.py::test_y", 2.0, 1.0]],
        "gw1": [["tests/test_a.py::test_z", 4.0, 3.0]],
    }
    for worker, found in rows.items():
        (tmp_path / f"rows-{worker}.json").write_text(json.dumps(found))
    _module().summarize(tmp_path, top=5)
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "3 tests, 10 s of CPU in all"
    assert lines[2].split() == ["test_a", "9.0", "90.0%", "14.0"]
    assert lines[3].split() == ["test_b", "1.0", "10.0%", "2.0"]
    assert len(lines) == 4
