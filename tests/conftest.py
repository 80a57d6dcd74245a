"""Shared fixtures: the repository root and throw-away copies of it for workflow runs."""

from __future__ import annotations

import importlib
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import warm_commands
import yaml

from galu.workflow.provenance import git_state
from galu.workflow.settings.runconfig import merge

REPO = Path(__file__).resolve().parents[1]
# No job heartbeats in the tests (galu.workflow.feedback): scripts run in-process by unit
# tests would leave threads printing into every later test's output. test_feedback.py tests them
# directly.
os.environ["GALU_HEARTBEAT_S"] = "0"
BIN = Path(sys.executable).parent


def functions_named(text: str) -> set[str]:
    """The ``galu.<module>.<function>`` names quoted in ``text`` (``"..."`` in a rule file's
    figure table, ````...```` in a caption template), each checked to be a function that
    exists: the sidecars' computed_by and the captions must not name code that is not there."""
    found = set(re.findall(r'["`](galu\.[\w.]+)["`]', text))
    for path in sorted(found):
        module, function = path.rsplit(".", 1)
        assert callable(getattr(importlib.import_module(module), function, None)), path
    return found


def tool(name: str) -> str:
    """A console script installed beside this Python (snakemake, dvc, galu)."""
    path = BIN / name
    return str(path) if path.exists() else name


def repo_files() -> list[str]:
    """Tracked and untracked-but-not-ignored files: what a fresh clone would hold."""
    out = subprocess.run(
        ["git", "ls-files", "--cached", "--others", "--exclude-standard", "-z"],
        cwd=REPO,
        capture_output=True,
        check=True,
    )
    return [f for f in out.stdout.decode().split("\0") if f and (REPO / f).is_file()]


# Git-ignored site settings (mirrors, substitutes) travel with the copies: without them an
# offline machine could not obtain the datasets.
SITE_FILES = ("config/local.yaml",)


# A run kept in progress (`galu publish --in-progress`) is read only by `galu resume
# --in-progress` in a checkout that continues it, never by a test's copy; it is most of the
# repository's bytes (checkpoints, spectra), which every copy would write and `git add` would
# hash again. test_publish.py audits it in place, once.
NOT_COPIED = "published/in-progress/"


def copy_repo(dest: Path) -> Path:
    """Copy the working tree (as a clone would see it, plus the site settings, less
    :data:`NOT_COPIED`) into ``dest`` and commit it there, on top of the repository's
    history (a shared clone: no object is copied), so that the equivalence ledger's commits
    are there to verify its entries against, as in any clone."""
    subprocess.run(
        ["git", "clone", "-q", "--shared", "--no-checkout", str(REPO), str(dest)],
        check=True, capture_output=True,
    )  # fmt: skip
    site = [f for f in SITE_FILES if (REPO / f).is_file()]
    files = [f for f in repo_files() if not f.startswith(NOT_COPIED)]
    for rel in [*files, *site]:
        target = dest / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(REPO / rel, target)
    env = {
        **os.environ,
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@t",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@t",
        # A fixed date: two copies of the same tree get the same commit, so outputs that
        # name the commit (the report's landing page) are comparable byte for byte.
        "GIT_AUTHOR_DATE": "2026-01-01T00:00:00+00:00",
        "GIT_COMMITTER_DATE": "2026-01-01T00:00:00+00:00",
    }
    for cmd in (["git", "add", "-A"], ["git", "commit", "-q", "--allow-empty", "-m", "copy"]):
        subprocess.run(cmd, cwd=dest, check=True, env=env, capture_output=True)
    return dest


def run(cmd: list[str], cwd: Path, check: bool = True, **kw) -> subprocess.CompletedProcess:
    """Run a command, returning its output; on failure show what it printed. `snakemake` and
    `galu` are forked from the worker's warm server, which the runs they start use for their
    script jobs too (warm_commands.py)."""
    env = warm_commands.job_socket({**os.environ, "DVC_NO_ANALYTICS": "1", **kw.pop("env", {})})
    if set(kw) <= {"timeout"}:
        proc = warm_commands.run(cmd, cwd, env, **kw)
    else:
        proc = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, env=env, **kw)
    if check and proc.returncode != 0:
        raise AssertionError(
            f"{' '.join(cmd)} exited {proc.returncode}\n--- stdout\n{proc.stdout[-4000:]}"
            f"\n--- stderr\n{proc.stderr[-4000:]}"
        )
    return proc


