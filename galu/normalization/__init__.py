"""Static activation normalization (Richemond & Guo, arXiv 1905.01369)."""

from galu.normalization.coefficients import (
    Coefficients,
    coefficients_table,
    gaussian_expectation,
    normalization_coefficients,
    normalized,
)

__all__ = [
    "Coefficients",
    "coefficients_table",
    "gaussian_expectation",
    "normalization_coefficients",
    "normalized",
]
