# Static activation normalization, the experiments (Richemond & Guo, arXiv 1905.01369):
# static isometry against Marchenko-Pastur, trainability of deep plain MLPs on
# CIFAR-10 with a learning-rate sweep per activation, and layer / Jacobian spectra.
# Training jobs are one per activation and depth; plot rules only read the tidy CSVs.

NORM_ISO = config["normalization"]["isometry"]
NORM_TRAIN = config["normalization"]["trainability"]
NORM_SPECTRA = config["normalization"]["spectra"]
NORM_CORR = config["normalization"]["correlations"]
NORM_CIFAR = "data/processed/cifar10.npz"
# One training job's outputs: results/normalization/runs/<activation>_depth<d>_<kind>.csv
NORM_RUN = out("results/normalization/runs/{norm_activation}_depth{norm_depth}")
NORM_SEEDS = [config["seed"] + i for i in range(NORM_TRAIN["seeds"])]
# Spectra are kept only for activations that are also trained.
NORM_SPECTRA_ACTS = [
    a for a in NORM_SPECTRA["activations"] if a in NORM_TRAIN["activations"]
]
NORM_DEPTHS = NORM_TRAIN["depths"]
# Jacobian inputs per training job, keyed by "are this activation's spectra kept?".
NORM_JACOBIAN = {True: NORM_SPECTRA["jacobian_samples"], False: 0}
# Data settings shared by the sweep and the training jobs (same subset, same batches).
NORM_DATA = {
    key: NORM_TRAIN[key] for key in ("n_train", "n_test", "batch_size", "momentum")
}


wildcard_constraints:
    norm_activation="|".join(NORM_TRAIN["activations"]),
    norm_depth=r"\d+",


rule normalization_isometry:
    output:
        csv=out("results/normalization/isometry.csv"),
        meta=meta(out("results/normalization/isometry.csv")),
        eigenvalues=out("results/normalization/isometry_eigenvalues.csv"),
        eigenvalues_meta=meta(out("results/normalization/isometry_eigenvalues.csv")),
    log:
        out("logs/normalization/isometry.log"),
    benchmark:
        out("logs/benchmarks/normalization/isometry.tsv")
    conda:
        ENV
    threads: 1
    resources:
        mem_mb=cost_mem("normalization_isometry"),
        runtime=cost_runtime("normalization_isometry"),
    params:
        activations=NORM_ISO["activations"],
        n=NORM_ISO["n"],
        seeds=[config["seed"] + i for i in range(NORM_ISO["seeds"])],
    script:
        "../../scripts/normalization_isometry.py"


rule normalization_lr_sweep:
    input:
        npz=NORM_CIFAR,
    output:
        csv=out("results/normalization/lr_sweep/{norm_activation}.csv"),
        meta=meta(out("results/normalization/lr_sweep/{norm_activation}.csv")),
    log:
        out("logs/normalization/lr_sweep_{norm_activation}.log"),
    benchmark:
        out("logs/benchmarks/normalization/lr_sweep_{norm_activation}.tsv")
    conda:
        ENV
    threads: 1
    resources:
        mem_mb=cost_mem("normalization_lr_sweep"),
        runtime=cost_runtime("normalization_lr_sweep"),
        gpu=NORM_TRAIN["gpus"],
    params:
        sweep=NORM_TRAIN["lr_sweep"],
        widths=NORM_TRAIN["widths"],
        data=NORM_DATA,
        seed=config["seed"],
        device=config["device"],
    script:
        "../../scripts/normalization_lr_sweep.py"


rule normalization_train:
    input:
        npz=NORM_CIFAR,
        sweep=out("results/normalization/lr_sweep/{norm_activation}.csv"),
    output:
        curves=f"{NORM_RUN}_curves.csv",
        curves_meta=meta(f"{NORM_RUN}_curves.csv"),
        spectra=f"{NORM_RUN}_spectra.csv",
        spectra_meta=meta(f"{NORM_RUN}_spectra.csv"),
        jacobian=f"{NORM_RUN}_jacobian.csv",
        jacobian_meta=meta(f"{NORM_RUN}_jacobian.csv"),
    log:
        out("logs/normalization/train_{norm_activation}_depth{norm_depth}.log"),
    benchmark:
        out(
            "logs/benchmarks/normalization/train_{norm_activation}_depth{norm_depth}.tsv"
        )
    conda:
        ENV
    threads: 1
    resources:
        mem_mb=cost_mem("normalization_train"),
        runtime=cost_runtime("normalization_train"),
        gpu=NORM_TRAIN["gpus"],
    params:
        epochs=NORM_TRAIN["epochs"],
        data=NORM_DATA,
        seeds=NORM_SEEDS,
        data_seed=config["seed"],
        device=config["device"],
        spectra=lambda wc: wc.norm_activation in NORM_SPECTRA_ACTS,
        jacobian_samples=lambda wc: NORM_JACOBIAN[
            wc.norm_activation in NORM_SPECTRA_ACTS
        ],
    script:
        "../../scripts/normalization_train.py"


