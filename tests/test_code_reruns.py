"""Incremental reruns that follow the code, on the tiny configuration.

A scratch copy of the repository is marked up to date with placeholder outputs and
``snakemake --touch --forceall`` (which records every job's params, code included, in
Snakemake's metadata, as a real run would). Then one library file is edited at a time and
``snakemake -n`` must plan exactly the jobs whose code closure holds it, and their
dependants; a no-op, a comment/docstring-only edit and site settings plan nothing. The
audit is checked on a real (one-job) run: stale after an edit, naming the module, and
clean after the command it recommends.
"""

from __future__ import annotations

import json
import os
import re
import time
from collections import Counter
from contextlib import chdir
from pathlib import Path

import pytest
import yaml
from test_reliability_support import OVERLAY, TINY, smk, tiny_repo

from galu.normalization.stage import FIGURES as NORMALIZATION_FIGURES
from galu.workflow.output import Run
from galu.workflow.provenance import SIDECAR_SUFFIX
from galu.workflow.settings.sitekeys import gpu_may_be_present

from conftest import run, tool

pytestmark = pytest.mark.slow

QUIET = {**TINY, "report": {"on_success": False}}
SCM_PLOTS = {
    f"scm_plot_{n}": 1 for n in ("perceptron", "relu_k2m2", "k3m2", "relu_k2m3", "schedules")
}
NORM_CIFAR = {  # every job that reads data/processed/cifar10.npz, and what reads theirs
    "normalization_lr_sweep": 1,
    "normalization_train": 1,
    "normalization_trainability": 1,
    "normalization_spectra": 1,
    "normalization_correlations": 1,
    "normalization_plot_training": 1,
    "normalization_plot_max_depth": 1,
    "normalization_plot_layer_spectra": 1,
    "normalization_plot_jacobian": 1,
    "normalization_plot_correlations": 1,
    "normalization_ablation": 1,
    "normalization_ablation_table": 1,
    "normalization_plot_ablation": 1,
    "normalization_plot_depth_scales": 1,
}
MEM_ALL = {
    "memorization_underparam": 1,
    "memorization_search": 2,
    # the stacking jobs import only galu.memorization.search_parts: they rerun as dependants
    "memorization_search_table": 2,
    "memorization_min_width": 1,
    "memorization_plot_underparam": 1,
    "memorization_plot_min_width": 1,
    "memorization_plot_zero_error": 1,
}
GEN_SYNTHETIC = {
    "generalization_synthetic": 3,
    "generalization_accuracy": 1,
    "generalization_plot_clusters": 1,
    "generalization_plot_linear": 1,
    "generalization_plot_parity": 1,
}
NORM_PLOTS = {f"normalization_plot_{n}": 1 for n in NORMALIZATION_FIGURES}
PLOTS = {
    **SCM_PLOTS,
    **NORM_PLOTS,
    "memorization_plot_underparam": 1,
    "memorization_plot_min_width": 1,
    "memorization_plot_zero_error": 1,
    "generalization_plot_clusters": 1,
    "generalization_plot_linear": 1,
    "generalization_plot_parity": 1,
}


def code_edit(text: str) -> str:
    """A real change of the code: a new module-level constant before the first function,
    class or decorator."""
    at = re.search(r"\n(?=def |class |@)", text).start()
    return f"{text[:at]}\n_EDITED_FOR_THE_TEST = 1\n{text[at:]}"


def cosmetic_edit(text: str) -> str:
    """Comments, a docstring and blank lines only: the module's syntax tree is unchanged."""
    body = re.sub(r'^"""(.*?)"""', '"""Reworded docstring."""', text, count=1, flags=re.S)
    return f"# a new comment\n\n{body}\n# and another\n"


