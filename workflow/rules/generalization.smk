# GaLU generalization (Fiat, Malach & Shalev-Shwartz, arXiv 1906.05032, sec. 5):
# MNIST and Fashion-MNIST (T hidden layers, PCA-64 inputs, hyper-parameters picked on a
# validation split), Gaussian clusters against label noise, linearly separable data against
# the training-set size, and parity. One training job per dataset; its grid of models,
# widths, seeds, learning rates and gate scales trains as one ensemble. Plot rules only
# read the per-dataset tables; the aggregate accuracy.csv is what the claims read.

GEN = config["generalization"]
GEN_RUN = out("results/generalization/runs/{name}.csv")
GEN_FIGURE = out("figures/generalization/{name}.png")
# Each section's parameters: runtime_min sizes the scheduler request only and is left out, so
# changing it never reruns a job.
GEN_PARAMS = {
    name: {key: value for key, value in GEN[name].items() if key != "runtime_min"}
    for name in ("images", "clusters", "linear", "parity")
}


wildcard_constraints:
    gen_image="mnist|fashion_mnist",
    gen_task="clusters|linear|parity",


rule generalization_images:
    input:
        npz="data/processed/{gen_image}.npz",
    output:
        csv=GEN_RUN.format(name="{gen_image}"),
        meta=meta(GEN_RUN.format(name="{gen_image}")),
        grid=GEN_RUN.format(name="{gen_image}_grid"),
        grid_meta=meta(GEN_RUN.format(name="{gen_image}_grid")),
    log:
        out("logs/generalization/{gen_image}.log"),
    benchmark:
        out("logs/benchmarks/generalization/{gen_image}.tsv")
    conda:
        ENV
    # Small matrices: per-operation overhead dominates and extra threads only contend.
    threads: 1
    resources:
        mem_mb=cost_mem("generalization_images"),
        runtime=cost_runtime("generalization_images"),
        gpu=1 if GEN["gpu"] else 0,
    params:
        settings=GEN_PARAMS["images"],
        seed=config["seed"],
        device=config["device"],
    script:
        "../../scripts/generalization_images.py"


rule generalization_synthetic:
    output:
        csv=GEN_RUN.format(name="{gen_task}"),
        meta=meta(GEN_RUN.format(name="{gen_task}")),
    log:
        out("logs/generalization/{gen_task}.log"),
    benchmark:
        out("logs/benchmarks/generalization/{gen_task}.tsv")
    conda:
        ENV
    threads: 1
    resources:
        mem_mb=cost_mem("generalization_synthetic"),
        runtime=cost_runtime("generalization_synthetic"),
        gpu=1 if GEN["gpu"] else 0,
    params:
        settings=lambda wc: GEN_PARAMS[wc.gen_task],
        seed=config["seed"],
        device=config["device"],
    script:
        "../../scripts/generalization_synthetic.py"


rule generalization_accuracy:
    input:
        expand(GEN_RUN, name=GEN["datasets"]),
    output:
        csv=out("results/generalization/accuracy.csv"),
        meta=meta(out("results/generalization/accuracy.csv")),
    log:
        out("logs/generalization/accuracy.log"),
    benchmark:
        out("logs/benchmarks/generalization/accuracy.tsv")
    conda:
        ENV
    threads: 1
    resources:
        mem_mb=cost_mem("generalization_accuracy"),
        runtime=cost_runtime("generalization_accuracy"),
    script:
        "../../scripts/generalization_accuracy.py"


# One plot rule per figure: name -> (caption, report subcategory). The two image datasets
# share a caption; each rule reads only its own dataset's table.
GEN_PLOTS = {
    "mnist": ("images", "MNIST and Fashion-MNIST"),
    "fashion_mnist": ("images", "MNIST and Fashion-MNIST"),
    "clusters": ("clusters", "Gaussian clusters"),
    "linear": ("linear", "Linearly separable data"),
    "parity": ("parity", "Parity"),
}

for gen_name in GEN["datasets"]:
    gen_caption, gen_subcategory = GEN_PLOTS[gen_name]

    rule:
        name:
            f"generalization_plot_{gen_name}"
        input:
            csv=GEN_RUN.format(name=gen_name),
        output:
            png=report_figure(
                GEN_FIGURE.format(name=gen_name),
                f"generalization_{gen_caption}.rst",
                category="GaLU generalization",
                subcategory=gen_subcategory,
            ),
            pdf=out(f"figures/generalization/{gen_name}.pdf"),
            png_meta=meta(GEN_FIGURE.format(name=gen_name)),
            pdf_meta=meta(out(f"figures/generalization/{gen_name}.pdf")),
        log:
            out(f"logs/generalization/plot_{gen_name}.log"),
        benchmark:
            out(f"logs/benchmarks/generalization/plot_{gen_name}.tsv")
        group:
            "plots"
        conda:
            ENV
        threads: 1
        resources:
            mem_mb=cost_mem(f"generalization_plot_{gen_name}"),
            runtime=cost_runtime(f"generalization_plot_{gen_name}"),
        params:
            figure=gen_name,
            # Only the image figures show the depth: other figures do not rerun when it changes.
            depth=GEN["images"]["depth"] if gen_caption == "images" else None,
            scale=SCALE,
        script:
            "../../scripts/generalization_plot.py"


ALL_TARGETS.extend(
    [
        out("results/generalization/accuracy.csv"),
        *expand(GEN_FIGURE, name=GEN["datasets"]),
    ]
)
