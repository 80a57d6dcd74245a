"""The static-normalization stage's declaration (Richemond & Guo, arXiv 1905.01369): its
figures and the tables they read (read by the workflow through :mod:`galu.workflow.stages`)."""

from __future__ import annotations

from galu.declarations import Config, Figure, Stage, Table
from galu.normalization import checks

_TRAIN = "galu.normalization.trainability.train_depth"
_OUTCOMES = "galu.normalization.trainability.run_outcomes"
TABLES = {
    "coefficients": Table(
        "results/normalization/coefficients.csv",
        ("galu.normalization.coefficients.coefficients_table",),
    ),
    "isometry": Table(
        "results/normalization/isometry.csv", ("galu.normalization.isometry.isometry_tables",)
    ),
    "eigenvalues": Table(
        "results/normalization/isometry_eigenvalues.csv",
        ("galu.normalization.isometry.isometry_tables",),
    ),
    "trainability": Table("results/normalization/trainability.csv", (_TRAIN,)),
    "runs": Table("results/normalization/trainability_runs.csv", (_TRAIN, _OUTCOMES)),
    "max_depth": Table(
        "results/normalization/max_depth.csv",
        (_TRAIN, _OUTCOMES, "galu.normalization.trainability.max_trainable_depth"),
    ),
    "spectra": Table("results/normalization/spectra.csv", (_TRAIN,)),
    "jacobian": Table("results/normalization/jacobian.csv", (_TRAIN,)),
    "correlations": Table(
        "results/normalization/correlations.csv",
        ("galu.normalization.correlation.layer_correlations",),
    ),
    "depth_scales": Table(
        "results/normalization/depth_scales.csv",
        ("galu.normalization.mean_field.depth_scale_table",),
    ),
    "widths": Table(
        "results/normalization/widths.csv",
        (_TRAIN, _OUTCOMES, "galu.normalization.widths.width_comparison"),
    ),
    "wide_correlations": Table(
        "results/normalization/wide/correlations.csv",
        ("galu.normalization.correlation.layer_correlations",),
    ),
    "ablation": Table(
        "results/normalization/ablation.csv",
        (
            "galu.normalization.ablation.ablation_curves",
            "galu.normalization.ablation.ablation_table",
        ),
    ),
}
# What each figure marks of the paper's claims (workflow/claims.yaml; tests/
# test_normalization_figures.py checks each against its claim): max_depth, the paper's depths
# (ReLU about 30, the tilted ReLU 60); training, the epoch and margin of "tanh-level in about
# 25 epochs" and its two activations; layer_spectra, the 1 % drift bound; jacobian, the band
# around 1; depth_scales, the pair compared at the deepest depth; ablation, the depths and
# margin of "ReLU's runs fail where the tilted ReLU's train".
PAPER: dict[str, dict] = {
    "max_depth": {"relu": 30, "tilted_relu": 60},
    "training": {"epoch": 25, "margin": 0.02, "pair": ["tilted_relu", "tanh"]},
    "layer_spectra": {"drift_bound": 0.01},
    "jacobian": {"band": 1.0e-4},
    "depth_scales": {"pair": ["tilted_relu", "relu"]},
    "ablation": {"claim_depths": [30, 60], "margin": 0.3},
}
# figure -> (file under figures/normalization/, subcategory, the tables it reads)
FIGURES = {
    "coefficients": ("activations", "Coefficients", ("coefficients",)),
    "isometry": ("isometry", "Static isometry", ("isometry", "eigenvalues")),
    "training": ("training_curves", "Trainability", ("trainability",)),
    "max_depth": ("max_depth", "Trainability", ("max_depth", "runs")),
    "layer_spectra": ("layer_spectra", "Spectra", ("spectra",)),
    "jacobian": ("jacobian_spectra", "Spectra", ("jacobian",)),
    "correlations": ("correlations", "Trainability", ("correlations",)),
    "ablation": ("ablation", "Trainability", ("ablation", "runs")),
    "depth_scales": ("depth_scales", "Trainability", ("runs", "depth_scales")),
}
# Drawn only where normalization.wide trains a second width (none at most scales).
WIDE_FIGURE = ("widths", "Trainability", ("widths", "correlations", "wide_correlations"))


def figures(config: Config) -> list[Figure]:
    """The coefficients and static isometry (Secs. 2-3), trainability and spectra of the
    deep MLPs (Sec. 4, Fig. 6), and ours: the correlations at initialization, the ablation
    and the mean-field depth scales beside the measured errors."""
    norm = config["normalization"]
    fraction = norm["trainability"]["loss_fraction"]
    draw = {
        "coefficients": {"x_max": norm["plot"]["x_max"]},
        "isometry": {"bins": norm["isometry"]["bins"]},
        "training": dict(PAPER["training"]),
        "max_depth": {"loss_fraction": fraction, "paper_depths": dict(PAPER["max_depth"])},
        "layer_spectra": dict(PAPER["layer_spectra"]),
        "jacobian": dict(PAPER["jacobian"]),
        "depth_scales": dict(PAPER["depth_scales"]),
        "ablation": {"loss_fraction": fraction, **PAPER["ablation"]},
        "widths": {"loss_fraction": fraction},
    }
    drawn = {**FIGURES, "widths": WIDE_FIGURE} if norm["wide"]["activations"] else FIGURES
    return [
        Figure(
            name,
            file,
            f"normalization_{name}.rst",
            subcategory,
            {table: TABLES[table] for table in read},
            draw=draw.get(name, {}),
        )
        for name, (file, subcategory, read) in drawn.items()
    ]


STAGE = Stage(
    name="normalization",
    paper="normalization",
    category="Static normalization",
    order=4,
    figures=figures,
    checks=checks.problems,
)
