"""Outputs whose inputs were rewritten with the same bytes keep their place
(galu/workflow/running/mtimes.py, issue #61): Snakemake's mtime trigger answered by the sidecars."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

from galu.workflow.running.mtimes import refresh

T0 = 1_700_000_000.0


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _made(root: Path, path: str, data: bytes, inputs: list[str], at: float) -> None:
    """``path`` with its sidecar recording ``inputs`` as they are now, both dated ``at``."""
    out = root / path
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_bytes(data)
    record = {
        "output": {"path": path, "sha256": _sha(data)},
        "inputs": [{"path": i, "sha256": _sha((root / i).read_bytes())} for i in inputs],
    }
    side = root / f"{path}.meta.json"
    side.write_text(json.dumps(record))
    for p in (out, side):
        os.utime(p, (at, at))


def _chain(root: Path) -> None:
    """data/x.npz -> results/b.csv -> figures/c.png, made in that order."""
    _made(root, "data/x.npz", b"array", [], T0)
    _made(root, "results/b.csv", b"table", ["data/x.npz"], T0 + 10)
    _made(root, "figures/c.png", b"figure", ["results/b.csv"], T0 + 20)


def _rewrite(path: Path, data: bytes, at: float) -> None:
    path.write_bytes(data)
    os.utime(path, (at, at))


def _benchmark(root: Path) -> Path:
    """A job's benchmark file, which Snakemake counts among its outputs' times."""
    bench = root / "logs/paper-cpu/benchmarks/b.tsv"
    bench.parent.mkdir(parents=True)
    bench.write_text("s\n1\n")
    os.utime(bench, (T0 + 10, T0 + 10))
    return bench


def test_an_input_rewritten_with_its_bytes_keeps_the_chain_below_it(tmp_path):
    _chain(tmp_path)
    bench = _benchmark(tmp_path)
    _rewrite(tmp_path / "data/x.npz", b"array", T0 + 100)  # same bytes, newer
    kept = refresh(tmp_path, now=T0 + 200)
    assert kept == [Path("results/b.csv"), Path("figures/c.png")]
    for path in ("results/b.csv", "results/b.csv.meta.json", "figures/c.png", bench):
        assert (tmp_path / path).stat().st_mtime == T0 + 200
    assert (tmp_path / "results/b.csv").read_bytes() == b"table"  # times only
    assert refresh(tmp_path, now=T0 + 300) == []  # nothing newer any more


def test_an_input_whose_bytes_changed_is_left_to_rerun_its_consumers(tmp_path):
    _chain(tmp_path)
    _rewrite(tmp_path / "data/x.npz", b"other array", T0 + 100)
    assert refresh(tmp_path, now=T0 + 200) == []
    assert (tmp_path / "results/b.csv").stat().st_mtime == T0 + 10
    # nor a consumer refreshed past it, when its other input only changed in time
    _made(tmp_path, "results/d.csv", b"both", ["data/x.npz", "results/b.csv"], T0 + 300)
    _rewrite(tmp_path / "data/x.npz", b"array", T0 + 400)  # differs from what d recorded
    _rewrite(tmp_path / "results/b.csv", b"table", T0 + 400)
    assert Path("results/d.csv") not in refresh(tmp_path, now=T0 + 500)


def test_an_output_or_sidecar_that_cannot_vouch_is_not_refreshed(tmp_path):
    _chain(tmp_path)
    _rewrite(tmp_path / "results/b.csv", b"tampered", T0 + 15)  # its own bytes changed
    _rewrite(tmp_path / "data/x.npz", b"array", T0 + 100)
    assert refresh(tmp_path, now=T0 + 200) == []
    # a sidecar describing another file, or not a sidecar at all
    _chain(tmp_path)
    side = tmp_path / "results/b.csv.meta.json"
    record = json.loads(side.read_text())
    side.write_text(json.dumps({**record, "output": {**record["output"], "path": "results/e.csv"}}))
    (tmp_path / "figures/c.png.meta.json").write_text("{broken")
    _rewrite(tmp_path / "data/x.npz", b"array", T0 + 100)
    assert refresh(tmp_path, now=T0 + 200) == []


def test_an_input_a_little_ahead_of_the_clock_is_not_newer_than_what_it_refreshes(tmp_path):
    _chain(tmp_path)
    _rewrite(tmp_path / "data/x.npz", b"array", T0 + 260)  # written on a clock 60 s ahead
    assert len(refresh(tmp_path, now=T0 + 200)) == 2
    for path in ("results/b.csv", "figures/c.png", "figures/c.png.meta.json"):
        assert (tmp_path / path).stat().st_mtime == T0 + 260


def test_an_output_with_no_recorded_input_or_none_newer_is_left_alone(tmp_path):
    _chain(tmp_path)
    bench = _benchmark(tmp_path)
    assert refresh(tmp_path, now=T0 + 200) == []
    assert (tmp_path / "data/x.npz").stat().st_mtime == T0
    assert bench.stat().st_mtime == T0 + 10  # nothing refreshed, nothing touched
