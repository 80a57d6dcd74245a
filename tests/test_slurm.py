"""The workflow on a real single-node SLURM cluster (ci/slurm/start.sh), GPUs included.

A tiny configuration of the normalization coefficients stage runs through
snakemake-executor-plugin-slurm with profiles/slurm (plus profiles/slurm-ci for the test
cluster); SLURM's accounting (sacct) is the evidence of what ran where.

Starting the cluster installs Debian packages and starts daemons as root, so it happens only
when asked: ``GALU_TEST_SLURM=1`` (``.ci/run`` sets it). Without it the tests skip with
``OPT_IN_REASON``. Asked for, they skip with the reason when the cluster cannot be started (not
root, no packages, no plugin), or fail instead with CI=true.
"""

from __future__ import annotations

import importlib.util
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path

import pandas as pd
import pytest

from conftest import REPO, copy_repo, run, tool

pytestmark = [pytest.mark.slurm, pytest.mark.slow]

CI = os.environ.get("CI", "").lower() == "true"
OPT_IN = "GALU_TEST_SLURM"
OPT_IN_REASON = (
    f"the SLURM tests install and start slurm-wlm, slurmdbd, munge and mariadb-server as root;"
    f" set {OPT_IN}=1 to run them"
)
START, STOP = REPO / "ci/slurm/start.sh", REPO / "ci/slurm/stop.sh"
TARGETS = ["results/normalization/coefficients.csv", "figures/normalization/activations.png"]
RULES = {"normalization_coefficients", "normalization_plot_coefficients"}
GPU_RULE = "normalization_coefficients"  # today's stand-in for a GPU rule (test-only gpu=1)
ACTIVATIONS = ["relu", "tanh", "gelu"]  # the tiny config: three of the eight activations
SLURM = [
    "--profile", "profiles/slurm",
    "--profile", "profiles/slurm-ci",
    "--set-resources", f"{GPU_RULE}:gpu=1",
]  # fmt: skip


def unavailable(reason: str) -> None:
    """Skip with the reason on a developer machine; in CI the cluster must come up."""
    if CI:
        pytest.fail(f"CI=true but the SLURM test cluster is unavailable: {reason}")
    pytest.skip(f"single-node SLURM unavailable: {reason}")


@pytest.fixture(scope="session")
def slurm_cluster() -> Iterator[None]:
    """Start the cluster for this session (installing it if needed); stop what we started."""
    if os.environ.get(OPT_IN) != "1":
        pytest.skip(OPT_IN_REASON)
    if importlib.util.find_spec("snakemake_executor_plugin_slurm") is None:
        unavailable('snakemake-executor-plugin-slurm is not installed (pip install -e ".[dev]")')
    if os.geteuid() != 0:
        unavailable("ci/slurm/start.sh needs root (slurmd, munged, mariadbd)")
    if not shutil.which("apt-get") and not shutil.which("slurmctld"):
        unavailable("no SLURM installed and no apt-get to install Debian's packages")
    # Installing the packages takes a minute or two on a fresh machine; starting, ~15 s.
    start = run(["bash", str(START)], REPO, check=False, timeout=900)
    if start.returncode != 0:
        unavailable(f"ci/slurm/start.sh exited {start.returncode}:\n{start.stderr[-3000:]}")
    ours = "already running" not in start.stderr  # a cluster started by hand stays up
    yield
    if ours:
        run(["bash", str(STOP)], REPO, timeout=120)


def sacct(
    run_id: str,
    since: datetime,
    job_ids: list[str] | None = None,
    labels: dict[str, str] | None = None,
) -> dict[str, dict[str, str]]:
    """SLURM's accounting for one Snakemake run: {job id: {rule, state, tres}}.

    The plugin names every job after the run's ID and comments it with the rule
    (``rule_<rule>``, or ``rule_<group>_<rule>`` should the rule join a group). A job that
    never became eligible (held, then cancelled) is outside any time window: ask for such
    jobs by ``job_ids``.
    """
    select = (
        ["-j", ",".join(job_ids)]
        if job_ids
        else ["--name", run_id, "-S", f"{since:%Y-%m-%dT%H:%M:%S}"]
    )
    out = run(
        ["sacct", "-n", "-P", "-X", *select, "-o", "JobID,Comment,State,AllocTRES"],
        REPO, timeout=30,
    ).stdout  # fmt: skip
    jobs = {}
    for line in out.splitlines():
        job_id, comment, state, tres = line.split("|")
        # A group job cancelled while held can reach sacct without its comment; Snakemake's
        # log names its folder (rule_<rule> or group_<group>_<rule>) at submission.
        comment = comment or (labels or {}).get(job_id, "")
        rules = [r for r in RULES if re.search(rf"(^rule_|_){r}(_wildcards_|$)", comment)]
        assert len(rules) == 1, f"job {job_id}: comment {comment!r} names none of {RULES}"
        jobs[job_id] = {"rule": rules[0], "state": state.split()[0], "tres": tres}
    return jobs


