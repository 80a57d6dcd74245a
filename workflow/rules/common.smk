# Shared by every stage: configuration check, sidecar paths, the conda environment.
import atexit
import os
import sys
from pathlib import Path

import yaml
from snakemake.script import PythonScript

from galu.workflow.claims import reduced_claims
from galu.workflow.claims_text import caption_path
from galu.workflow.audit import CODE_CACHE
from galu.workflow.closure import CodeScanner
from galu.workflow.equivalence import LEDGER, Ledger, LedgerError
from galu.workflow.snakemake_args import informational
from galu.workflow.config import ConfigError, load_yaml, validate_files
from galu.workflow.consistency import check_consistency
from galu.workflow.costs import CostModel
from galu.workflow.lastgood import SNAPSHOT, put_back
from galu.workflow.lastgood import snapshot as snapshot_outputs
from galu.workflow.plan import SKIP_ENV, format_problems, job_request, machine_memory_gb
from galu.workflow.plan import cost_preflight
from galu.workflow.preflight import announce, blocked, preflight
from galu.workflow.profiles import check_placeholders
from galu.workflow.provenance import sidecar_path
from galu.workflow.report_build import build_path as report_build_path
from galu.workflow.report_build import install_report
from galu.workflow.scales import scaled, unscaled
from galu.seeding import run_seeds
from galu.workflow.sitekeys import site_device
from galu.workflow.dvcstages import rule_files
from galu.workflow.stages import stages
from galu.workflow.warm_jobs import MIN_JOBS as WARM_MIN_JOBS
from galu.workflow.warm_jobs import SOCKET_ENV as WARM_SOCKET_ENV
from galu.workflow.warm_jobs import account as warm_account
from galu.workflow.warm_jobs import enabled as warm_enabled
from galu.workflow.warm_jobs import start_server as start_warm_server

# Only the main Snakemake process checks: a cluster job step re-parses this file with the same
# configuration (already checked), possibly on a node without the GPU or the data mirrors.
if workflow.is_main_process:
    try:
        # On a cluster the main process runs on a login node without the jobs' GPUs.
        validate_files(
            config,
            workflow.source_path("../schemas/config.schema.yaml"),
            check_cuda=workflow.local_exec,
        )
        check_consistency(config)
        # profiles/slurm ships EDIT-partition / EDIT-account: stop before submitting jobs.
        check_placeholders(
            workflow.resource_settings.default_resources,
            workflow.resource_settings.overwrite_resources,
        )
    except ConfigError as error:
        # One readable message and a non-zero exit, before any job runs (no traceback).
        print(f"galu: {error}", file=sys.stderr)
        sys.exit(2)
    # Raw archives and processed arrays whose bytes fail their checks are set aside (never
    # used), so the jobs that make them run again; a dry run only reports them.
    # An informational command (--list-rules, --dag, --summary, --report, ...) runs no job:
    # like a dry run, the pre-flight only reports under it and moves nothing.
    DRY_RUN = workflow.output_settings.dryrun or informational(sys.argv)
    FINDINGS = preflight(Path("."), dry_run=DRY_RUN)
    announce(
        FINDINGS,
        lambda line: print(line, file=sys.stderr),
        Path("."),
        record=not DRY_RUN,
    )
    # A failing file the pre-flight could not set aside (the set-aside name taken, a
    # read-only folder) must not be read by any job: stop before the first one.
    if not DRY_RUN and (stop := blocked(FINDINGS)):
        print(f"galu: {stop}", file=sys.stderr)
        sys.exit(2)

# On a machine without a GPU, device auto and cpu both run on the CPU: the same results, so
# the rules' device param must be the same (changing it must not rerun anything). Elsewhere
# the setting passes unchanged (a cluster's login node cannot tell what its nodes have).
# The setting as given, for the report's own Snakemake call (report.smk): "cpu" with a GPU
# request is a contradiction the configuration check refuses.
DEVICE_SETTING = config["device"]
config["device"] = site_device(config["device"], local=workflow.local_exec)

