"""Put the Snakemake report in place whole, with a provenance sidecar like every output.

Snakemake writes ``--report X.zip`` in place: a run killed while it writes leaves a partial
archive under the final name. So the report is built under ``.snakemake/galu/`` (never an
output; a killed build leaves nothing a reader or the audit would take for the report), then
renamed over ``results/report.zip`` and stamped with the claims table and the captions it
was built from, so ``galu audit`` checks it like any other output.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path

from galu.workflow.closure import CodeScanner
from galu.workflow.provenance import Run
from galu.workflow.trust.audit import CODE_CACHE

BUILD_DIR = Path(".snakemake/galu/report-build")
MODULE = "galu/workflow/pages/report_build.py"
REPORT = Path("results/report.zip")


def build_path(root: str | Path = ".") -> Path:
    """Where the next report is built (an empty folder; ``.zip`` tells Snakemake the format)."""
    folder = Path(root) / BUILD_DIR
    folder.mkdir(parents=True, exist_ok=True)
    built = folder / "report.zip"
    built.unlink(missing_ok=True)
    return built


def install_report(
    built: str | Path, inputs: Iterable[str | os.PathLike[str]], final: str | Path = REPORT
) -> Path:
    """Rename the finished ``built`` archive over ``final`` and write its sidecar (recording
    ``inputs``, the files the report shows). Raises FileNotFoundError when the build left no
    archive, leaving the previous report untouched."""
    built, final = Path(built), Path(final)
    if not built.is_file():
        raise FileNotFoundError(f"the report build left no archive at {built}")
    # The report's code, for the audit's staleness check like any job's: galu's part in
    # building it (this module and what it imports; the captions are recorded inputs).
    # (Outside a checkout, e.g. in a test's scratch folder, there is no code to record.)
    root = Path.cwd()
    code = (
        CodeScanner(root, cache=root / CODE_CACHE).closure(MODULE).record()
        if (root / MODULE).is_file()
        else None
    )
    run = Run("report", inputs=[p for p in inputs if Path(p).is_file()], code=code)
    final.parent.mkdir(parents=True, exist_ok=True)
    os.replace(built, final)
    run.stamp(final)
    return final
