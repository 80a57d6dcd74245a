# Deep plain MLPs on CIFAR-10 (Richemond & Guo, arXiv 1905.01369, Sec. 4): a learning-rate
# sweep per activation, one training job per activation and depth (curves, layer spectra,
# Jacobian spectra), the tables gathered from them, the ablation (optimizers, learning rates
# and gains at one depth; ours) and the correlations of networks at initialization. Their figures: galu/normalization/stage.py, drawn by figures.smk.

from galu.normalization import costs as norm_costs
from galu.seeding import run_seeds

NORM_TRAIN = config["normalization"]["trainability"]
# The training jobs' runtime setting (normalization.trainability.runtime_min; 0: the model's).
NORM_RUNTIME = {"runtime_min": NORM_TRAIN["runtime_min"], "gpu": NORM_TRAIN["gpus"]}
NORM_SPECTRA = config["normalization"]["spectra"]
NORM_ABLATION = config["normalization"]["ablation"]
NORM_CIFAR = "data/processed/cifar10.npz"
# One training job's outputs: results/normalization/runs/<activation>_depth<d>_<kind>.csv
NORM_RUN = out("results/normalization/runs/{norm_activation}_depth{norm_depth}")
# Seeds per trained activation (trainability.seeds, or its own count under seeds_of), and
# every seed any of them trains (the gathered tables' record).
NORM_SEEDS_OF = {
    act: run_seeds(config["seed"], NORM_TRAIN["seeds_of"].get(act, NORM_TRAIN["seeds"]))
    for act in NORM_TRAIN["activations"]
}
NORM_SEEDS = sorted(set().union(*NORM_SEEDS_OF.values()))
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
    ablation_activation="|".join(NORM_ABLATION["activations"]),


rule normalization_lr_sweep:
    input:
        npz=NORM_CIFAR,
    output:
        **with_sidecars(csv=out("results/normalization/lr_sweep/{norm_activation}.csv")),
    log:
        job_log("normalization/lr_sweep_{norm_activation}"),
    benchmark:
        job_benchmark("normalization/lr_sweep_{norm_activation}")
    conda:
        ENV
    threads: 1
    resources:
        **job_resources(norm_costs.lr_sweep, **NORM_RUNTIME),
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
        sweep=rules.normalization_lr_sweep.output.csv,
    output:
        **with_sidecars(
            curves=f"{NORM_RUN}_curves.csv",
            spectra=f"{NORM_RUN}_spectra.csv",
            jacobian=f"{NORM_RUN}_jacobian.csv",
        ),
    log:
        job_log("normalization/train_{norm_activation}_depth{norm_depth}"),
    benchmark:
        job_benchmark("normalization/train_{norm_activation}_depth{norm_depth}")
    conda:
        ENV
    threads: 1
    resources:
        **job_resources(norm_costs.training, **NORM_RUNTIME),
    params:
        epochs=NORM_TRAIN["epochs"],
        data=NORM_DATA,
        seeds=lambda wc: NORM_SEEDS_OF[wc.norm_activation],
        data_seed=config["seed"],
        device=config["device"],
        spectra=lambda wc: wc.norm_activation in NORM_SPECTRA_ACTS,
        jacobian_samples=lambda wc: NORM_JACOBIAN[
            wc.norm_activation in NORM_SPECTRA_ACTS
        ],
    script:
        "../../scripts/normalization_train.py"


# The training jobs' wildcards: every one, and those whose spectra are kept.
NORM_TRAINED = dict(norm_activation=NORM_TRAIN["activations"], norm_depth=NORM_DEPTHS)
NORM_KEPT = dict(norm_activation=NORM_SPECTRA_ACTS, norm_depth=NORM_DEPTHS)


