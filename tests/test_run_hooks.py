"""The Snakefile's hooks (galu/workflow/running/run_hooks.py) on their own, with stand-ins for
Snakemake's ``workflow``; the whole runs are tested by the tiny runs of test_workflow and the
reliability tests. The Snakemake internals the warm jobs rely on are pinned in
test_snakemake_internals.py."""

from __future__ import annotations

import os
import shlex
import time
from pathlib import Path
from types import SimpleNamespace

import pytest

from galu.workflow.running import run_hooks
from galu.workflow.settings.config import load_yaml
from galu.workflow.settings.runconfig import run_config

from conftest import REPO


def test_the_warm_execute_falls_back_to_the_original_for_jobs_it_cannot_take():
    calls = []

    def cold(self, fname, edit=False):
        calls.append((fname, edit))

    warm = run_hooks._warm_execute(cold)
    job = SimpleNamespace(
        threads=1, conda_env=None, container_img=None, env_modules=None, bench_record=None
    )
    run_hooks.WARM.clear()  # no server: cold
    warm(job, "a.py")
    run_hooks.WARM["server"] = "socket"
    try:
        warm(SimpleNamespace(**{**vars(job), "threads": 2}), "b.py")
        warm(SimpleNamespace(**{**vars(job), "conda_env": "env"}), "c.py")
        warm(job, "d.py", edit=True)
        sent = []
        job._execute_cmd = lambda cmd, **kw: sent.append((cmd, kw["fname"]))
        warm(job, "e.py")
    finally:
        run_hooks.WARM.clear()
    assert calls == [("a.py", False), ("b.py", False), ("c.py", False), ("d.py", True)]
    assert sent == [
        ("{py_exec:q} -m galu.workflow.running.warm_jobs run {fname:q} {usage:q}", "e.py")
    ]


def test_the_warm_command_survives_an_interpreter_path_with_a_space(monkeypatch, tmp_path):
    """The command goes through a shell (Snakemake's shell()): every path in it is quoted."""
    from snakemake.utils import format as snakemake_format

    monkeypatch.setattr("sys.executable", "/opt/my python/bin/python3")
    sent = []
    job = SimpleNamespace(
        threads=1, conda_env=None, container_img=None, env_modules=None, bench_record=None
    )
    job._execute_cmd = lambda cmd, **kw: sent.append(snakemake_format(cmd, **kw))
    run_hooks.WARM["server"] = "socket"
    try:
        run_hooks._warm_execute(None)(job, str(tmp_path / "a job.py"))
    finally:
        run_hooks.WARM.clear()
    (command,) = sent
    assert shlex.split(command) == [
        "/opt/my python/bin/python3",
        "-m",
        "galu.workflow.running.warm_jobs",
        "run",
        str(tmp_path / "a job.py"),
        str(tmp_path / "a job.py.usage.json"),
    ]


def _workflow(main=True):
    return SimpleNamespace(
        is_main_process=main,
        local_exec=True,
        resource_settings=SimpleNamespace(default_resources=None, overwrite_resources=None),
        output_settings=SimpleNamespace(dryrun=True),
    )


def test_a_bad_configuration_stops_the_main_process_only(capsys, monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)  # the pre-flight looks at ./data: nothing there
    schema = str(REPO / "workflow/schemas/config.schema.yaml")
    config = run_config(REPO)
    run_hooks.check_at_parse(_workflow(), config, schema)  # a good one: nothing said
    assert capsys.readouterr().err == ""
    bad = {**config, "seed": -1}
    run_hooks.check_at_parse(_workflow(main=False), bad, schema)  # a job step: not checked
    with pytest.raises(SystemExit) as stopped:
        run_hooks.check_at_parse(_workflow(), bad, schema)
    assert stopped.value.code == 2
    err = capsys.readouterr().err
    assert err.startswith("galu: invalid configuration") and "seed: -1 is not allowed" in err
    assert "Traceback" not in err


def test_a_reduction_naming_no_claim_stops_the_run(capsys):
    claims = load_yaml(REPO / "workflow/claims.yaml")
    run_hooks.check_reductions({"reductions": [{"text": "t", "claims": []}]}, claims)
    with pytest.raises(SystemExit) as stopped:
        run_hooks.check_reductions({"reductions": [{"text": "t", "claims": ["nope"]}]}, claims)
    assert stopped.value.code == 2
    assert "galu: reductions: 'nope' is not a claim id" in capsys.readouterr().err


class _Rule:
    def __init__(self, script, **params):
        self.script = script
        self.params = SimpleNamespace(keys=lambda: params.keys(), items=lambda: params.items())
        self.basedir = SimpleNamespace(
            get_path_or_uri=lambda secret_free: str(REPO / "workflow/rules")
        )
        self.code = None

    def set_params(self, code):
        self.code = code


def test_every_script_rule_gets_its_closure_and_only_those():
    scanner, ledger = run_hooks.code_tracking(str(REPO))
    plot = _Rule("../../scripts/plot.py", module="galu.scm.figures")
    train = _Rule("../../scripts/normalization_train.py")
    shell = _Rule(None)
    run_hooks.track_code([plot, train, shell], scanner, ledger)
    assert shell.code is None
    assert train.code["script"] == "scripts/normalization_train.py" and "imports" not in train.code
    assert plot.code["imports"] == ["galu.scm.figures"]
    assert len(train.code["sha256"]) == 64 != plot.code["sha256"]
    # the closure follows the figures module: another stage's figures, another hash
    other = _Rule("../../scripts/plot.py", module="galu.normalization.figures")
    run_hooks.track_code([other], scanner, ledger)
    assert other.code["sha256"] != plot.code["sha256"]
    assert Path(REPO / train.code["script"]).is_file()


