# Static activation normalization (Richemond & Guo, arXiv 1905.01369): the Gaussian-moment
# coefficients alpha, beta, gamma of each activation, and a figure of the normalized shapes.


rule normalization_coefficients:
    output:
        csv=out("results/normalization/coefficients.csv"),
        meta=meta(out("results/normalization/coefficients.csv")),
        summary=out("results/normalization/coefficients_summary.json"),
        summary_meta=meta(out("results/normalization/coefficients_summary.json")),
    log:
        out("logs/normalization/coefficients.log"),
    benchmark:
        out("logs/benchmarks/normalization/coefficients.tsv")
    conda:
        ENV
    threads: 1
    resources:
        mem_mb=cost_mem("normalization_coefficients"),
        runtime=cost_runtime("normalization_coefficients"),
    params:
        settings=config["normalization"]["coefficients"],
        scale=SCALE,
    script:
        "../../scripts/normalization_coefficients.py"


rule normalization_plot_coefficients:
    input:
        csv=out("results/normalization/coefficients.csv"),
    output:
        png=report_figure(
            out("figures/normalization/activations.png"),
            "coefficients.rst",
            category="Static normalization",
            subcategory="Coefficients",
        ),
        pdf=out("figures/normalization/activations.pdf"),
        png_meta=meta(out("figures/normalization/activations.png")),
        pdf_meta=meta(out("figures/normalization/activations.pdf")),
    log:
        out("logs/normalization/plot_coefficients.log"),
    benchmark:
        out("logs/benchmarks/normalization/plot_coefficients.tsv")
    group:
        "plots"
    conda:
        ENV
    threads: 1
    resources:
        mem_mb=cost_mem("normalization_plot_coefficients"),
        runtime=cost_runtime("normalization_plot_coefficients"),
    params:
        settings=config["normalization"]["plot"],
        scale=SCALE,
    script:
        "../../scripts/plot_coefficients.py"


ALL_TARGETS.extend(
    [
        out("results/normalization/coefficients.csv"),
        out("figures/normalization/activations.png"),
    ]
)