SCALE = config["scale"]
# Every stage's declaration (galu/<paper>/stage.py): its paper, figures and their tables.
STAGES = stages()
# Their compute rules, included by the Snakefile: workflow/rules/<stage>.smk, or the stage's
# <stage>_<part>.smk files in name order (paths relative to the Snakefile).
STAGE_RULE_FILES = [
    f"workflow/rules/{path.name}"
    for each in STAGES
    for path in rule_files(Path(workflow.basedir), each.name)
]


def out(path):
    """The path of contract ``path`` (docs/design.md: ``results/...``, ``figures/...``,
    ``logs/...``) in this scale's output root: unchanged at the quick scale, else one folder
    down under the scale's name (``results/paper-cpu/...``), so runs of different scales never
    share an output (galu/workflow/scales.py). Every rule file names its paths through it.
    """
    return scaled(path, SCALE)


# The configuration of this run, handed to the report built on success (report.smk).
REPORT_CONFIG = Path(".snakemake/galu/report_config.yaml")
ENV = "../../environment.yml"


CLAIMS = load_yaml(workflow.source_path("../claims.yaml"))
# A reduction must name claims that exist (they become indicative at this scale): say so now.
try:
    reduced_claims(config["reductions"], [c["id"] for c in CLAIMS])
except ValueError as error:
    print(f"galu: {error}", file=sys.stderr)
    sys.exit(2)


def stage_targets(stage, paths):
    """Ask `rule all` for a stage's final outputs, when the config's `stages` includes it
    (its rules stay defined: a path of a left-out stage can still be asked for by name).
    """
    if stage in config["stages"]:
        ALL_TARGETS.extend(paths)


def claim_sources(wildcards):
    """CSVs the claims read that this configuration produces (others become not_run).

    Evaluated when the DAG is built, after every stage has extended ALL_TARGETS."""
    sources = {c["source"] for c in CLAIMS}
    sources |= {
        v["source"] for c in CLAIMS for v in c.get("finding_values", {}).values()
    }
    sources |= {c["robustness"]["source"] for c in CLAIMS if "robustness" in c}
    return sorted(out(s) for s in sources if out(s) in ALL_TARGETS)


def plot_rule_params(stage, figure):
    """The params of a figure's plot rule: what it draws and how (scripts/plot.py)."""
    return {
        "figure": figure.name,
        "module": stage.figures_module,
        "draw": dict(figure.draw),
        "scale": SCALE,
        "seeds": list(figure.seeds) if figure.seeds is not None else None,
        "computed_by": {
            t: list(table.computed_by) for t, table in figure.tables.items()
        },
    }


def meta(path):
    """The provenance sidecar of an output (written by galu.workflow.provenance.Run)."""
    return str(sidecar_path(path))


def with_sidecars(**outputs):
    """A rule's ``output:`` entries, each followed by its provenance sidecar: ``csv`` ->
    ``meta``, any other name ``x`` -> ``x_meta`` (``output: **with_sidecars(csv=...)``), so
    a path is written once per rule."""
    named = {}
    for name, path in outputs.items():
        named[name] = path
        named["meta" if name == "csv" else f"{name}_meta"] = meta(path)
    return named


def job_log(name):
    """A job's log file, ``logs/<name>.log`` in this scale's output root."""
    return out(f"logs/{name}.log")


def job_benchmark(name):
    """A job's benchmark table, ``logs/benchmarks/<name>.tsv`` (the cost model reads these)."""
    return out(f"logs/benchmarks/{name}.tsv")


# Figures in the report: figure's contract path (unscaled, as workflow/claims.yaml and
# galu/workflow/observations.py name it) -> its caption template under workflow/report/. For each
# figure, `claims` in report.smk writes the full caption to results/captions/ (the template
# followed by the verdicts of the claims the figure shows).
FIGURE_TEMPLATES = {}


def report_figure(figure, template, **report_args):
    """``report(figure, ...)`` with its caption: the one with verdicts once `claims` has
    written it (the report is built after a full run), else the bare template
    ``workflow/report/<template>``. ``figure`` is this scale's path (``out(...)``).
    ``report_args``: category, subcategory, ..."""
    FIGURE_TEMPLATES[unscaled(figure, SCALE)] = f"workflow/report/{template}"
    generated = Path(out(caption_path(unscaled(figure, SCALE))))
    caption = (
        str(generated.resolve()) if generated.is_file() else f"../report/{template}"
    )
    return report(figure, caption=caption, **report_args)


