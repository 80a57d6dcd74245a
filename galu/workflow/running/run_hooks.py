"""What the Snakefile does around its jobs, as functions of Snakemake's ``workflow`` and the
run's ``config`` (called from ``workflow/rules/common.smk``, so each is tested on its own):

- :func:`check_at_parse`: the main process validates the configuration and runs the data
  pre-flight before any job (a cluster job step re-parses the Snakefile and skips it);
- :func:`check_costs`: before any job starts, refuse a local run the machine cannot hold;
- :func:`keep_last_good` / :func:`put_back_last_good`: a failed rerun keeps the last good
  outputs (:mod:`galu.workflow.running.lastgood`);
- :func:`start_warm_jobs`: local one-thread script jobs forked from a warm interpreter
  (:mod:`galu.workflow.running.warm_jobs`);
- :func:`track_code`: every script rule's ``code`` param, its code closure
  (:mod:`galu.workflow.closure`), so a code change reruns exactly its jobs.

Each stops the run the same way: one ``galu:`` line on standard error and exit status 2,
never a traceback.
"""

from __future__ import annotations

import atexit
import os
import sys
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any, NoReturn


def _say(line: str) -> None:
    print(f"galu: {line}", file=sys.stderr)


def stop(line: str) -> NoReturn:
    """One readable message and exit status 2 (a usage or configuration error)."""
    _say(line)
    sys.exit(2)


def check_at_parse(workflow: Any, config: dict, schema: str) -> None:
    """In the main process only: the configuration against its schema and its cross-key
    checks, the cluster profile's placeholders, and the clock (the files are checked once
    every rule is defined: :func:`check_files`)."""
    from galu.workflow.settings.config import ConfigError, validate_files
    from galu.workflow.settings.consistency import check_consistency
    from galu.workflow.settings.profiles import check_placeholders

    if not workflow.is_main_process:
        return
    try:
        # On a cluster the main process runs on a login node without the jobs' GPUs.
        validate_files(config, schema, check_cuda=workflow.local_exec)
        check_consistency(config)
        # profiles/slurm ships EDIT-partition / EDIT-account: stop before submitting jobs.
        check_placeholders(
            workflow.resource_settings.default_resources,
            workflow.resource_settings.overwrite_resources,
        )
    except ConfigError as error:
        stop(str(error))
    # Before anything is set aside: a clock skew would make every later judgement wrong.
    if future := from_the_future(Path(".")):
        stop(future)


def check_files(workflow: Any, config: dict) -> None:
    """In the main process only, once every rule is defined: the pre-flight (raw archives,
    processed arrays and results whose bytes fail their checks are set aside so their jobs
    rerun; only files some rule makes; a dry run, or an informational command such as
    ``--list-rules``, only reports them), then the outputs whose inputs kept their bytes and
    the data jobs' records made before their params became per dataset."""
    from galu.workflow.running.preflight import preflight
    from galu.workflow.running.preflight_findings import announce, blocked
    from galu.workflow.settings.snakemake_args import informational

    if not workflow.is_main_process:
        return
    rules = list(workflow.rules)

    def made(path: str) -> bool:
        return any(rule.is_producer(path) for rule in rules)

    dry_run = workflow.output_settings.dryrun or informational(sys.argv)
    findings = preflight(Path("."), dry_run=dry_run, made=made)
    announce(findings, lambda line: print(line, file=sys.stderr), Path("."), record=not dry_run)
    # A failing file the pre-flight could not set aside must not be read by any job.
    if not dry_run and (why := blocked(findings)):
        stop(why)
    if not informational(sys.argv):
        keep_byte_identical()
        carry_over_data_records(config["data"])


def carry_over_data_records(section: dict) -> None:
    """The data jobs' Snakemake records in the form before their params became per dataset,
    rewritten once (galu/workflow/running/data_records.py), so that opting into one dataset's
    substitute reruns nothing made from the others; a dry run does it too (records only, no
    byte), so that it plans what the run will do. Not while another run holds the lock."""
    from galu.workflow.running.data_records import carry_over
    from galu.workflow.running.preflight import lock_held

    if lock_held(Path(".")):
        return
    if rewritten := carry_over(section):
        _say(
            f"{len(rewritten)} record(s) of data jobs carried over to per-dataset params"
            f" (nothing reruns for another dataset's substitute): {rewritten[0]}, ..."
        )


def keep_byte_identical() -> None:
    """Outputs whose newer inputs hold the bytes they were made from get the time of now
    (galu/workflow/running/mtimes.py), so Snakemake's mtime trigger reruns only what changed; a dry
    run does it too (times only, no byte), so that it plans what the run will do."""
    from galu.workflow.running.mtimes import refresh

    if kept := refresh(Path(".")):
        shown = ", ".join(p.as_posix() for p in kept[:3]) + (", ..." if len(kept) > 3 else "")
        _say(
            f"{len(kept)} output(s) whose inputs were rewritten with the same bytes are kept"
            f" (their times refreshed, not rerun): {shown}"
        )