rule normalization_trainability:
    input:
        curves=expand(
            f"{NORM_RUN}_curves.csv",
            norm_activation=NORM_TRAIN["activations"],
            norm_depth=NORM_DEPTHS,
        ),
        sweeps=expand(
            out("results/normalization/lr_sweep/{a}.csv"), a=NORM_TRAIN["activations"]
        ),
    output:
        csv=out("results/normalization/trainability.csv"),
        meta=meta(out("results/normalization/trainability.csv")),
        runs=out("results/normalization/trainability_runs.csv"),
        runs_meta=meta(out("results/normalization/trainability_runs.csv")),
        max_depth=out("results/normalization/max_depth.csv"),
        max_depth_meta=meta(out("results/normalization/max_depth.csv")),
        lr_sweep=out("results/normalization/lr_sweep.csv"),
        lr_sweep_meta=meta(out("results/normalization/lr_sweep.csv")),
    log:
        out("logs/normalization/trainability.log"),
    benchmark:
        out("logs/benchmarks/normalization/trainability.tsv")
    conda:
        ENV
    threads: 1
    resources:
        mem_mb=cost_mem("normalization_trainability"),
        runtime=cost_runtime("normalization_trainability"),
    params:
        loss_fraction=NORM_TRAIN["loss_fraction"],
        seeds=NORM_SEEDS,
    script:
        "../../scripts/normalization_trainability.py"


rule normalization_spectra:
    input:
        spectra=expand(
            f"{NORM_RUN}_spectra.csv",
            norm_activation=NORM_SPECTRA_ACTS,
            norm_depth=NORM_DEPTHS,
        ),
        jacobian=expand(
            f"{NORM_RUN}_jacobian.csv",
            norm_activation=NORM_SPECTRA_ACTS,
            norm_depth=NORM_DEPTHS,
        ),
    output:
        csv=out("results/normalization/spectra.csv"),
        meta=meta(out("results/normalization/spectra.csv")),
        jacobian=out("results/normalization/jacobian.csv"),
        jacobian_meta=meta(out("results/normalization/jacobian.csv")),
    log:
        out("logs/normalization/spectra.log"),
    benchmark:
        out("logs/benchmarks/normalization/spectra.tsv")
    conda:
        ENV
    threads: 1
    resources:
        mem_mb=cost_mem("normalization_spectra"),
        runtime=cost_runtime("normalization_spectra"),
    params:
        seeds=NORM_SEEDS,
    script:
        "../../scripts/normalization_spectra.py"


rule normalization_plot_isometry:
    input:
        csv=out("results/normalization/isometry.csv"),
        eigenvalues=out("results/normalization/isometry_eigenvalues.csv"),
    output:
        png=report_figure(
            out("figures/normalization/isometry.png"),
            "normalization_isometry.rst",
            category="Static normalization",
            subcategory="Static isometry",
        ),
        pdf=out("figures/normalization/isometry.pdf"),
        png_meta=meta(out("figures/normalization/isometry.png")),
        pdf_meta=meta(out("figures/normalization/isometry.pdf")),
    log:
        out("logs/normalization/plot_isometry.log"),
    benchmark:
        out("logs/benchmarks/normalization/plot_isometry.tsv")
    group:
        "plots"
    conda:
        ENV
    threads: 1
    resources:
        mem_mb=cost_mem("normalization_plot_isometry"),
        runtime=cost_runtime("normalization_plot_isometry"),
    params:
        bins=NORM_ISO["bins"],
        scale=SCALE,
    script:
        "../../scripts/normalization_plot_isometry.py"


rule normalization_plot_training:
    input:
        csv=out("results/normalization/trainability.csv"),
    output:
        png=report_figure(
            out("figures/normalization/training_curves.png"),
            "normalization_training.rst",
            category="Static normalization",
            subcategory="Trainability",
        ),
        pdf=out("figures/normalization/training_curves.pdf"),
        png_meta=meta(out("figures/normalization/training_curves.png")),
        pdf_meta=meta(out("figures/normalization/training_curves.pdf")),
    log:
        out("logs/normalization/plot_training.log"),
    benchmark:
        out("logs/benchmarks/normalization/plot_training.tsv")
    group:
        "plots"
    conda:
        ENV
    threads: 1
    resources:
        mem_mb=cost_mem("normalization_plot_training"),
        runtime=cost_runtime("normalization_plot_training"),
    params:
        scale=SCALE,
    script:
        "../../scripts/normalization_plot_training.py"


