"""Each scale its own output root (galu/workflow/scales.py): the path mapping, and two runs of
different scales in one copy leaving each other's bytes alone."""

from __future__ import annotations

import pytest

from galu.workflow.scales import OutputRoot, scaled, unscaled


@pytest.mark.parametrize(
    ("path", "scale", "expected"),
    [
        ("results/scm/trajectories.csv", "quick", "results/scm/trajectories.csv"),
        ("results/scm/trajectories.csv", "paper-cpu", "results/paper-cpu/scm/trajectories.csv"),
        ("figures/scm/{name}.png", "paper", "figures/paper/scm/{name}.png"),
        ("logs/benchmarks/scm/x.tsv", "paper", "logs/paper/benchmarks/scm/x.tsv"),
        ("results/claims.csv", "paper", "results/paper/claims.csv"),
        # datasets are shared by every scale
        ("data/processed/mnist.npz", "paper", "data/processed/mnist.npz"),
        ("README.md", "paper", "README.md"),
    ],
)
def test_scaled_paths_and_their_inverse(path, scale, expected):
    assert scaled(path, scale) == expected
    assert unscaled(expected, scale) == path


def test_no_path_of_one_scale_is_a_path_of_another():
    contract = ["results/claims.csv", "figures/scm/k3m2.png", "logs/scm/stability.log"]
    scales = ["quick", "paper", "paper-cpu", "test"]
    paths = [scaled(p, s) for p in contract for s in scales]
    assert len(set(paths)) == len(paths)


def test_output_root_joins_contract_paths_under_the_scale(tmp_path):
    root = OutputRoot(tmp_path, "paper-cpu")
    assert root / "results/scm/stability.csv" == tmp_path / "results/paper-cpu/scm/stability.csv"
    assert root.relative("figures/x.png") == "figures/paper-cpu/x.png"
    assert OutputRoot(tmp_path) / "results/claims.csv" == tmp_path / "results/claims.csv"


def _planned_outputs(dry_run: str) -> list[str]:
    """The outputs a ``snakemake -n`` run lists (its ``output:`` lines)."""
    found = []
    for line in dry_run.splitlines():
        if line.strip().startswith("output:"):
            found += [p.strip() for p in line.split(":", 1)[1].split(",")]
    return found


@pytest.mark.slow
def test_a_quick_run_and_another_scale_leave_each_other_untouched(finished_run, tmp_path):
    from test_reliability_support import snapshot

    from conftest import copy_of_run, run, tool

    root = copy_of_run(finished_run, tmp_path / "repo")  # a quick-scale run, at tiny sizes
    smk = lambda root, *args: run([tool("snakemake"), *args], root)
    # The other scale runs one stage (its claims, landing page and report all the same).
    other = ("--config", "scale=paper-cpu", "stages=[scm]")
    quick = snapshot(root)
    assert "results/claims.csv" in quick and "results/report.zip" in quick
    # The other scale plans only its own outputs, none of the quick run's.
    planned = _planned_outputs(smk(root, "-n", *other).stdout)
    assert planned and all(
        p.startswith(("results/paper-cpu/", "figures/paper-cpu/")) for p in planned
    ), [p for p in planned if "paper-cpu" not in p]
    smk(root, "--cores", "2", *other)
    after = snapshot(root)
    # Every byte and mtime of the quick run is as it was; the other run has its own tables.
    assert {p: after[p] for p in quick} == quick
    made = set(after) - set(quick)
    assert "results/paper-cpu/claims.csv" in made and "results/paper-cpu/report.zip" in made
    assert all(p.startswith(("results/paper-cpu/", "figures/paper-cpu/")) for p in made)
    assert (root / "logs/paper-cpu/benchmarks/report/claims.tsv").is_file()
    # Each scale is up to date on its own: neither plans the other's jobs.
    for args in ((), other):
        assert _planned_outputs(smk(root, "-n", *args).stdout) == []


def test_the_scale_of_a_run_is_the_last_overlay_that_sets_it(tmp_path):
    from galu.workflow.scales import scale_of

    (tmp_path / "a.yaml").write_text("scale: paper\n")
    (tmp_path / "b.yaml").write_text("scale: paper-cpu\n")
    (tmp_path / "c.yaml").write_text("seed: 3\n")
    assert scale_of([]) == "quick"
    assert scale_of([tmp_path / "a.yaml", tmp_path / "b.yaml", tmp_path / "c.yaml"]) == "paper-cpu"
    assert scale_of([tmp_path / "b.yaml", tmp_path / "a.yaml"]) == "paper"
