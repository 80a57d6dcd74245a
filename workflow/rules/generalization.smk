# GaLU generalization (Fiat, Malach & Shalev-Shwartz, arXiv 1906.05032, sec. 5):
# MNIST and Fashion-MNIST (T hidden layers, PCA-64 inputs, hyper-parameters picked on a
# validation split), Gaussian clusters against label noise, linearly separable data against
# the training-set size, and parity. One training job per dataset; its grid of models,
# widths, seeds, learning rates and gate scales trains as one ensemble. Plot rules only
# read the per-dataset tables; the aggregate accuracy.csv is what the claims read.

GEN = config["generalization"]
GEN_RUN = out("results/generalization/runs/{name}.csv")
GEN_FIGURE = out("figures/generalization/{name}.{ext}")
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
        **with_sidecars(
            csv=GEN_RUN.format(name="{gen_image}"),
            grid=GEN_RUN.format(name="{gen_image}_grid"),
        ),
    log:
        job_log("generalization/{gen_image}"),
    benchmark:
        job_benchmark("generalization/{gen_image}")
    conda:
        ENV
    # Small matrices: per-operation overhead dominates and extra threads only contend.
    threads: 1
    resources:
        **job_resources("generalization_images", gpu=1 if GEN["gpu"] else 0),
    params:
        settings=GEN_PARAMS["images"],
        seed=config["seed"],
        device=config["device"],
    script:
        "../../scripts/generalization_images.py"


rule generalization_synthetic:
    output:
        **with_sidecars(csv=GEN_RUN.format(name="{gen_task}")),
    log:
        job_log("generalization/{gen_task}"),
    benchmark:
        job_benchmark("generalization/{gen_task}")
    conda:
        ENV
    threads: 1
    resources:
        **job_resources("generalization_synthetic", gpu=1 if GEN["gpu"] else 0),
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
        **with_sidecars(csv=out("results/generalization/accuracy.csv")),
    log:
        job_log("generalization/accuracy"),
    benchmark:
        job_benchmark("generalization/accuracy")
    conda:
        ENV
    threads: 1
    resources:
        **job_resources("generalization_accuracy"),
    script:
        "../../scripts/generalization_accuracy.py"


GEN_IMAGE_TABLE = [
    "galu.generalization.experiments.image_experiment",
    "galu.generalization.experiments.image_accuracy",
]
GEN_SYNTHETIC_TABLE = ["galu.generalization.experiments.synthetic_experiment"]
# The stage's figures, one per dataset: name -> caption: its template
# workflow/report/generalization_<caption>.rst (the two image datasets share one);
# subcategory: in the report; tables: the one table it reads, runs/<name>.csv, under the
# dataset's name with the functions that computed it (recorded in the figure's sidecar);
# draw: the drawing function's parameters (only the image figures show the depth, so other
# figures do not rerun when it changes). Figure <name> is drawn by
# galu.generalization.figures.DRAW[name]; those of `generalization.datasets` (GEN_PLOTTED) get
# a plot rule each, reading only its table.
GEN_FIGURES = {
    **{
        image: dict(
            caption="images",
            subcategory="MNIST and Fashion-MNIST",
            tables={image: (GEN_RUN.format(name=image), GEN_IMAGE_TABLE)},
            draw={"dataset": image, "depth": GEN["images"]["depth"]},
        )
        for image in ("mnist", "fashion_mnist")
    },
    **{
        task: dict(
            caption=task,
            subcategory=subcategory,
            tables={task: (GEN_RUN.format(name=task), GEN_SYNTHETIC_TABLE)},
            draw={},
        )
        for task, subcategory in (
            ("clusters", "Gaussian clusters"),
            ("linear", "Linearly separable data"),
            ("parity", "Parity"),
        )
    },
}
GEN_PLOTTED = [name for name in GEN_FIGURES if name in GEN["datasets"]]

for gen_name in GEN_PLOTTED:
    gen_spec = GEN_FIGURES[gen_name]

    rule:
        name:
            f"generalization_plot_{gen_name}"
        input:
            **{table: path for table, (path, _) in gen_spec["tables"].items()},
        output:
            **with_sidecars(
                png=report_figure(
                    GEN_FIGURE.format(name=gen_name, ext="png"),
                    f"generalization_{gen_spec['caption']}.rst",
                    category="GaLU generalization",
                    subcategory=gen_spec["subcategory"],
                ),
                pdf=GEN_FIGURE.format(name=gen_name, ext="pdf"),
            ),
        log:
            job_log(f"generalization/plot_{gen_name}"),
        benchmark:
            job_benchmark(f"generalization/plot_{gen_name}")
        group:
            "plots"
        conda:
            ENV
        threads: 1
        resources:
            **job_resources(f"generalization_plot_{gen_name}"),
        params:
            figure=gen_name,
            draw=gen_spec["draw"],
            scale=SCALE,
            computed_by={t: made_by for t, (_, made_by) in gen_spec["tables"].items()},
        script:
            "../../scripts/generalization_plot.py"


stage_targets(
    "generalization",
    [
        rules.generalization_accuracy.output.csv,
        *(GEN_FIGURE.format(name=name, ext="png") for name in GEN_PLOTTED),
    ],
)