# file -> (edit, jobs `snakemake -n` plans: rule -> count; claims reads every stage's CSVs)
EDITS = {
    "galu/scm/odes.py": (
        code_edit,
        {
            "scm_ode": 5,
            "scm_simulation": 5,  # galu.scm.simulation imports generalization_error from the ODEs
            "scm_stability": 1,
            "scm_trajectories": 1,
            "scm_schedules": 1,  # the learning-rate schedules integrate the same ODEs
            **SCM_PLOTS,
            "claims": 1,
        },
    ),
    "galu/scm/figures.py": (code_edit, {**SCM_PLOTS}),
    "galu/memorization/figures.py": (
        code_edit,
        {f"memorization_plot_{n}": 1 for n in ("underparam", "min_width", "zero_error")},
    ),
    # the figures module draws Marchenko-Pastur's density from it: every normalization figure
    "galu/normalization/isometry.py": (
        code_edit,
        {"normalization_isometry": 1, **NORM_PLOTS, "claims": 1},
    ),
    "galu/normalization/figures.py": (code_edit, {**NORM_PLOTS}),
    # the training loop: the CIFAR-10 jobs that train and what reads them, not the
    # correlations of networks at initialization
    "galu/normalization/training.py": (
        code_edit,
        {**{k: n for k, n in NORM_CIFAR.items() if "correlations" not in k}, "claims": 1},
    ),
    # the width search: galu.memorization.experiments (the under-parameterized job too)
    # imports it
    "galu/memorization/width_search.py": (code_edit, {**MEM_ALL, "claims": 1}),
    "galu/generalization/tasks.py": (code_edit, {**GEN_SYNTHETIC, "claims": 1}),
    # the conversion makes the processed arrays (the download's archives are pinned by
    # their checksums: its code is not in the download's closure)
    "galu/workflow/data/convert.py": (code_edit, {"prepare": 1, **NORM_CIFAR, "claims": 1}),
    # machinery: provenance records, the audit, the pre-flight are in no job's closure
    "galu/workflow/provenance.py": (code_edit, {}),
    "galu/workflow/running/preflight.py": (code_edit, {}),
    "galu/workflow/data/fetch.py": (code_edit, {}),
    "galu/workflow/claims.py": (code_edit, {"claims": 1}),
    # the shared ensemble trainer: memorization and generalization training, not the plots
    "galu/ensembles/training.py": (code_edit, {**MEM_ALL, **GEN_SYNTHETIC, "claims": 1}),
    # package data: the style sheet re-renders every figure and nothing else
    "galu/styles/galu.mplstyle": (lambda text: text + "\nlines.linewidth: 1.7\n", PLOTS),
}


def planned(root: Path) -> Counter:
    """Rule -> number of jobs `snakemake -n` plans (rule all left out)."""
    out = smk(root, "-n").stdout
    if "Nothing to be done" in out:
        return Counter()
    table = out[out.index("Job stats:") : out.index("\ntotal")]
    rules = Counter({rule: int(n) for rule, n in re.findall(r"^(\w+)\s+(\d+)$", table, re.M)})
    rules.pop("all", None)
    return rules


def outputs_planned(root: Path) -> list[str]:
    out = smk(root, "-n").stdout
    found = set()
    for line in re.findall(r"^\s+output: (.+)$", out, flags=re.M):
        found.update(part.strip() for part in line.split(","))
    return sorted(found)