# Seconds a file's modification time may lie ahead of this machine's clock (a file system
# on another machine, rounding) before it counts as made in the future.
CLOCK_SLACK_S = 120


def from_the_future(root: Path, now: float | None = None) -> str | None:
    """A file under results/, figures/ or data/ modified after now: Snakemake would judge
    what is up to date by it (an output from the future is never older than its inputs) and
    fail on the clock skew only after running a job. The message names the files and the
    fix; None when there is none."""
    now = time.time() if now is None else now
    late = [
        path
        for folder in ("results", "figures", "data")
        if (root / folder).is_dir()
        for path in sorted((root / folder).rglob("*"))
        if path.is_file()
        and ".rejected" not in path.name  # set aside: never read again
        and path.stat().st_mtime > now + CLOCK_SLACK_S
    ]
    if not late:
        return None
    named = ", ".join(p.relative_to(root).as_posix() for p in late[:3])
    more = f" and {len(late) - 3} more" if len(late) > 3 else ""
    return (
        f"{len(late)} file(s) were modified after this machine's present time ({named}{more}):"
        " Snakemake cannot tell what is up to date. Set this machine's clock right, or, if"
        " the clock is right, `touch` those files; nothing started."
    )


def check_reductions(config: dict, claims: list[dict]) -> None:
    """A scale's reductions must name claims that exist (they become indicative there)."""
    from galu.workflow.claims import reduced_claims

    try:
        reduced_claims(config["reductions"], [c["id"] for c in claims])
    except ValueError as error:
        stop(str(error))


def check_costs(workflow: Any, config: dict, costs: Any, jobs: Iterable[Any]) -> None:
    """Before any job starts: refuse a local run with a job predicted to need more memory
    than the machine has; warn of jobs predicted to outlast their declared runtime."""
    from galu.workflow.planning.dag import snakemake_job
    from galu.workflow.planning.plan import (
        SKIP_ENV,
        cost_preflight,
        format_problems,
        machine_memory_gb,
    )

    planned = [(snakemake_job(j), j.resources.get("runtime")) for j in jobs if j.rule.name != "all"]
    try:
        mem_gb = machine_memory_gb() if workflow.local_exec else float("inf")
    except ValueError as error:
        stop(f"{error}; nothing started.")
    errors, warnings = cost_preflight(costs, config, planned, mem_gb)
    if os.environ.get(SKIP_ENV) == "1":
        warnings, errors = warnings + errors, []
    for line in format_problems(errors, warnings):
        _say(line)
    if errors:
        stop(
            f"nothing started. Predictions: `galu plan` with the same --configfile;"
            f" {SKIP_ENV}=1 starts anyway."
        )


def run_outputs(workflow: Any) -> set[str]:
    """Every output of this run's jobs (relative paths, sidecars included)."""
    return {str(f) for j in workflow.dag.jobs for f in j.output}


def keep_last_good(workflow: Any) -> None:
    """When the run starts: link the outputs that pass their checks into the last-good
    snapshot (an output missing now keeps its previous last good version)."""
    from galu.workflow.running.lastgood import SNAPSHOT, snapshot

    try:
        kept = snapshot()
    except OSError as error:  # the previous snapshot, if any, is left as it was
        _say(
            f"could not update the last good outputs in {SNAPSHOT}/ ({error});"
            " a failed run puts back only what the previous snapshot holds."
        )
        return
    mine = sorted(set(kept.carried) & run_outputs(workflow))
    if mine:
        _say(
            f"{len(mine)} output(s) of this run are missing or fail their check now"
            f" (e.g. {mine[0]}); their last good version stays in {SNAPSHOT}/ and is put"
            " back if the run fails."
        )


def put_back_last_good(workflow: Any) -> None:
    """When the run fails: put the last good outputs back and mark their jobs incomplete,
    so the next run still redoes them."""
    from galu.workflow.running.lastgood import SNAPSHOT, put_back

    try:
        back = put_back(".", run_outputs(workflow))
    except OSError as error:
        _say(
            f"the run failed and the last good outputs could not be put back ({error});"
            f" they are still in {SNAPSHOT}/."
        )
        return
    restored = back.restored
    if restored:
        failed = [j for j in workflow.dag.jobs if {str(f) for f in j.output} & set(restored)]
        for job in failed:
            workflow.persistence.started(job)
        _say(
            f"the run failed; put back the last good version of {len(restored)} file(s)"
            f" (e.g. {restored[0]}), their sidecars included; the next run redoes their"
            f" job(s): {', '.join(sorted({j.rule.name for j in failed})) or 'none'}."
        )
    for output, why in back.refused:
        _say(
            f"the run failed; the last good copy of {output} in {SNAPSHOT}/ is not"
            f" put back: {why}. The next run makes it again."
        )