def submitted_labels(log: str) -> dict[str, str]:
    """SLURM job id -> the folder Snakemake's log gives the job (it names the rule)."""
    return dict(re.findall(r"with SLURM jobid (\d+) \(log: .*/slurm_logs/([^/]+)/", log))


def settled(
    run_id: str,
    since: datetime,
    count: int,
    job_ids: list[str] | None = None,
    labels: dict[str, str] | None = None,
) -> dict[str, dict[str, str]]:
    """sacct once it lists ``count`` jobs of the run, none pending or running.

    slurmctld hands records to slurmdbd asynchronously: a job just submitted or cancelled
    can take a moment to appear, or to show its final state (over 20 s once, on a loaded
    2-core machine: a cancelled job still PENDING). Gives up after a minute.
    """
    deadline = time.monotonic() + 60
    while True:
        jobs = sacct(run_id, since, job_ids, labels)
        done = all(j["state"] not in ("PENDING", "RUNNING") for j in jobs.values())
        if (len(jobs) >= count and done) or time.monotonic() > deadline:
            return jobs
        time.sleep(0.2)


def run_id(output: str) -> str:
    """The SLURM run ID the executor printed (every job of the run carries it as its name)."""
    found = re.findall(r"SLURM run ID: (\S+)", output)
    assert len(found) == 1, output[-3000:]
    return found[0]


@dataclass
class SlurmRun:
    repo: Path
    local: Path
    since: datetime
    first: subprocess.CompletedProcess
    second: subprocess.CompletedProcess


@pytest.fixture(scope="module")
def tiny_config(tmp_path_factory) -> Path:
    """Outside the repository copies, so their git trees stay clean."""
    path = tmp_path_factory.mktemp("config") / "tiny.yaml"
    path.write_text(f"normalization:\n  coefficients:\n    activations: {ACTIVATIONS}\n")
    return path


def snakemake(repo: Path, config: Path, *args: str, **kw) -> subprocess.CompletedProcess:
    return run([tool("snakemake"), "--configfile", str(config), *args, "--", *TARGETS], repo, **kw)


@pytest.fixture(scope="module")
def slurm_run(slurm_cluster, tmp_path_factory, tiny_config) -> SlurmRun:
    """The tiny config run twice through SLURM, and once locally (alongside) to compare."""
    repo = copy_repo(tmp_path_factory.mktemp("slurm") / "repo")
    local = copy_repo(tmp_path_factory.mktemp("local") / "repo")
    since = datetime.now() - timedelta(minutes=1)
    # The local run mostly overlaps the SLURM run's waiting on the scheduler.
    local_run = subprocess.Popen(
        [tool("snakemake"), "--cores", "1", "--configfile", str(tiny_config), "--", *TARGETS],
        cwd=local, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )  # fmt: skip
    first = snakemake(repo, tiny_config, *SLURM, timeout=240)
    local_out, _ = local_run.communicate(timeout=240)
    assert local_run.returncode == 0, local_out[-3000:]
    second = snakemake(repo, tiny_config, *SLURM, timeout=120)
    return SlurmRun(repo, local, since, first, second)


def test_every_job_ran_through_slurm_and_completed(slurm_run):
    jobs = settled(run_id(slurm_run.first.stderr), slurm_run.since, len(RULES))
    assert sorted(j["rule"] for j in jobs.values()) == sorted(RULES), jobs
    assert {j["state"] for j in jobs.values()} == {"COMPLETED"}, jobs
    # Nothing ran on the submitting machine, and each job's own log was kept.
    assert "localrule" not in slurm_run.first.stderr
    for job_id, job in jobs.items():
        (log,) = (slurm_run.repo / ".snakemake/slurm_logs").rglob(f"{job_id}.log")
        assert f"rule {job['rule']}:" in log.read_text()


def test_gpu_rule_was_allocated_a_gpu(slurm_run):
    jobs = settled(run_id(slurm_run.first.stderr), slurm_run.since, len(RULES)).values()
    tres = {j["rule"]: j["tres"] for j in jobs}
    assert "gres/gpu=1" in tres[GPU_RULE].split(","), tres
    assert all("gres/gpu" not in t for rule, t in tres.items() if rule != GPU_RULE), tres


