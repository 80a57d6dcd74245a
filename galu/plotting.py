"""One look for every figure: the house matplotlib style and a scale-stamped title."""

from __future__ import annotations

from importlib import resources
from typing import Any

import matplotlib

matplotlib.use("Agg")  # figures are files: never open a window, also on headless nodes

import matplotlib.pyplot as plt  # noqa: E402

STYLE = resources.files("galu") / "styles" / "galu.mplstyle"


def use_style() -> None:
    """Apply the galu style (colour-blind-safe cycle, light grid, tight bounding boxes)."""
    plt.style.use(str(STYLE))


def scaled_title(fig: Any, title: str, scale: str) -> None:
    """Figure title that says at which scale the numbers were made (e.g. 'quick scale')."""
    fig.suptitle(f"{title} ({scale} scale)")
