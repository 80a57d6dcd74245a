"""``dvc plots show`` that works offline.

DVC's HTML page loads the Vega libraries from a CDN, so without internet it is blank. The
same libraries ship inside Snakemake (its report renders Vega-Lite charts), so galu writes a
page template with them inlined and hands it to ``dvc plots show --html-template``: the
page then needs no network at all.
"""

from __future__ import annotations

import subprocess
from importlib import resources
from pathlib import Path

# Snakemake's bundled copies, in load order (vega-embed needs the other two).
LIBRARIES = ("vega/vega.js", "vega-lite/vega-lite.js", "vega-embed/vega-embed.js")
TEMPLATE = Path(".dvc/tmp/galu-offline-plots.html")
OUTPUT = "dvc_plots"


def _library(name: str) -> str:
    data = resources.files("snakemake.assets").joinpath("data", *name.split("/"))
    try:
        return data.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise FileNotFoundError(
            f"snakemake's bundled {name} is missing: reinstall snakemake (pip install"
            " --force-reinstall 'snakemake>=9,<10')"
        ) from None


def offline_template() -> str:
    """An HTML template for ``dvc plots show``: the Vega libraries inline (``</script>``
    inside them escaped), and DVC's ``{plot_divs}`` placeholder."""
    escaped = (_library(name).replace("</script", "<\\/script") for name in LIBRARIES)
    scripts = "\n".join(f"<script>{code}</script>" for code in escaped)
    return (
        "<!DOCTYPE html>\n<html>\n<head>\n<meta charset='utf-8'>\n<title>galu: DVC plots</title>\n"
        f"{scripts}\n</head>\n<body>\n{{plot_divs}}\n</body>\n</html>\n"
    )


def show(root: str | Path = ".", output: str = OUTPUT) -> Path:
    """Write the template under ``.dvc/tmp`` and run ``dvc plots show`` with it; return the
    page. Raises CalledProcessError with DVC's message when DVC fails."""
    root = Path(root)
    template = root / TEMPLATE
    template.parent.mkdir(parents=True, exist_ok=True)
    template.write_text(offline_template(), encoding="utf-8")
    subprocess.run(
        ["dvc", "plots", "show", "--html-template", str(template.resolve()), "-o", output],
        cwd=root,
        check=True,
        capture_output=True,
        text=True,
    )
    return root / output / "index.html"