def test_outputs_equal_those_of_a_local_run(slurm_run):
    made = sorted(p.relative_to(slurm_run.repo) for p in (slurm_run.repo / "results").rglob("*"))
    tables = [p for p in made if p.suffix in (".csv", ".json") and ".meta" not in p.suffixes]
    assert tables, made
    for rel in tables:
        assert (slurm_run.repo / rel).read_bytes() == (slurm_run.local / rel).read_bytes(), rel
    # The tiny config reached the jobs on the cluster.
    csv = pd.read_csv(slurm_run.repo / TARGETS[0])
    assert list(csv["activation"]) == ACTIVATIONS
    assert (slurm_run.repo / TARGETS[1]).stat().st_size > 1000


def test_second_run_plans_nothing(slurm_run):
    assert "Nothing to be done" in slurm_run.second.stderr, slurm_run.second.stderr[-3000:]
    assert "submitted with SLURM jobid" not in slurm_run.second.stderr


def test_interrupted_run_resumes_without_redoing_finished_jobs(
    slurm_cluster, tmp_path, tiny_config
):
    repo = copy_repo(tmp_path / "repo")
    since = datetime.now() - timedelta(minutes=1)
    log = tmp_path / "interrupted.log"
    # The plot job is submitted on hold (sbatch --hold): it stays PENDING until the interrupt
    # cancels it, so the run cannot finish first however fast or slow this machine is.
    # (One --set-resources list: a second flag would replace the first's gpu=1.)
    assert SLURM[-2] == "--set-resources"
    hold = [*SLURM, "normalization_plot_coefficients:slurm_extra='--hold'"]
    cmd = [tool("snakemake"), "--configfile", str(tiny_config), *hold, "--", *TARGETS]
    with log.open("w") as sink:
        # A run started in the background (nohup ... &) inherits SIGINT ignored, and so would
        # Snakemake: give it the default disposition, as in a terminal.
        proc = subprocess.Popen(
            cmd, cwd=repo, stdout=sink, stderr=subprocess.STDOUT,
            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
        )  # fmt: skip
        # Midway: the coefficients job has finished and the plot job is held on the cluster.
        deadline = time.monotonic() + 120
        pattern = r"submitted with SLURM jobid (\d+) .*_plot_coefficients/"
        while not (held := re.search(pattern, log.read_text())):
            assert proc.poll() is None and time.monotonic() < deadline, log.read_text()[-3000:]
            time.sleep(0.2)
        state = run(["squeue", "-h", "-j", held[1], "-o", "%T %r"], repo, timeout=30).stdout
        assert state.split() == ["PENDING", "JobHeldUser"], state
        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=60) != 0
    submitted = re.findall(r"submitted with SLURM jobid (\d+)", log.read_text())
    said = log.read_text()
    first = settled(run_id(said), since, 2, job_ids=submitted, labels=submitted_labels(said))
    states = {j["rule"]: j["state"] for j in first.values()}
    assert states == {GPU_RULE: "COMPLETED", "normalization_plot_coefficients": "CANCELLED"}, first
    csv = repo / TARGETS[0]
    stamp, data = csv.stat().st_mtime_ns, csv.read_bytes()
    assert not (repo / TARGETS[1]).exists()

    again = snakemake(repo, tiny_config, *SLURM, timeout=180)
    second = settled(run_id(again.stderr), since, 1)
    assert [(j["rule"], j["state"]) for j in second.values()] == [
        ("normalization_plot_coefficients", "COMPLETED")
    ], second
    assert csv.stat().st_mtime_ns == stamp and csv.read_bytes() == data
    assert (repo / TARGETS[1]).stat().st_size > 1000


def test_gpu_job_sees_its_gpu_and_falls_back_to_cpu_with_a_warning(slurm_cluster, tmp_path):
    """galu.device inside a job given a (fake) GPU: CUDA_VISIBLE_DEVICES names it, torch finds
    no CUDA device, and the code warns and uses the CPU instead of failing."""
    probe = (
        "import logging, os; logging.basicConfig(format='%(levelname)s %(name)s: %(message)s');"
        "from galu.device import resolve_device;"
        "print('visible=' + os.environ.get('CUDA_VISIBLE_DEVICES', ''));"
        "print('device=' + resolve_device('cuda'))"
    )
    out = tmp_path / "probe.out"
    job = run(
        ["sbatch", "--parsable", "--wait", "-p", "debug", "-A", "galu", "--gpus=1",
         "-o", str(out), "--wrap", f'{sys.executable} -c "{probe}"'],
        tmp_path, timeout=120,
    )  # fmt: skip
    text = out.read_text()
    assert "visible=0\n" in text, text
    import torch

    if torch.cuda.is_available():  # a real GPU behind the GRES: no fallback to check
        assert "device=cuda" in text, text
    else:
        assert "device=cpu" in text and "WARNING galu.device:" in text, text
    job_id = job.stdout.strip().split(";")[0]
    tres = run(["sacct", "-n", "-P", "-X", "-j", job_id, "-o", "AllocTRES"], tmp_path).stdout
    assert "gres/gpu=1" in tres, tres
