# Shared by all the rule files. The checks before any job, the path helpers every rule names
# its files through, and the run's hooks (galu/workflow/running/run_hooks.py, each documented there).
from pathlib import Path

from galu.workflow.running import run_hooks
from galu.workflow.claims_text import caption_path
from galu.workflow.settings.config import load_yaml
from galu.workflow.planning.costs import CostModel, RuleCost
from galu.workflow.pages.dvcstages import rule_files
from galu.workflow.planning.plan import Request
from galu.workflow.provenance import sidecar_path
from galu.workflow.scales import scaled, unscaled
from galu.workflow.settings.sitekeys import site_device
from galu.workflow.stages import stages

# The configuration, the cluster profile and the data, checked once by the main process
# before any job (a cluster job step re-parses this file, possibly on a node without the
# GPU or the data mirrors).
run_hooks.check_at_parse(
    workflow, config, workflow.source_path("../schemas/config.schema.yaml")
)

# On a machine without a GPU, device auto and cpu both run on the CPU: the same results, so
# the rules' device param is the same (changing it reruns nothing). The setting as given is
# kept for the report's own Snakemake call (report.smk).
DEVICE_SETTING = config["device"]
config["device"] = site_device(config["device"], local=workflow.local_exec)

SCALE = config["scale"]
# Every stage's declaration (galu/<paper>/stage.py) and its compute rules, included by the
# Snakefile: workflow/rules/<stage>.smk, or its <stage>_<part>.smk files in name order.
STAGES = stages()
STAGE_RULE_FILES = [
    f"workflow/rules/{path.name}"
    for each in STAGES
    for path in rule_files(Path(workflow.basedir), each.name)
]
ENV = "../../environment.yml"
CLAIMS = load_yaml(workflow.source_path("../claims.yaml"))
run_hooks.check_reductions(config, CLAIMS)


def out(path):
    """Contract ``path`` (``results/...``, ``figures/...``, ``logs/...``) in this scale's
    output root: unchanged at the quick scale, else under the scale's name
    (``results/paper-cpu/...``), so runs of different scales never share an output."""
    return scaled(path, SCALE)


def stage_targets(stage, paths):
    """Ask `rule all` for a stage's final outputs when the config's `stages` includes it
    (its rules stay defined: a left-out stage's path can still be asked for by name)."""
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


def with_sidecars(**outputs):
    """A rule's ``output:`` entries, each followed by its provenance sidecar: ``csv`` ->
    ``meta``, any other name ``x`` -> ``x_meta``, so a path is written once per rule."""
    named = {}
    for name, path in outputs.items():
        named[name] = path
        named["meta" if name == "csv" else f"{name}_meta"] = str(sidecar_path(path))
    return named


def job_log(name):
    """A job's log file, ``logs/<name>.log`` in this scale's output root."""
    return out(f"logs/{name}.log")


def job_benchmark(name):
    """A job's benchmark table, ``logs/benchmarks/<name>.tsv`` (the cost model reads it)."""
    return out(f"logs/benchmarks/{name}.tsv")


# Figure contract path (unscaled) -> its caption template under workflow/report/; the claims
# rule (report.smk) writes each full caption, template and verdicts, to results/captions/.
FIGURE_TEMPLATES = {}


def report_figure(figure, template, **report_args):
    """``report(figure, ...)`` captioned by the claims rule's caption once it exists (the
    report is built after a full run), else by the bare template; ``figure`` is this scale's
    path (``out(...)``), ``report_args`` category, subcategory, ..."""
    FIGURE_TEMPLATES[unscaled(figure, SCALE)] = f"workflow/report/{template}"
    made = Path(out(caption_path(unscaled(figure, SCALE))))
    caption = str(made.resolve()) if made.is_file() else f"../report/{template}"
    return report(figure, caption=caption, **report_args)


# Every job's resources from the cost model (constants fitted to our measurements in
# workflow/costs/): runtime twice the predicted time plus 5 minutes (or the config's
# runtime_min when it is not 0), mem_mb 1.5 times the predicted peak plus 200 MB.
COSTS = CostModel.load(workflow.source_path("../costs/constants.yaml"))


def job_resources(formula=None, *, runtime_min=0, twin=None, measured=True, **more):
    """A rule's ``resources:``, its cost said once (galu.workflow.planning.costs.RuleCost):
    ``resources: **job_resources(scm_costs.ode)``, the formula from its stage's
    galu/<paper>/costs.py (none: the rule's fitted constants only); ``runtime_min`` the
    minutes its configuration sets (a function of the wildcards where they choose the
    section; 0: the model's); ``twin`` the rule whose constants it borrows until measured;
    ``measured=False`` for a new rule (the default constants until a run measures it).
    """
    cost = RuleCost(formula, runtime_min, twin, measured)
    return {
        "mem_mb": Request(cost, COSTS, config, "mem_mb"),
        "runtime": Request(cost, COSTS, config, "runtime"),
        **more,
    }


onstart:
    run_hooks.check_costs(workflow, config, COSTS, workflow.dag.needrun_jobs())
    run_hooks.keep_last_good(workflow)
    run_hooks.start_warm_jobs(workflow, workflow.dag.needrun_jobs())


onerror:
    run_hooks.put_back_last_good(workflow)


# Each script rule's code closure becomes its `code` param (the Snakefile calls after_rules
# once all the rules are defined).
CODE, CODE_LEDGER = run_hooks.code_tracking(workflow.basedir)


def after_rules(rules):
    """Once all the rules are defined, the files are checked against the rules that make
    them, and each script rule's code closure is made its `code` param."""
    run_hooks.check_files(workflow, config)
    run_hooks.track_code(rules, CODE, CODE_LEDGER)