# Every job's resources come from the cost model (galu/workflow/costs.py, constants fitted to our
# measurements in workflow/costs/): runtime twice the predicted time plus 5 minutes (or the
# config's runtime_min when it is not 0), mem_mb 1.5 times the predicted peak plus 200 MB.
COSTS = CostModel.load(workflow.source_path("../costs/constants.yaml"))


def cost_runtime(rule):
    """The ``runtime`` resource (minutes) of ``rule``'s jobs."""
    return lambda wildcards: job_request(COSTS, config, rule, wildcards)[0]


def cost_mem(rule):
    """The ``mem_mb`` resource of ``rule``'s jobs."""
    return lambda wildcards: job_request(COSTS, config, rule, wildcards)[1]


def job_resources(rule, **more):
    """A rule's ``resources:`` from the cost model, plus ``more`` (``gpu=...``):
    ``resources: **job_resources("rule_name")``."""
    return {"mem_mb": cost_mem(rule), "runtime": cost_runtime(rule), **more}


def check_costs(jobs):
    """Before any job starts: refuse a local run with a job predicted to need more memory
    than the machine has; warn of jobs predicted to outlast their declared runtime."""
    planned = [
        (j.rule.name, dict(j.wildcards.items()), j.resources.get("runtime"))
        for j in jobs
        if j.rule.name != "all"
    ]
    try:
        mem_gb = machine_memory_gb() if workflow.local_exec else float("inf")
    except ValueError as error:
        print(f"galu: {error}; nothing started.", file=sys.stderr)
        sys.exit(2)
    errors, warnings = cost_preflight(COSTS, config, planned, mem_gb)
    if os.environ.get(SKIP_ENV) == "1":
        warnings, errors = warnings + errors, []
    for line in format_problems(errors, warnings):
        print(f"galu: {line}", file=sys.stderr)
    if errors:
        print(
            f"galu: nothing started. Predictions: `galu plan` with the same --configfile;"
            f" {SKIP_ENV}=1 starts anyway.",
            file=sys.stderr,
        )
        sys.exit(2)


# Warm job interpreters (galu/workflow/warm_jobs.py): a local run's one-thread script jobs are
# forked from a server that has torch, pandas, SciPy and matplotlib imported, instead of each
# paying for those imports; the same bytes either way. GALU_WARM_JOBS=0 runs every job cold.
_cold_execute = PythonScript.execute_script
WARM = {}


def _warm_execute(self, fname, edit=False):
    """PythonScript.execute_script through the warm server, where the job allows it."""
    cold = edit or self.threads != 1 or self.conda_env or self.container_img
    if "server" not in WARM or cold or self.env_modules:
        return _cold_execute(self, fname, edit)
    usage = Path(f"{fname}.usage.json")
    self._execute_cmd(
        "{py_exec} -m galu.workflow.warm_jobs run {fname:q} {usage:q}",
        py_exec=sys.executable,
        fname=fname,
        usage=str(usage),
        is_python_script=True,
    )
    warm_account(self.bench_record, usage)
    usage.unlink(missing_ok=True)


def start_warm_jobs(jobs):
    """Start the run's server when it will run several script jobs here (not on a cluster).
    A job that starts while the server imports waits for it (warm_jobs.py). A server the
    caller keeps running (its socket in GALU_WARM_SOCKET: the test suite's, one per worker)
    is used instead, for any number of jobs."""
    local = (
        workflow.local_exec
        and not workflow.remote_exec
        and not workflow.output_settings.dryrun
        and warm_enabled()
    )
    if not local:
        return
    caller_server = os.environ.get(WARM_SOCKET_ENV, "")
    if caller_server and Path(caller_server).is_socket():
        WARM["server"] = caller_server
    elif sum(1 for j in jobs if j.rule.script) >= WARM_MIN_JOBS:
        server = start_warm_server(Path(".snakemake/galu/warm-jobs.log"))
        atexit.register(server.stop)
        os.environ[WARM_SOCKET_ENV] = str(server.socket)
        WARM["server"] = server
    else:
        return
    PythonScript.execute_script = _warm_execute


