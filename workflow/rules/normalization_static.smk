# Static activation normalization without training or data (Richemond & Guo, arXiv
# 1905.01369): the Gaussian-moment coefficients alpha, beta, gamma of each activation, and
# static isometry, the spectra of (1/n) F F^T for raw and normalized activations against
# Marchenko-Pastur. Their figures: galu/normalization/stage.py, drawn by figures.smk.

from galu.normalization import costs as norm_costs
from galu.seeding import run_seeds

NORM_ISO = config["normalization"]["isometry"]


rule normalization_coefficients:
    output:
        **with_sidecars(
            csv=out("results/normalization/coefficients.csv"),
            summary=out("results/normalization/coefficients_summary.json"),
        ),
    log:
        job_log("normalization/coefficients"),
    benchmark:
        job_benchmark("normalization/coefficients")
    conda:
        ENV
    threads: 1
    resources:
        **job_resources(),
    params:
        settings=config["normalization"]["coefficients"],
        scale=SCALE,
    script:
        "../../scripts/normalization_coefficients.py"


rule normalization_isometry:
    output:
        **with_sidecars(
            csv=out("results/normalization/isometry.csv"),
            eigenvalues=out("results/normalization/isometry_eigenvalues.csv"),
        ),
    log:
        job_log("normalization/isometry"),
    benchmark:
        job_benchmark("normalization/isometry")
    conda:
        ENV
    threads: 1
    resources:
        **job_resources(norm_costs.isometry),
    params:
        activations=NORM_ISO["activations"],
        n=NORM_ISO["n"],
        seeds=run_seeds(config["seed"], NORM_ISO["seeds"]),
    script:
        "../../scripts/normalization_isometry.py"


# Beyond the paper: the mean-field fixed points, slopes and depth scales of the activations
# the deep MLPs train, at their gains (Schoenholz et al. 2017), beside the measured depths.
rule normalization_depth_scales:
    output:
        **with_sidecars(csv=out("results/normalization/depth_scales.csv")),
    log:
        job_log("normalization/depth_scales"),
    benchmark:
        job_benchmark("normalization/depth_scales")
    conda:
        ENV
    threads: 1
    resources:
        **job_resources(),
    params:
        activations=config["normalization"]["trainability"]["activations"],
    script:
        "../../scripts/normalization_depth_scales.py"


# The tables the claims and the figures read (docs/design.md, Contracts).
stage_targets(
    "normalization",
    [
        rules.normalization_coefficients.output.csv,
        rules.normalization_isometry.output.csv,
        rules.normalization_depth_scales.output.csv,
    ],
)