rule normalization_trainability:
    input:
        curves=expand(rules.normalization_train.output.curves, **NORM_TRAINED),
        sweeps=expand(
            rules.normalization_lr_sweep.output.csv,
            norm_activation=NORM_TRAIN["activations"],
        ),
    output:
        **with_sidecars(
            csv=out("results/normalization/trainability.csv"),
            runs=out("results/normalization/trainability_runs.csv"),
            max_depth=out("results/normalization/max_depth.csv"),
            max_depth_by_fraction=out(
                "results/normalization/max_depth_by_fraction.csv"
            ),
            lr_sweep=out("results/normalization/lr_sweep.csv"),
        ),
    log:
        job_log("normalization/trainability"),
    benchmark:
        job_benchmark("normalization/trainability")
    conda:
        ENV
    threads: 1
    resources:
        **job_resources(),
    params:
        loss_fraction=NORM_TRAIN["loss_fraction"],
        seeds=NORM_SEEDS,
    script:
        "../../scripts/normalization_trainability.py"


rule normalization_spectra:
    input:
        spectra=expand(rules.normalization_train.output.spectra, **NORM_KEPT),
        jacobian=expand(rules.normalization_train.output.jacobian, **NORM_KEPT),
    output:
        **with_sidecars(
            csv=out("results/normalization/spectra.csv"),
            jacobian=out("results/normalization/jacobian.csv"),
        ),
    log:
        job_log("normalization/spectra"),
    benchmark:
        job_benchmark("normalization/spectra")
    conda:
        ENV
    threads: 1
    resources:
        **job_resources(),
    params:
        seeds=NORM_SEEDS,
    script:
        "../../scripts/normalization_spectra.py"


# Ours, beyond the paper: per activation, one network per optimizer, learning rate and gain
# at the ablation's depth, with the training jobs' data, epochs and criterion.
rule normalization_ablation:
    input:
        npz=NORM_CIFAR,
    output:
        **with_sidecars(
            curves=out(
                "results/normalization/ablation/{ablation_activation}_curves.csv"
            )
        ),
    log:
        job_log("normalization/ablation_{ablation_activation}"),
    benchmark:
        job_benchmark("normalization/ablation_{ablation_activation}")
    conda:
        ENV
    threads: 1
    resources:
        **job_resources(norm_costs.ablation, **NORM_RUNTIME),
    params:
        settings=NORM_ABLATION,
        epochs=NORM_TRAIN["epochs"],
        data=NORM_DATA,
        seed=config["seed"],
        device=config["device"],
    script:
        "../../scripts/normalization_ablation.py"


rule normalization_ablation_table:
    input:
        curves=expand(
            rules.normalization_ablation.output.curves,
            ablation_activation=NORM_ABLATION["activations"],
        ),
    output:
        **with_sidecars(csv=out("results/normalization/ablation.csv")),
    log:
        job_log("normalization/ablation_table"),
    benchmark:
        job_benchmark("normalization/ablation_table")
    conda:
        ENV
    threads: 1
    resources:
        **job_resources(),
    params:
        loss_fraction=NORM_TRAIN["loss_fraction"],
        seed=config["seed"],
    script:
        "../../scripts/normalization_ablation_table.py"


# Networks at initialization only (no training): how each layer changes the correlation
# between two images' representations, the diagnostic of the depth experiments.
rule normalization_correlations:
    input:
        npz=NORM_CIFAR,
    output:
        **with_sidecars(csv=out("results/normalization/correlations.csv")),
    log:
        job_log("normalization/correlations"),
    benchmark:
        job_benchmark("normalization/correlations")
    conda:
        ENV
    threads: 1
    resources:
        **job_resources(norm_costs.correlations),
    params:
        settings=config["normalization"]["correlations"],
        # The same subset and standardization as the training runs.
        n_train=NORM_TRAIN["n_train"],
        seed=config["seed"],
    script:
        "../../scripts/normalization_correlations.py"


# A second width for some activations and depths (normalization.wide; none at most scales):
# the same sweep and training scripts, at that width, into results/normalization/wide/.
NORM_WIDE = config["normalization"]["wide"]
NORM_WIDE_RUN = out(
    "results/normalization/wide/runs/{norm_activation}_depth{norm_depth}"
)
NORM_WIDE_SEEDS = run_seeds(config["seed"], NORM_WIDE["seeds"])


