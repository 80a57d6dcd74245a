"""One look for every figure: the house matplotlib style and a scale-stamped title."""

from __future__ import annotations

import zlib
from collections.abc import Iterable, Sequence
from importlib import resources
from typing import Any

import matplotlib

matplotlib.use("Agg")  # figures are files: never open a window, also on headless nodes

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

STYLE = resources.files("galu") / "styles" / "galu.mplstyle"


def use_style() -> None:
    """Apply the galu style (colour-blind-safe cycle, light grid, tight bounding boxes)."""
    plt.style.use(str(STYLE))


def scaled_title(fig: Any, title: str, scale: str) -> None:
    """Figure title that says at which scale the numbers were made (e.g. 'quick scale')."""
    fig.suptitle(f"{title} ({scale} scale)")


# One colour per activation, the same in every figure whatever the figure's own order of
# activations: the Okabe-Ito four the claims read most (ReLU, tilted ReLU, |x|, tanh) and
# black for ReLU + batch norm, the control (it was orange beside the tilted ReLU's
# vermillion), then colours chosen so that any two activations one figure shows together
# (the 12 of the trainability runs, the 9 of the coefficients and isometry) lie at least 30
# apart in CIELAB, the five above at least 50 (tests/test_figures_style.py).
ACTIVATION_COLOURS: dict[str, str] = {
    "relu": "#0072B2",
    "tilted_relu": "#D55E00",
    "abs": "#009E73",
    "tanh": "#CC79A7",
    "relu_bn": "#000000",
    "normalized_tanh": "#BBBBBB",
    "elu": "#FF00FF",
    "normalized_elu": "#33BBEE",
    "selu": "#332288",
    "normalized_selu": "#661100",
    "gelu": "#808000",
    "normalized_gelu": "#F2B701",
    "sigmoid": "#888888",
    "softplus": "#800000",
    "silu": "#EE3377",
}
_SPARE_COLOURS = ("#AA4499", "#117733", "#6699CC", "#DDCC77", "#44AA99", "#994455")


def distinct_colours(count: int) -> list[str]:
    """``count`` different colours: the style's cycle, then the other colours above (the
    paper scale draws more curves in one panel than the cycle has colours)."""
    cycle = [f"#{c.lstrip('#')}" for c in plt.rcParams["axes.prop_cycle"].by_key()["color"]]
    extra = [*ACTIVATION_COLOURS.values(), *_SPARE_COLOURS]
    palette = list(dict.fromkeys(c.upper() for c in [*cycle, *extra]))
    if count > len(palette):
        raise ValueError(f"only {len(palette)} distinct colours, {count} asked for")
    return palette[:count]


def activation_colour(name: str) -> str:
    """The colour of activation ``name`` in every figure; a name not listed gets a spare colour
    chosen from the name itself (stable across figures and runs)."""
    if name in ACTIVATION_COLOURS:
        return ACTIVATION_COLOURS[name]
    return _SPARE_COLOURS[zlib.crc32(name.encode()) % len(_SPARE_COLOURS)]


def panel_note(ax: Any, text: str, *, x: float = 0.5, y: float = 0.5, **kwargs: Any) -> Any:
    """Words written in a panel (axes coordinates, centred by default, on a white box): what
    a reader would otherwise have to guess, such as why a panel holds no curve."""
    options = {"ha": "center", "va": "center", "fontsize": 9, "wrap": True,
               "bbox": {"boxstyle": "round", "fc": "white", "ec": "0.6", "alpha": 0.9}}  # fmt: skip
    return ax.text(x, y, text, transform=ax.transAxes, **{**options, **kwargs})


def mark_zero_bars(ax: Any, x: Sequence[float], heights: Sequence[float], colors: Any) -> int:
    """Make bars of zero height visible: a marker on the axis and the label "0" above it
    (an empty slot would read as missing data). Returns how many bars were marked."""
    colours = [colors] * len(x) if isinstance(colors, str) else list(colors)
    marked = 0
    for xi, h, c in zip(x, heights, colours, strict=True):
        if np.isfinite(h) and h == 0:
            ax.plot([xi], [0], marker="_", ms=18, mew=4, color=c, clip_on=False, zorder=3)
            ax.annotate("0", (xi, 0), xytext=(0, 4), textcoords="offset points",
                        ha="center", va="bottom", fontsize=10, color=c)  # fmt: skip
            marked += 1
    return marked