@pytest.fixture(scope="module")
def touched(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tiny-configuration copy whose every output exists and is up to date."""
    root = tiny_repo(tmp_path_factory.mktemp("reruns") / "repo", QUIET)
    # Placeholders with sealed sidecars: the pre-flight sets aside an output without one.
    placeholder = Run("placeholder")
    for rel in outputs_planned(root):
        if rel.endswith(SIDECAR_SUFFIX):
            continue  # written by the stamp of its output
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        # A download manifest must say which archives it lists (none here), or the
        # pre-flight sets it aside to fetch the dataset again.
        (root / rel).write_bytes(b'{"files": []}\n' if rel.endswith("/sources.json") else b"")
        with chdir(root):
            placeholder.stamp(rel)
    smk(root, "--touch", "--forceall", "--cores", "1")
    return root


def test_no_op_rerun_plans_nothing(touched):
    assert planned(touched) == Counter()


def plan_with_edit(root: Path, rel: str) -> None:
    """Apply ``EDITS[rel]``, assert the dry run plans exactly its jobs, and write the file back."""
    edit, expected = EDITS[rel]
    path = root / rel
    original = path.read_bytes()
    try:
        path.write_text(edit(original.decode()))
        assert planned(root) == Counter(expected)
    finally:
        path.write_bytes(original)


@pytest.mark.parametrize("rel", list(EDITS))
def test_a_library_edit_reruns_exactly_its_jobs_and_their_dependants(touched, rel):
    plan_with_edit(touched, rel)
    # (That undoing the edit plans nothing again: test_an_undone_edit_plans_nothing.)


def test_an_undone_edit_plans_nothing(touched):
    """An edit written back (same bytes, new mtime) plans nothing, after the edited code was
    hashed: closures follow content, and no cached hash of the edit outlives it."""
    plan_with_edit(touched, "galu/scm/odes.py")
    assert planned(touched) == Counter()


def test_a_script_touched_by_a_checkout_plans_nothing(touched):
    """A checkout or `git pull` rewrites a script (here the same bytes, a newer mtime; or a
    change the equivalence ledger vouches for): nothing reruns. Snakemake's own `code`
    trigger would rerun every job of the rule (for a script it compares the file's mtime
    with the outputs'), so profiles/default leaves it out and the closure hash decides."""
    path = touched / "scripts/scm_ode.py"
    path.write_bytes(path.read_bytes())
    later = time.time() + 5
    os.utime(path, (later, later))
    assert planned(touched) == Counter()


def test_comment_and_docstring_edits_rerun_nothing(touched):
    saved = {}
    try:
        for rel in (
            "galu/scm/odes.py",
            "galu/ensembles/training.py",
            "galu/workflow/provenance.py",
        ):
            saved[rel] = (touched / rel).read_bytes()
            (touched / rel).write_text(cosmetic_edit(saved[rel].decode()))
            assert (touched / rel).read_bytes() != saved[rel]
        assert planned(touched) == Counter()
    finally:
        for rel, data in saved.items():
            (touched / rel).write_bytes(data)


def test_site_settings_rerun_nothing_and_substitutes_do(touched):
    overlay = touched / OVERLAY
    original = overlay.read_text()
    site = yaml.safe_load(original)
    site["data"].update(timeout_s=7, retries=1, backoff_s=0.5, link=True, download=True)
    site["data"]["mirrors"] = [str(touched / "elsewhere"), "/work/shared/datasets"]
    if not gpu_may_be_present():  # auto and cpu are the same device here
        site["device"] = "cpu"
    # Scheduler time limits (CONTRIBUTING.md, "Which settings rerun jobs"): no number changes.
    site["memorization"]["underparam"]["runtime_min"] = 7
    site.setdefault("generalization", {}).setdefault("clusters", {})["runtime_min"] = 7
    site.setdefault("scm", {}).setdefault("simulation", {})["runtime_min"] = 7
    try:
        overlay.write_text(yaml.safe_dump(site))
        assert planned(touched) == Counter()
        chosen = yaml.safe_load(original)
        chosen["data"]["substitutes"] = []  # the official CIFAR-10 bytes (or a substitute)
        local = touched / "config/local.yaml"
        had = yaml.safe_load(local.read_text()) if local.is_file() else {}
        if not (had.get("data") or {}).get("substitutes"):
            pytest.skip("no substitute configured on this machine to switch off")
        overlay.write_text(yaml.safe_dump(chosen))
        assert planned(touched) == Counter({"download": 1, "prepare": 1, **NORM_CIFAR, "claims": 1})
    finally:
        overlay.write_text(original)


def test_audit_names_stale_outputs_and_its_advice_fixes_them(tmp_path):
    """A real one-job run (the SCM fixed points); an edit of galu/scm/stability.py makes the
    CSV stale, the audit names the module and exits 1; its command (with the run's target
    and overlay) remakes it, after which the audit is clean. Same for a hand edit."""
    root = tiny_repo(tmp_path / "repo", QUIET)
    target = "results/scm/stability.csv"
    smk(root, target, "--cores", "1")
    galu = tool("galu")
    assert run([galu, "audit"], root).returncode == 0
    record = json.loads((root / f"{target}.meta.json").read_text())
    assert record["code"]["script"] == "scripts/scm_stability.py"
    assert "galu/scm/stability.py" in record["code"]["files"]
    assert "code" not in record["params"]

    module = root / "galu/scm/stability.py"
    module.write_text(code_edit(module.read_text()))
    audit = run([galu, "audit"], root, check=False)
    assert audit.returncode == 1
    assert (
        f"PROBLEM {target}: stale: made with older code; changed since: galu/scm/stability.py\n"
        in audit.stdout
    )
    explain = run([galu, "audit", "--explain", target], root, check=False)
    assert explain.returncode == 1 and "changed since: galu/scm/stability.py" in explain.stdout
    [advice] = re.findall(r"^To rebuild them and what depends on them: (.+)$", audit.stdout, re.M)
    assert advice == f"snakemake --cores all --forcerun {target}"
    smk(root, target, *advice.split()[1:])
    assert run([galu, "audit"], root).returncode == 0

    with open(root / target, "a") as handle:  # a hand edit
        handle.write("0,0\n")
    audit = run([galu, "audit"], root, check=False)
    assert audit.returncode == 1 and "changed after it was written" in audit.stdout
    [advice] = re.findall(r"^To rebuild them and what depends on them: (.+)$", audit.stdout, re.M)
    smk(root, target, *advice.split()[1:])
    assert run([galu, "audit"], root).returncode == 0
    # A plain rerun repairs it too: its pre-flight sets the edited output aside and remakes it.
    with open(root / target, "a") as handle:
        handle.write("0,0\n")
    plain = smk(root, target, "--cores", "1")
    assert f"galu: {target}: changed after it was written" in plain.stderr
    assert run([galu, "audit"], root).returncode == 0
