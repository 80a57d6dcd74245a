# GaLU generalization (Fiat, Malach & Shalev-Shwartz, arXiv 1906.05032, sec. 5):
# MNIST and Fashion-MNIST (T hidden layers, PCA-64 inputs, hyper-parameters picked on a
# validation split), Gaussian clusters against label noise, linearly separable data against
# the training-set size, and parity. One training job per dataset; its grid of models,
# widths, seeds, learning rates and gate scales trains as one ensemble. Plot rules only
# read the per-dataset tables; the aggregate accuracy.csv is what the claims read.

from galu.generalization import costs as gen_costs

GEN = config["generalization"]
GEN_RUN = out("results/generalization/runs/{name}.csv")
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
        **job_resources(
            gen_costs.images,
            runtime_min=GEN["images"]["runtime_min"],
            gpu=1 if GEN["gpu"] else 0,
        ),
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
        **job_resources(
            gen_costs.synthetic,
            runtime_min=lambda wc: GEN[wc["gen_task"]]["runtime_min"],
            gpu=1 if GEN["gpu"] else 0,
        ),
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
        **job_resources(),
    script:
        "../../scripts/generalization_accuracy.py"


stage_targets(
    "generalization",
    [
        rules.generalization_accuracy.output.csv,
    ],
)