rule normalization_plot_max_depth:
    input:
        max_depth=out("results/normalization/max_depth.csv"),
        runs=out("results/normalization/trainability_runs.csv"),
    output:
        png=report_figure(
            out("figures/normalization/max_depth.png"),
            "normalization_max_depth.rst",
            category="Static normalization",
            subcategory="Trainability",
        ),
        pdf=out("figures/normalization/max_depth.pdf"),
        png_meta=meta(out("figures/normalization/max_depth.png")),
        pdf_meta=meta(out("figures/normalization/max_depth.pdf")),
    log:
        out("logs/normalization/plot_max_depth.log"),
    benchmark:
        out("logs/benchmarks/normalization/plot_max_depth.tsv")
    group:
        "plots"
    conda:
        ENV
    threads: 1
    resources:
        mem_mb=cost_mem("normalization_plot_max_depth"),
        runtime=cost_runtime("normalization_plot_max_depth"),
    params:
        loss_fraction=NORM_TRAIN["loss_fraction"],
        scale=SCALE,
    script:
        "../../scripts/normalization_plot_max_depth.py"


rule normalization_plot_layer_spectra:
    input:
        csv=out("results/normalization/spectra.csv"),
    output:
        png=report_figure(
            out("figures/normalization/layer_spectra.png"),
            "normalization_layer_spectra.rst",
            category="Static normalization",
            subcategory="Spectra",
        ),
        pdf=out("figures/normalization/layer_spectra.pdf"),
        png_meta=meta(out("figures/normalization/layer_spectra.png")),
        pdf_meta=meta(out("figures/normalization/layer_spectra.pdf")),
    log:
        out("logs/normalization/plot_layer_spectra.log"),
    benchmark:
        out("logs/benchmarks/normalization/plot_layer_spectra.tsv")
    group:
        "plots"
    conda:
        ENV
    threads: 1
    resources:
        mem_mb=cost_mem("normalization_plot_layer_spectra"),
        runtime=cost_runtime("normalization_plot_layer_spectra"),
    params:
        scale=SCALE,
    script:
        "../../scripts/normalization_plot_layer_spectra.py"


rule normalization_plot_jacobian:
    input:
        csv=out("results/normalization/jacobian.csv"),
    output:
        png=report_figure(
            out("figures/normalization/jacobian_spectra.png"),
            "normalization_jacobian.rst",
            category="Static normalization",
            subcategory="Spectra",
        ),
        pdf=out("figures/normalization/jacobian_spectra.pdf"),
        png_meta=meta(out("figures/normalization/jacobian_spectra.png")),
        pdf_meta=meta(out("figures/normalization/jacobian_spectra.pdf")),
    log:
        out("logs/normalization/plot_jacobian.log"),
    benchmark:
        out("logs/benchmarks/normalization/plot_jacobian.tsv")
    group:
        "plots"
    conda:
        ENV
    threads: 1
    resources:
        mem_mb=cost_mem("normalization_plot_jacobian"),
        runtime=cost_runtime("normalization_plot_jacobian"),
    params:
        scale=SCALE,
    script:
        "../../scripts/normalization_plot_jacobian.py"


# Networks at initialization only (no training): how each layer changes the correlation
# between two images' representations, the diagnostic of the depth experiments.
rule normalization_correlations:
    input:
        npz=NORM_CIFAR,
    output:
        csv=out("results/normalization/correlations.csv"),
        meta=meta(out("results/normalization/correlations.csv")),
    log:
        out("logs/normalization/correlations.log"),
    benchmark:
        out("logs/benchmarks/normalization/correlations.tsv")
    conda:
        ENV
    threads: 1
    resources:
        mem_mb=cost_mem("normalization_correlations"),
        runtime=cost_runtime("normalization_correlations"),
    params:
        settings=NORM_CORR,
        # The same subset and standardization as the training runs.
        n_train=NORM_TRAIN["n_train"],
        seed=config["seed"],
    script:
        "../../scripts/normalization_correlations.py"


rule normalization_plot_correlations:
    input:
        csv=out("results/normalization/correlations.csv"),
    output:
        png=report_figure(
            out("figures/normalization/correlations.png"),
            "normalization_correlations.rst",
            category="Static normalization",
            subcategory="Trainability",
        ),
        pdf=out("figures/normalization/correlations.pdf"),
        png_meta=meta(out("figures/normalization/correlations.png")),
        pdf_meta=meta(out("figures/normalization/correlations.pdf")),
    log:
        out("logs/normalization/plot_correlations.log"),
    benchmark:
        out("logs/benchmarks/normalization/plot_correlations.tsv")
    group:
        "plots"
    conda:
        ENV
    threads: 1
    resources:
        mem_mb=cost_mem("normalization_plot_correlations"),
        runtime=cost_runtime("normalization_plot_correlations"),
    params:
        scale=SCALE,
    script:
        "../../scripts/normalization_plot_correlations.py"


ALL_TARGETS.extend(
    [
        out("results/normalization/correlations.csv"),
        out("figures/normalization/correlations.png"),
        out("results/normalization/isometry.csv"),
        out("results/normalization/trainability.csv"),
        out("results/normalization/max_depth.csv"),
        out("results/normalization/spectra.csv"),
        out("results/normalization/jacobian.csv"),
        out("figures/normalization/isometry.png"),
        out("figures/normalization/training_curves.png"),
        out("figures/normalization/max_depth.png"),
        out("figures/normalization/layer_spectra.png"),
        out("figures/normalization/jacobian_spectra.png"),
    ]
)
