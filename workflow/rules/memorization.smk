# GaLU memorization and capacity (Fiat, Malach & Shalev-Shwartz, arXiv 1906.05032, sec. 3):
# the under-parameterized loss law 1 - kd/m, and the minimal width that memorizes m
# random examples (Gaussian label vectors: criterion mse; random signs: zero_error). One
# training job per experiment, each fitting all its networks as padded ensembles; the two
# searches land in runs/ and are stacked into min_width.csv. The figures: figures.smk.

from galu.memorization import costs as mem_costs
from galu.memorization.stage import CRITERIA as MEM_CRITERIA

MEM = config["memorization"]
# Settings a job depends on: runtime_min only sizes the scheduler request and is left out, so
# changing it never reruns a job.
MEM_PARAMS = {
    "underparam": {k: v for k, v in MEM["underparam"].items() if k != "runtime_min"},
    **{
        criterion: {k: v for k, v in section.items() if k != "runtime_min"}
        for criterion, section in MEM["min_width"].items()
    },
}

MEM_COMMON = {
    "dtype": MEM["dtype"],
    "ensemble_overhead": MEM["ensemble_overhead"],
    "seed": config["seed"],
    "device": config["device"],
}
MEM_GPU = 1 if MEM["gpu"] else 0


wildcard_constraints:
    criterion="|".join(MEM_CRITERIA),
    part=r"\d+",


rule memorization_underparam:
    output:
        **with_sidecars(csv=out("results/memorization/underparam.csv")),
    log:
        job_log("memorization/underparam"),
    benchmark:
        job_benchmark("memorization/underparam")
    conda:
        ENV
    # Small matrices: per-operation overhead dominates and extra threads only contend.
    threads: 1
    resources:
        **job_resources(
            mem_costs.underparam,
            runtime_min=MEM["underparam"]["runtime_min"],
            gpu=MEM_GPU,
        ),
    params:
        settings=MEM_PARAMS["underparam"],
        common=MEM_COMMON,
    script:
        "../../scripts/memorization_underparam.py"


# One search job per part: `parts` splits a criterion's searches into jobs
# (galu.memorization.search_parts), so no job runs for hours; memorization_search_table
# stacks them in order.
rule memorization_search:
    output:
        **with_sidecars(
            csv=out("results/memorization/runs/min_width_{criterion}/part{part}.csv")
        ),
    log:
        job_log("memorization/min_width_{criterion}_part{part}"),
    benchmark:
        job_benchmark("memorization/min_width_{criterion}_part{part}")
    conda:
        ENV
    threads: 1
    resources:
        **job_resources(
            mem_costs.search,
            runtime_min=lambda wc: MEM["min_width"][wc["criterion"]]["runtime_min"],
            gpu=MEM_GPU,
        ),
    params:
        settings=lambda wc: MEM_PARAMS[wc.criterion],
        common=MEM_COMMON,
    script:
        "../../scripts/memorization_min_width.py"


rule memorization_search_table:
    input:
        lambda wc: expand(
            rules.memorization_search.output.csv,
            criterion=wc.criterion,
            part=range(MEM["min_width"][wc.criterion].get("parts", 1)),
        ),
    output:
        **with_sidecars(csv=out("results/memorization/runs/min_width_{criterion}.csv")),
    log:
        job_log("memorization/min_width_{criterion}_stack"),
    benchmark:
        job_benchmark("memorization/stack_min_width_{criterion}")
    conda:
        ENV
    threads: 1
    resources:
        **job_resources(),
    script:
        "../../scripts/memorization_stack_parts.py"


rule memorization_min_width:
    input:
        expand(rules.memorization_search_table.output.csv, criterion=MEM_CRITERIA),
    output:
        **with_sidecars(csv=out("results/memorization/min_width.csv")),
    log:
        job_log("memorization/min_width"),
    benchmark:
        job_benchmark("memorization/min_width")
    conda:
        ENV
    threads: 1
    resources:
        **job_resources(),
    script:
        "../../scripts/memorization_collect.py"


stage_targets(
    "memorization",
    [
        rules.memorization_underparam.output.csv,
        rules.memorization_min_width.output.csv,
    ],
)
