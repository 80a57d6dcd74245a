# The static-normalization figures (Richemond & Guo, arXiv 1905.01369), declared in one
# table from which their plot rules are generated: each draws tables made by the rules of
# normalization_static.smk and normalization_training.smk with one function of
# galu/normalization/figures.py (draw_<figure>) and never trains.

NORM_FIGURE = out("figures/normalization/{file}.{ext}")
NORM_COEFFICIENTS = rules.normalization_coefficients.output
NORM_ISOMETRY = rules.normalization_isometry.output
NORM_TRAINABILITY = rules.normalization_trainability.output
NORM_SPECTRA_TABLES = rules.normalization_spectra.output
# figure -> file: its name under figures/normalization/; subcategory: in the report;
# tables: the tables it draws (name -> path; the drawing function's `tables` keys);
# draw: the drawing function's parameters.
NORM_FIGURES = {
    "coefficients": dict(
        file="activations",
        subcategory="Coefficients",
        tables={"coefficients": NORM_COEFFICIENTS.csv},
        draw={"x_max": config["normalization"]["plot"]["x_max"]},
    ),
    "isometry": dict(
        file="isometry",
        subcategory="Static isometry",
        tables={
            "isometry": NORM_ISOMETRY.csv,
            "eigenvalues": NORM_ISOMETRY.eigenvalues,
        },
        draw={"bins": NORM_ISO["bins"]},
    ),
    "training": dict(
        file="training_curves",
        subcategory="Trainability",
        tables={"trainability": NORM_TRAINABILITY.csv},
        draw={},
    ),
    "max_depth": dict(
        file="max_depth",
        subcategory="Trainability",
        tables={
            "max_depth": NORM_TRAINABILITY.max_depth,
            "runs": NORM_TRAINABILITY.runs,
        },
        draw={"loss_fraction": NORM_TRAIN["loss_fraction"]},
    ),
    "layer_spectra": dict(
        file="layer_spectra",
        subcategory="Spectra",
        tables={"spectra": NORM_SPECTRA_TABLES.csv},
        draw={},
    ),
    "jacobian": dict(
        file="jacobian_spectra",
        subcategory="Spectra",
        tables={"jacobian": NORM_SPECTRA_TABLES.jacobian},
        draw={},
    ),
    "correlations": dict(
        file="correlations",
        subcategory="Trainability",
        tables={"correlations": rules.normalization_correlations.output.csv},
        draw={},
    ),
}


for norm_name, norm_spec in NORM_FIGURES.items():
    norm_png = NORM_FIGURE.format(file=norm_spec["file"], ext="png")

    rule:
        name:
            f"normalization_plot_{norm_name}"
        input:
            **norm_spec["tables"],
        output:
            **with_sidecars(
                png=report_figure(
                    norm_png,
                    f"normalization_{norm_name}.rst",
                    category="Static normalization",
                    subcategory=norm_spec["subcategory"],
                ),
                pdf=NORM_FIGURE.format(file=norm_spec["file"], ext="pdf"),
            ),
        log:
            job_log(f"normalization/plot_{norm_name}"),
        benchmark:
            job_benchmark(f"normalization/plot_{norm_name}")
        group:
            "plots"
        conda:
            ENV
        threads: 1
        resources:
            **job_resources(f"normalization_plot_{norm_name}"),
        params:
            figure=norm_name,
            draw=norm_spec["draw"],
            scale=SCALE,
        script:
            "../../scripts/normalization_plot.py"


# Every figure, and the tables the claims and other stages read (docs/design.md, Contracts).
stage_targets(
    "normalization",
    [
        NORM_COEFFICIENTS.csv,
        NORM_ISOMETRY.csv,
        NORM_TRAINABILITY.csv,
        NORM_TRAINABILITY.max_depth,
        NORM_SPECTRA_TABLES.csv,
        NORM_SPECTRA_TABLES.jacobian,
        rules.normalization_correlations.output.csv,
        *(NORM_FIGURE.format(file=f["file"], ext="png") for f in NORM_FIGURES.values()),
    ],
)