# `make test` runs the suite on several workers (pytest-xdist, --dist loadfile). The unit of
# work is a module, so that its module-scoped fixtures are built once; the modules that read
# the shared finished run are one unit, so that it is built once and no test copies it while
# another changes it. (xdist's own loadgroup marks do not reach pytest 9's node ids.)
READS_FINISHED_RUN = ("test_dvc", "test_scales", "test_workflow")
# Seconds the longest units took (2026-12-05, 2-core machine, warm commands): they are handed
# out first, so that none is left to run alone at the end. Only their order matters.
LONGEST_UNITS = {
    "test_paper_smoke": 250,
    "finished_run": 117,
    "test_reliability_determinism": 82,
    "test_slurm": 77,
    "test_equivalence_workflow": 76,
    "test_reliability_kill": 69,
    "test_code_reruns": 47,
    "test_reliability_corruption": 47,
    "test_normalization_mean_field": 23,
    "test_resume": 21,
    "test_reliability_inputs": 17,
    "test_costs": 17,
    "test_warm_commands": 16,
    "test_reliability_concurrency": 16,
}


def work_unit(nodeid: str) -> str:
    """The unit of work of a test: its module's name, or "finished_run"."""
    module = Path(nodeid.split("::", 1)[0]).stem
    return "finished_run" if module in READS_FINISHED_RUN else module


@pytest.hookimpl(tryfirst=True, optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log):
    """With --dist loadfile, hand out whole units (work_unit), in collection order."""
    if config.getvalue("dist") != "loadfile":
        return None
    from xdist.scheduler import LoadScopeScheduling

    class ByUnit(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return work_unit(nodeid)

    return ByUnit(config, log)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    readers = {
        Path(i.nodeid.split("::")[0]).stem for i in items if "finished_run" in i.fixturenames
    }
    if not readers <= set(READS_FINISHED_RUN):
        raise pytest.UsageError(
            f"{sorted(readers - set(READS_FINISHED_RUN))} read the finished_run fixture:"
            " add them to READS_FINISHED_RUN in tests/conftest.py"
        )
    # Longest units first; the rest keep their order, each unit's tests together.
    first_seen: dict[str, int] = {}
    for item in items:
        first_seen.setdefault(work_unit(item.nodeid), len(first_seen))

    def order(item: pytest.Item) -> tuple[int, int]:
        unit = work_unit(item.nodeid)
        return (-LONGEST_UNITS.get(unit, 0), first_seen[unit])

    items.sort(key=order)


def pytest_report_header(config: pytest.Config) -> str:
    """The checkout the suite tests, the galu it imports and the stages that galu declares
    (tests/test_toy_stage.py runs a copy's own tests: they must test the copy)."""
    import galu
    from galu.workflow.stages import STAGE_NAMES

    where = Path(galu.__file__).resolve().parent
    return f"galu checkout: {REPO}; package: {where}; stages: {' '.join(STAGE_NAMES)}"


def strict_json(text: str) -> object:
    """``text`` parsed as strict JSON: NaN, Infinity and -Infinity are refused."""

    def refuse(constant: str) -> None:
        raise ValueError(f"{constant} is not JSON")

    return json.loads(text, parse_constant=refuse)


@pytest.fixture(autouse=True)
def fresh_git_state():
    """Sidecars written in-process take the commit of the working directory's repository, which
    galu caches per process (a job never changes directory; a test may): forget it per test."""
    git_state.cache_clear()


@pytest.fixture
def one_torch_thread():
    """One torch thread for the test: small matrices on shared CPUs, where extra OpenMP
    threads only spin against other jobs; the previous count is restored."""
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


@pytest.fixture
def repo_copy(tmp_path: Path) -> Path:
    return copy_repo(tmp_path / "repo")


# The shared finished run: the tiny configuration plus the two image datasets at a tiny
# size, so that it runs every rule the quick scale plans.
FINISHED_RUN = merge(
    yaml.safe_load((REPO / "config/tiny.yaml").read_text()),
    {
        "generalization": {
            "datasets": ["mnist", "fashion_mnist", "clusters", "linear", "parity"],
            "images": {"widths": [8], "seeds": 1, "steps": 20, "train_subset": 2000},
        }
    },
)


def site_configured_repo(dest: Path, settings: dict) -> Path:
    """A copy of the repository whose site settings (``config/local.yaml``, merged over
    config/config.yaml by the Snakefile) carry ``settings`` too, so that every plain command
    (``snakemake``, ``dvc repro``, ``galu``) runs with them."""
    root = copy_repo(dest)
    site = root / "config/local.yaml"
    found = (yaml.safe_load(site.read_text()) or {}) if site.is_file() else {}
    site.write_text(yaml.safe_dump(merge(found, settings)))
    return root


@pytest.fixture(scope="session")
def finished_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One full run of the workflow at ``FINISHED_RUN`` (every rule of the quick scale, seconds
    per job), shared by the tests that read a finished run.

    Tests that change files in it must work on a copy (``copy_of_run``) or restore it.
    """
    root = site_configured_repo(tmp_path_factory.mktemp("finished") / "repo", FINISHED_RUN)
    run([tool("snakemake"), "--cores", "2"], root)
    return root


def copy_of_run(run_root: Path, dest: Path) -> Path:
    """A copy of a finished run's checkout (outputs, Snakemake's records and mtimes
    included), for a test that changes it; the copy plans nothing the original does not."""
    shutil.copytree(run_root, dest, symlinks=True)
    return dest