use rule normalization_lr_sweep as normalization_lr_sweep_wide with:
    output:
        **with_sidecars(
            csv=out("results/normalization/wide/lr_sweep/{norm_activation}.csv")
        ),
    log:
        job_log("normalization/wide/lr_sweep_{norm_activation}"),
    benchmark:
        job_benchmark("normalization/wide/lr_sweep_{norm_activation}")
    resources:
        **job_resources(
            norm_costs.AtWideWidth(norm_costs.lr_sweep),
            twin="normalization_lr_sweep",
            **NORM_RUNTIME,
        ),
    params:
        sweep={
            **NORM_TRAIN["lr_sweep"],
            "lrs": NORM_WIDE["lrs"] or NORM_TRAIN["lr_sweep"]["lrs"],
        },
        widths=[NORM_WIDE["width"]],
        data=NORM_DATA,
        seed=config["seed"],
        device=config["device"],


use rule normalization_train as normalization_train_wide with:
    input:
        npz=NORM_CIFAR,
        sweep=rules.normalization_lr_sweep_wide.output.csv,
    output:
        **with_sidecars(
            curves=f"{NORM_WIDE_RUN}_curves.csv",
            spectra=f"{NORM_WIDE_RUN}_spectra.csv",
            jacobian=f"{NORM_WIDE_RUN}_jacobian.csv",
        ),
    log:
        job_log("normalization/wide/train_{norm_activation}_depth{norm_depth}"),
    benchmark:
        job_benchmark("normalization/wide/train_{norm_activation}_depth{norm_depth}")
    resources:
        **job_resources(
            norm_costs.AtWideWidth(norm_costs.training),
            twin="normalization_train",
            **NORM_RUNTIME,
        ),
    params:
        epochs=NORM_WIDE["epochs"],
        data=NORM_DATA,
        seeds=NORM_WIDE_SEEDS,
        data_seed=config["seed"],
        device=config["device"],
        spectra=False,
        jacobian_samples=0,


# The wide runs and the trainability runs of the same activations and depths, judged at the
# epoch the wide runs reach.
NORM_WIDE_JOBS = dict(
    norm_activation=NORM_WIDE["activations"], norm_depth=NORM_WIDE["depths"]
)


rule normalization_widths:
    input:
        curves=expand(rules.normalization_train_wide.output.curves, **NORM_WIDE_JOBS)
        + expand(rules.normalization_train.output.curves, **NORM_WIDE_JOBS),
    output:
        **with_sidecars(csv=out("results/normalization/widths.csv")),
    log:
        job_log("normalization/widths"),
    benchmark:
        job_benchmark("normalization/widths")
    conda:
        ENV
    threads: 1
    resources:
        **job_resources(),
    params:
        loss_fraction=NORM_TRAIN["loss_fraction"],
        epoch=NORM_WIDE["epochs"],
        seeds=sorted(set(NORM_SEEDS) | set(NORM_WIDE_SEEDS)),
    script:
        "../../scripts/normalization_widths.py"


use rule normalization_correlations as normalization_correlations_wide with:
    output:
        **with_sidecars(csv=out("results/normalization/wide/correlations.csv")),
    log:
        job_log("normalization/wide/correlations"),
    benchmark:
        job_benchmark("normalization/wide/correlations")
    resources:
        **job_resources(
            norm_costs.AtWideWidth(norm_costs.correlations),
            twin="normalization_correlations",
        ),
    params:
        settings={
            **config["normalization"]["correlations"],
            "activations": NORM_WIDE["activations"],
            "width": NORM_WIDE["width"],
        },
        n_train=NORM_TRAIN["n_train"],
        seed=config["seed"],


# The tables the claims and the figures read (docs/design.md, Contracts).
stage_targets(
    "normalization",
    [
        rules.normalization_trainability.output.csv,
        rules.normalization_trainability.output.max_depth,
        rules.normalization_trainability.output.max_depth_by_fraction,
        rules.normalization_spectra.output.csv,
        rules.normalization_spectra.output.jacobian,
        rules.normalization_correlations.output.csv,
        rules.normalization_ablation_table.output.csv,
    ]
    + (
        [
            rules.normalization_widths.output.csv,
            rules.normalization_correlations_wide.output.csv,
        ]
        if NORM_WIDE["activations"]
        else []
    ),
)