def _visible(artist: Any, ax: Any) -> bool:
    """Whether a line or collection has at least one finite point inside the axes (compared in
    display space, so lines in axes coordinates such as ``axhline`` and log axes work)."""
    if hasattr(artist, "get_xydata"):
        xy, transform = np.asarray(artist.get_xydata(), dtype=float), artist.get_transform()
    elif hasattr(artist, "get_offsets"):
        xy = np.asarray(artist.get_offsets(), dtype=float)
        transform = artist.get_offset_transform()
    else:
        return True
    xy = xy.reshape(-1, 2)
    xy = xy[np.isfinite(xy).all(axis=1)]
    if not len(xy):
        return False
    ax.get_xlim(), ax.get_ylim()  # settle autoscaled limits before transforming
    with np.errstate(all="ignore"):
        points = transform.transform(xy)
    box = ax.bbox
    tol = 0.5  # pixels: a line on the axes' edge counts as inside
    inside = (
        (points[:, 0] >= box.x0 - tol)
        & (points[:, 0] <= box.x1 + tol)
        & (points[:, 1] >= box.y0 - tol)
        & (points[:, 1] <= box.y1 + tol)
    )
    return bool(np.any(inside & np.isfinite(points).all(axis=1)))


def visible_handles(ax: Any) -> tuple[list[Any], list[str]]:
    """The axes' labelled artists that show at least one point inside the axes (a legend
    entry for a curve off the axes would name something the reader cannot find). Artists
    drawn only for the legend (empty proxies, ``ax.plot([], [], ...)``) are kept when marked
    with ``proxy=True`` via :func:`legend_proxy`."""
    handles, labels = ax.get_legend_handles_labels()
    keep = [
        (h, lab)
        for h, lab in zip(handles, labels, strict=True)
        if getattr(h, "_galu_proxy", False) or _visible(_first_artist(h), ax)
    ]
    return [h for h, _ in keep], [lab for _, lab in keep]


def _first_artist(handle: Any) -> Any:
    """The line of an errorbar container, else the handle itself."""
    return handle[0] if isinstance(handle, tuple | list) or hasattr(handle, "lines") else handle


def legend_proxy(ax: Any, *args: Any, **kwargs: Any) -> Any:
    """An empty line that exists only to explain a style in the legend (always listed)."""
    (line,) = ax.plot([], [], *args, **kwargs)
    line._galu_proxy = True
    return line


def legend_outside(ax: Any, **kwargs: Any) -> Any:
    """The legend of the visible curves, to the right of the axes (never over the data)."""
    handles, labels = visible_handles(ax)
    if not handles:
        return None
    options = {"loc": "upper left", "bbox_to_anchor": (1.02, 1.0), "borderaxespad": 0.0}
    return ax.legend(handles, labels, **{**options, **kwargs})


def log_ticks(ax: Any, axis: str = "y", minimum: int = 3) -> None:
    """A log axis labelled with at least ``minimum`` ticks: when the range spans too few
    decades for that, label 1-2-5 steps, every integer multiple, or (a range narrower than
    a factor of 3) evenly spaced round numbers."""
    from matplotlib.ticker import FuncFormatter, LogLocator, MaxNLocator, NullFormatter

    target = ax.yaxis if axis == "y" else ax.xaxis
    low, high = sorted(ax.get_ylim() if axis == "y" else ax.get_xlim())
    if low <= 0 or high <= 0:
        return
    locator: Any = MaxNLocator(nbins=6, steps=[1, 2, 2.5, 5, 10], min_n_ticks=minimum)
    for subs in ((1.0,), (1.0, 2.0, 5.0), tuple(float(s) for s in range(1, 10))):
        ticks = [
            s * 10.0**e
            for e in range(int(np.floor(np.log10(low))), int(np.ceil(np.log10(high))) + 1)
            for s in subs
        ]
        if sum(low <= t <= high for t in ticks) >= minimum:
            locator = LogLocator(base=10.0, subs=subs)
            break
    target.set_major_locator(locator)
    if getattr(locator, "_subs", None) is None or len(np.atleast_1d(locator._subs)) > 1:
        target.set_major_formatter(FuncFormatter(lambda value, _: f"{value:g}"))
        target.set_minor_formatter(NullFormatter())


def labelled_ticks(ax: Any, axis: str = "y") -> int:
    """How many major tick labels of ``axis`` fall inside the limits (after drawing)."""
    ax.figure.canvas.draw()
    target = ax.yaxis if axis == "y" else ax.xaxis
    low, high = sorted(ax.get_ylim() if axis == "y" else ax.get_xlim())
    return sum(
        1
        for tick in target.get_major_ticks()
        if tick.label1.get_text() and low <= tick.get_loc() <= high
    )


def in_order(column: Iterable[Any]) -> list[Any]:
    """A column's distinct values in order of first appearance (the table's own order)."""
    return list(dict.fromkeys(column))