# A failed rerun keeps the last good outputs (galu/workflow/lastgood.py): linked when the run
# starts (an output missing then keeps its previous last good version), put back when it
# fails, and their jobs marked incomplete so the next run still redoes them.
def run_outputs():
    """Every output of this run's jobs (relative paths, sidecars included)."""
    return {str(f) for j in workflow.dag.jobs for f in j.output}


def keep_last_good():
    try:
        kept = snapshot_outputs()
    except OSError as error:  # the previous snapshot, if any, is left as it was
        print(
            f"galu: could not update the last good outputs in {SNAPSHOT}/ ({error});"
            " a failed run puts back only what the previous snapshot holds.",
            file=sys.stderr,
        )
        return
    mine = sorted(set(kept.carried) & run_outputs())
    if mine:
        print(
            f"galu: {len(mine)} output(s) of this run are missing or fail their check now"
            f" (e.g. {mine[0]}); their last good version stays in {SNAPSHOT}/ and is put"
            " back if the run fails.",
            file=sys.stderr,
        )


def put_back_last_good():
    try:
        back = put_back(".", run_outputs())
    except OSError as error:
        print(
            f"galu: the run failed and the last good outputs could not be put back ({error});"
            f" they are still in {SNAPSHOT}/.",
            file=sys.stderr,
        )
        return
    restored = back.restored
    if restored:
        failed = [
            j for j in workflow.dag.jobs if {str(f) for f in j.output} & set(restored)
        ]
        for job in failed:
            workflow.persistence.started(job)
        print(
            f"galu: the run failed; put back the last good version of {len(restored)} file(s)"
            f" (e.g. {restored[0]}), their sidecars included; the next run redoes their"
            f" job(s): {', '.join(sorted({j.rule.name for j in failed})) or 'none'}.",
            file=sys.stderr,
        )
    for output, why in back.refused:
        print(
            f"galu: the run failed; the last good copy of {output} in {SNAPSHOT}/ is not"
            f" put back: {why}. The next run makes it again.",
            file=sys.stderr,
        )


onstart:
    check_costs(workflow.dag.needrun_jobs())
    keep_last_good()
    start_warm_jobs(workflow.dag.needrun_jobs())


onerror:
    put_back_last_good()


# Every rule's code closure (galu/workflow/closure.py): its script and each galu module and package
# data file the script imports, directly or not, with their hashes (comments and docstrings
# left out). It becomes the rule's `code` param, so Snakemake's params trigger reruns exactly
# the jobs whose code changed (and, through their outputs, their dependants), locally and on
# a cluster alike; the job's provenance sidecar records it and `galu audit` compares it with
# the tree. Parses are cached by file content in .snakemake/galu/code-cache.json.
CODE = CodeScanner(workflow.basedir, cache=CODE_CACHE)
# A closure recorded as number-neutral to an earlier one (galu/workflow/equivalence.py, written by
# `galu equivalence`) keeps the earlier hash, so its outputs are not rerun.
try:
    CODE_LEDGER = Ledger.load(workflow.basedir)
except LedgerError as error:
    print(f"galu: {error}", file=sys.stderr)
    sys.exit(2)
# An entry whose commits are not in this checkout's history vouches for nothing (its outputs
# rerun): say so once, with why.
for why in list(CODE_LEDGER.untrusted.values())[:3]:
    print(f"galu: {LEDGER} entry not trusted: {why}", file=sys.stderr)


def track_code(rules):
    """Give every rule that runs a script its ``code`` param (called once all are defined).
    A rule's ``module`` param (the plot rules': the figures module its script imports by
    name), or its ``modules`` (the claims rule's: the stages' caption sentences), is part of
    its closure."""
    for each in rules:
        if each.script is not None and "code" not in each.params.keys():
            script = Path(each.basedir.get_path_or_uri(secret_free=True)) / each.script
            params = dict(each.params.items())
            imports = (
                [params["module"]] if "module" in params else params.get("modules", [])
            )
            closure = CODE.closure(script, imports)
            # Only the hash: Snakemake prints a changed param in full in its reasons.
            canonical = CODE_LEDGER.canonical(closure.sha256)
            code = {"script": closure.script, "sha256": canonical}
            if imports:
                code["imports"] = imports
            each.set_params(code=code)
    CODE.save_cache()
