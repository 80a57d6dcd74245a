"""``dvc plots show`` that works offline, and shows only the plots that have data.

DVC's HTML page loads the Vega libraries from a CDN, so without internet it is blank. The
same libraries ship inside Snakemake (its report renders Vega-Lite charts), so galu writes a
page template with them inlined and hands it to ``dvc plots show --html-template``: the
page then needs no network at all.

The plots are dvc.yaml's top-level ``plots:``, one per quantity the claims read (templates in
``.dvc/plots/``). A plot whose table is absent, or has no rows at this run's scale, would be
an empty chart (or a DVC error): it is left out, and the page says which and why.
"""

from __future__ import annotations

import html
import json
import subprocess
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from galu.yaml_files import load_yaml

# Snakemake's bundled copies, in load order (vega-embed needs the other two).
LIBRARIES = ("vega/vega.js", "vega-lite/vega-lite.js", "vega-embed/vega-embed.js")
TEMPLATE = Path(".dvc/tmp/galu-offline-plots.html")
OUTPUT = "dvc_plots"


@dataclass(frozen=True)
class Plot:
    """One top-level plot of dvc.yaml: its id, the files it reads and its title."""

    id: str
    files: tuple[str, ...]
    title: str


def _library(name: str) -> str:
    data = resources.files("snakemake.assets").joinpath("data", *name.split("/"))
    try:
        return data.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise FileNotFoundError(
            f"snakemake's bundled {name} is missing: reinstall snakemake (pip install"
            " --force-reinstall 'snakemake>=9,<10')"
        ) from None


def plots(root: str | Path = ".") -> list[Plot]:
    """dvc.yaml's top-level plots, in order. A definition names its files as the keys of
    ``y`` (or ``x``) when that is a mapping; otherwise its id is the file."""
    found = []
    for entry in load_yaml(Path(root) / "dvc.yaml").get("plots") or []:
        plot_id, props = (entry, {}) if isinstance(entry, str) else next(iter(entry.items()))
        props = props or {}
        axes = [props.get(axis) for axis in ("y", "x")]
        files = next((tuple(axis) for axis in axes if isinstance(axis, dict)), (plot_id,))
        found.append(Plot(plot_id, files, str(props.get("title") or plot_id)))
    return found


def has_rows(path: Path) -> bool:
    """Whether a plot's data file holds at least one data point: a CSV/TSV a row under its
    header, a JSON/YAML file a non-empty list or mapping."""
    if path.suffix in (".csv", ".tsv"):
        with path.open(encoding="utf-8") as lines:
            return sum(1 for line in lines if line.strip()) > 1
    if path.suffix == ".json":
        return bool(json.loads(path.read_text(encoding="utf-8") or "null"))
    if path.suffix in (".yaml", ".yml"):
        return bool(load_yaml(path))
    return path.stat().st_size > 0


def left_out(root: str | Path, plot: Plot) -> str | None:
    """Why ``plot`` has nothing to show in the checkout ``root`` (None: it has data)."""
    for name in plot.files:
        path = Path(root) / name
        if not path.is_file():
            return f"{name} is absent"
        if not has_rows(path):
            return f"{name} has no rows at this run's scale"
    return None


def offline_template(notes: str = "") -> str:
    """An HTML template for ``dvc plots show``: the Vega libraries inline (``</script>``
    inside them escaped), ``notes`` (HTML) above the plots, and DVC's ``{plot_divs}``
    placeholder."""
    escaped = (_library(name).replace("</script", "<\\/script") for name in LIBRARIES)
    scripts = "\n".join(f"<script>{code}</script>" for code in escaped)
    return (
        "<!DOCTYPE html>\n<html>\n<head>\n<meta charset='utf-8'>\n<title>galu: DVC plots</title>\n"
        f"{scripts}\n</head>\n<body>\n{notes}{{plot_divs}}\n</body>\n</html>\n"
    )


def notes_html(shown: list[Plot], missing: dict[str, str]) -> str:
    """The page's header: what the plots are, and each plot left out with its reason."""
    parts = [
        "<h1>galu: the claims' quantities (dvc plots)</h1>\n<p>One plot per quantity the"
        " claims in results/claims.csv read, coloured by the series they compare; each title"
        " names its claims (definitions: dvc.yaml's <code>plots:</code>, templates in"
        " .dvc/plots/).</p>\n"
    ]
    if missing:
        items = "".join(
            f"<li><code>{html.escape(plot_id)}</code>: {html.escape(why)}</li>\n"
            for plot_id, why in missing.items()
        )
        parts.append(f"<p>Left out ({len(missing)}):</p>\n<ul class='left-out'>\n{items}</ul>\n")
    if not shown:
        parts.append(
            "<p>No plot has data in this checkout: run the workflow first (<code>snakemake"
            " --cores all</code> or <code>make reproduce</code>). The published paper-cpu run's"
            " figures are in published/paper-cpu/figures/ (linked from"
            " published/paper-cpu/claims.html).</p>\n"
        )
    return "".join(parts)


def show(root: str | Path = ".", output: str = OUTPUT) -> tuple[Path, dict[str, str]]:
    """Write the template under ``.dvc/tmp`` and run ``dvc plots show`` with it for the plots
    that have data; return the page and the plots left out (id: why). Raises
    CalledProcessError with DVC's message when DVC fails."""
    root = Path(root)
    definitions = plots(root)
    missing = {plot.id: why for plot in definitions if (why := left_out(root, plot))}
    shown = [plot for plot in definitions if plot.id not in missing]
    template = offline_template(notes_html(shown, missing))
    page = root / output / "index.html"
    if not shown:  # `dvc plots show` without targets would try every plot
        page.parent.mkdir(parents=True, exist_ok=True)
        page.write_text(template.replace("{plot_divs}", ""), encoding="utf-8")
        return page, missing
    path = root / TEMPLATE
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(template, encoding="utf-8")
    subprocess.run(
        ["dvc", "plots", "show", "--html-template", str(path.resolve()), "-o", output]
        + [plot.id for plot in shown],
        cwd=root,
        check=True,
        capture_output=True,
        text=True,
    )
    return page, missing
