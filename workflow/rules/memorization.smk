# GaLU memorization and capacity (Fiat, Malach & Shalev-Shwartz, arXiv 1906.05032, sec. 3):
# the under-parameterized loss law 1 - kd/m, and the minimal width that memorizes m
# random examples (Gaussian label vectors: criterion mse; random signs: zero_error). One
# training job per experiment, each fitting all its networks as padded ensembles; the two
# searches land in runs/ and are stacked into min_width.csv. Plot rules only read tables.

MEM = config["memorization"]
MEM_RUN = out("results/memorization/runs/min_width_{criterion}.csv")
# One search job per part: `parts` splits a criterion's searches into jobs
# (galu.memorization.search_parts), so no job runs for hours; memorization_search_table
# stacks them in order.
MEM_PART = out("results/memorization/runs/min_width_{criterion}/part{part}.csv")
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


wildcard_constraints:
    criterion="mse|zero_error",
    part=r"\d+",


rule memorization_underparam:
    output:
        csv=out("results/memorization/underparam.csv"),
        meta=meta(out("results/memorization/underparam.csv")),
    log:
        out("logs/memorization/underparam.log"),
    benchmark:
        out("logs/benchmarks/memorization/underparam.tsv")
    conda:
        ENV
    # Small matrices: per-operation overhead dominates and extra threads only contend.
    threads: 1
    resources:
        mem_mb=cost_mem("memorization_underparam"),
        runtime=cost_runtime("memorization_underparam"),
        gpu=1 if MEM["gpu"] else 0,
    params:
        settings=MEM_PARAMS["underparam"],
        common=MEM_COMMON,
    script:
        "../../scripts/memorization_underparam.py"


rule memorization_search:
    output:
        csv=MEM_PART,
        meta=meta(MEM_PART),
    log:
        out("logs/memorization/min_width_{criterion}_part{part}.log"),
    benchmark:
        out("logs/benchmarks/memorization/min_width_{criterion}_part{part}.tsv")
    conda:
        ENV
    threads: 1
    resources:
        mem_mb=cost_mem("memorization_search"),
        runtime=cost_runtime("memorization_search"),
        gpu=1 if MEM["gpu"] else 0,
    params:
        settings=lambda wc: MEM_PARAMS[wc.criterion],
        common=MEM_COMMON,
    script:
        "../../scripts/memorization_min_width.py"


rule memorization_search_table:
    input:
        lambda wc: expand(
            MEM_PART,
            criterion=wc.criterion,
            part=range(MEM["min_width"][wc.criterion].get("parts", 1)),
        ),
    output:
        csv=MEM_RUN,
        meta=meta(MEM_RUN),
    log:
        out("logs/memorization/min_width_{criterion}_stack.log"),
    benchmark:
        out("logs/benchmarks/memorization/stack_min_width_{criterion}.tsv")
    conda:
        ENV
    threads: 1
    resources:
        mem_mb=cost_mem("memorization_search_table"),
        runtime=cost_runtime("memorization_search_table"),
    script:
        "../../scripts/memorization_stack_parts.py"


rule memorization_min_width:
    input:
        expand(MEM_RUN, criterion=["mse", "zero_error"]),
    output:
        csv=out("results/memorization/min_width.csv"),
        meta=meta(out("results/memorization/min_width.csv")),
    log:
        out("logs/memorization/min_width.log"),
    benchmark:
        out("logs/benchmarks/memorization/min_width.tsv")
    conda:
        ENV
    threads: 1
    resources:
        mem_mb=cost_mem("memorization_min_width"),
        runtime=cost_runtime("memorization_min_width"),
    script:
        "../../scripts/memorization_collect.py"


# the functions that compute a criterion's runs/min_width_<criterion>.csv
MEM_SEARCH_TABLE = [
    "galu.memorization.experiments.min_width_table",
    "galu.memorization.search_parts.stack_parts",
]

# The stage's figures: name -> the tables it reads (by name; the drawing function gets them
# under these names) and, per table, the functions that computed it (recorded in the figure's
# sidecar). Figure <name> is drawn by galu.memorization.figures.draw_<name>, captioned by
# workflow/report/memorization_<name>.rst; one plot rule per entry, reading only its tables.
MEM_FIGURES = {
    "underparam": {
        "underparam": (
            out("results/memorization/underparam.csv"),
            ["galu.memorization.experiments.underparam_table"],
        ),
    },
    "min_width": {
        "min_width_mse": (MEM_RUN.format(criterion="mse"), MEM_SEARCH_TABLE),
    },
    "zero_error": {
        "min_width_zero_error": (
            MEM_RUN.format(criterion="zero_error"),
            MEM_SEARCH_TABLE,
        ),
    },
}

for mem_name, mem_tables in MEM_FIGURES.items():

    rule:
        name:
            f"memorization_plot_{mem_name}"
        input:
            **{table: path for table, (path, _) in mem_tables.items()},
        output:
            png=report_figure(
                out(f"figures/memorization/{mem_name}.png"),
                f"memorization_{mem_name}.rst",
                category="GaLU memorization",
                subcategory=mem_name.replace("_", " "),
            ),
            pdf=out(f"figures/memorization/{mem_name}.pdf"),
            png_meta=meta(out(f"figures/memorization/{mem_name}.png")),
            pdf_meta=meta(out(f"figures/memorization/{mem_name}.pdf")),
        log:
            out(f"logs/memorization/plot_{mem_name}.log"),
        benchmark:
            out(f"logs/benchmarks/memorization/plot_{mem_name}.tsv")
        group:
            "plots"
        conda:
            ENV
        threads: 1
        resources:
            mem_mb=cost_mem(f"memorization_plot_{mem_name}"),
            runtime=cost_runtime(f"memorization_plot_{mem_name}"),
        params:
            figure=mem_name,
            scale=SCALE,
            computed_by={table: made_by for table, (_, made_by) in mem_tables.items()},
        script:
            "../../scripts/memorization_plot.py"


ALL_TARGETS.extend(
    [
        out("results/memorization/underparam.csv"),
        out("results/memorization/min_width.csv"),
        *(out(f"figures/memorization/{name}.png") for name in MEM_FIGURES),
    ]
)