# -- warm job interpreters -------------------------------------------------------------------
#
# Snakemake runs a `script:` job by PythonScript.execute_script, which starts a fresh
# interpreter; no plugin or setting lets a workflow choose how that interpreter starts (an
# executor plugin would replace the whole local executor, its scheduling and its benchmark
# records). So a local run replaces that one method, for its own process only, by one that
# sends the job to the warm server; tests/test_snakemake_internals.py pins the source of the
# methods it relies on, so an upgrade of Snakemake that changes them fails a test at once.
WARM: dict[str, Any] = {}


def _warm_execute(cold: Callable) -> Callable:
    from galu.workflow.running.warm_jobs import account

    def execute_script(self, fname, edit=False):
        """PythonScript.execute_script through the warm server, where the job allows it."""
        if edit or self.threads != 1 or self.conda_env or self.container_img:
            return cold(self, fname, edit)
        if "server" not in WARM or self.env_modules:
            return cold(self, fname, edit)
        usage = Path(f"{fname}.usage.json")
        self._execute_cmd(
            "{py_exec:q} -m galu.workflow.running.warm_jobs run {fname:q} {usage:q}",
            py_exec=sys.executable,
            fname=fname,
            usage=str(usage),
            is_python_script=True,
        )
        account(self.bench_record, usage)
        usage.unlink(missing_ok=True)

    return execute_script


def start_warm_jobs(workflow: Any, jobs: Iterable[Any]) -> None:
    """Start the run's server when it will run several script jobs here (not on a cluster).
    A job that starts while the server imports waits for it. A server the caller keeps
    running (its socket in GALU_WARM_SOCKET: the test suite's, one per worker) is used
    instead, for any number of jobs. GALU_WARM_JOBS=0 runs every job cold."""
    from snakemake.script import PythonScript

    from galu.workflow.running.warm_jobs import MIN_JOBS, SOCKET_ENV, enabled, start_server

    local = (
        workflow.local_exec
        and not workflow.remote_exec
        and not workflow.output_settings.dryrun
        and enabled()
    )
    if not local:
        return
    caller_server = os.environ.get(SOCKET_ENV, "")
    if caller_server and Path(caller_server).is_socket():
        WARM["server"] = caller_server
    elif sum(1 for j in jobs if j.rule.script) >= MIN_JOBS:
        server = start_server(Path(".snakemake/galu/warm-jobs.log"))
        atexit.register(server.stop)
        os.environ[SOCKET_ENV] = str(server.socket)
        WARM["server"] = server
    else:
        return
    PythonScript.execute_script = _warm_execute(PythonScript.execute_script)


# -- code closures ---------------------------------------------------------------------------


def code_tracking(basedir: str) -> tuple[Any, Any]:
    """The closure scanner (parses cached by content in .snakemake/galu/code-cache.json) and
    the equivalence ledger (a closure recorded as number-neutral to an earlier one keeps the
    earlier hash, so its outputs are not rerun); an entry whose commits are not in this
    checkout's history vouches for nothing: said once, with why. The entries a rule's chain
    goes through are checked first: their closures recomputed from their commits
    (:func:`galu.workflow.trust.ledger_verify.verifier`, cached per commit), so an entry
    written by hand is not believed."""
    from galu.workflow.closure import CodeScanner
    from galu.workflow.equivalence import LEDGER, Ledger, LedgerError
    from galu.workflow.trust.audit import CODE_CACHE
    from galu.workflow.trust.ledger_verify import verifier

    try:
        ledger = Ledger.load(basedir, verify=verifier(Path(basedir)))
    except LedgerError as error:
        stop(str(error))
    for why in list(ledger.untrusted.values())[:3]:
        _say(f"{LEDGER} entry not trusted: {why}")
    return CodeScanner(basedir, cache=CODE_CACHE), ledger


def track_code(rules: Iterable[Any], scanner: Any, ledger: Any) -> None:
    """Give every rule that runs a script its ``code`` param: the hash of its closure (its
    script and each galu module and package data file the script imports, directly or not,
    comments and docstrings left out). Snakemake's params then rerun exactly the jobs whose
    code changed, locally and on a cluster alike. A rule's ``module`` param (the plot rules':
    the figures module its script imports by name), or its ``modules`` (the claims rule's),
    is part of its closure."""
    untrusted = set(ledger.untrusted)
    for each in rules:
        if each.script is None or "code" in each.params.keys():
            continue
        script = Path(each.basedir.get_path_or_uri(secret_free=True)) / each.script
        params = dict(each.params.items())
        imports = [params["module"]] if "module" in params else params.get("modules", [])
        closure = scanner.closure(script, imports)
        # Only the hash: Snakemake prints a changed param in full in its reasons.
        code = {"script": closure.script, "sha256": ledger.canonical(closure.sha256)}
        if imports:
            code["imports"] = imports
        each.set_params(code=code)
    scanner.save_cache()
    from galu.workflow.equivalence import LEDGER

    for why in [w for sha, w in ledger.untrusted.items() if sha not in untrusted][:3]:
        _say(f"{LEDGER} entry not trusted, its jobs are not vouched for: {why}")