def test_a_file_from_the_future_is_named_before_any_job(tmp_path):
    now = 1_000_000_000.0
    assert run_hooks.from_the_future(tmp_path, now) is None
    for i, name in enumerate(["results/a.csv", "data/raw/x.gz", "figures/f.png", "results/b"]):
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("x")
        # within the slack, at the slack's edge, then beyond it
        ahead = [0, run_hooks.CLOCK_SLACK_S, run_hooks.CLOCK_SLACK_S + 1, 86400][i]
        os.utime(path, (now + ahead, now + ahead))
    (tmp_path / "results/old.csv.rejected").write_text("set aside: never read")
    os.utime(tmp_path / "results/old.csv.rejected", (now + 86400, now + 86400))
    (tmp_path / "notes.txt").write_text("outside the output folders")
    os.utime(tmp_path / "notes.txt", (now + 86400, now + 86400))
    text = run_hooks.from_the_future(tmp_path, now)
    assert text.startswith(
        "2 file(s) were modified after this machine's present time (results/b, figures/f.png):"
    )
    assert "`touch` those files; nothing started." in text


def test_a_run_with_an_output_from_the_future_stops_before_any_job(tmp_path):
    from test_reliability_support import smk, tiny_repo

    root = tiny_repo(tmp_path / "repo")
    table = root / "results/scm/stability.csv"
    table.parent.mkdir(parents=True)
    table.write_text("made on a machine whose clock runs a day ahead\n")
    ahead = time.time() + 86400
    os.utime(table, (ahead, ahead))
    done = smk(root, "--cores", "1", check=False)
    assert done.returncode == 2
    assert "galu: 1 file(s) were modified after this machine's present time" in done.stderr
    assert "(results/scm/stability.csv)" in done.stderr
    assert not (root / "logs").exists()  # no job started
    assert table.is_file()  # and nothing set aside before the clock is right


def test_a_forged_ledger_entry_is_not_believed_by_the_workflow(capsys):
    """An entry naming the commits of this checkout, but closures those commits' trees do not
    have (written by hand), vouches for nothing: the rule keeps its own closure's hash (its
    jobs rerun) and the run says why."""
    import subprocess

    from galu.workflow.equivalence import Equivalence, Ledger
    from galu.workflow.trust.ledger_verify import verifier

    scanner, _ = run_hooks.code_tracking(str(REPO))
    script = "scripts/normalization_correlations.py"
    own = scanner.closure(REPO / script, []).sha256
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=REPO, capture_output=True,
                          text=True, check=True).stdout.strip()  # fmt: skip
    forged = Equivalence(script, own, "f" * 64, head, head, ("tiny",), 1, ())
    ledger = Ledger([forged])
    ledger.verify = verifier(REPO)
    rule = _Rule("../../" + script)
    run_hooks.track_code([rule], scanner, ledger)
    assert rule.code["sha256"] == own != "f" * 64
    assert "entry not trusted, its jobs are not vouched for: " + script in capsys.readouterr().err
    # without the check, the same entry would have been believed
    believed = _Rule("../../" + script)
    run_hooks.track_code([believed], scanner, Ledger([forged]))
    assert believed.code["sha256"] == "f" * 64


def test_a_job_records_the_ledger_only_where_the_workflow_vouched_for_it(tmp_path, monkeypatch):
    """A job records its closure's canonical hash from the ledger only when the workflow
    planned it with that hash; planned with its own (the workflow did not believe the entry),
    it records none, whatever the unchecked ledger says."""
    import json
    import shutil
    import subprocess

    from galu.workflow.provenance import _job_code

    for rel in ("galu", "scripts", "workflow/code-equivalence.yaml"):
        copy = shutil.copytree if (REPO / rel).is_dir() else shutil.copy2
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        copy(REPO / rel, tmp_path / rel)
    monkeypatch.chdir(tmp_path)
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run([*git, "init", "-q"], check=True)
    subprocess.run([*git, "add", "-A"], check=True)
    subprocess.run([*git, "commit", "-qm", "x"], check=True)
    commit = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True,
                            check=True).stdout.strip()  # fmt: skip
    scanner, _ = run_hooks.code_tracking(str(tmp_path))
    script = "scripts/normalization_correlations.py"
    own = scanner.closure(tmp_path / script, []).sha256
    entry = {"script": script, "closure": own, "same_as": "e" * 64, "baseline": commit,
             "checked": commit, "scales": ["tiny"], "outputs": 1, "changed": []}  # fmt: skip
    (tmp_path / "workflow/code-equivalence.yaml").write_text(json.dumps({"equivalences": [entry]}))
    record = _job_code({"script": script, "sha256": own})
    assert record["sha256"] == own and "canonical" not in record
    # planned with the entry's hash (a workflow that believed it), the record says so
    assert _job_code({"script": script, "sha256": "e" * 64})["canonical"] == "e" * 64
