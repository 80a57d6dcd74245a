"""Each scale its own output root, so runs of different scales live side by side.

The contracts of docs/design.md name paths of the default ``quick`` run (``results/scm/...``,
``figures/scm/...``, ``logs/scm/...``). Any other scale writes the same relative paths one
folder down, under its name: ``results/paper-cpu/scm/...``, ``figures/paper-cpu/scm/...``,
``logs/paper-cpu/scm/...``. No path of one scale is a path of another, so neither
``snakemake`` nor ``dvc repro`` can overwrite a run of one scale with a run of another.
Datasets (``data/``) are the same bytes at every scale and stay shared.

:func:`scaled` is the one place that maps a contract path to a scale's path; the workflow's
rule files call it through ``common.smk``, and the claims, captions, landing page, report
and the ``galu`` commands read a run's outputs through :class:`OutputRoot`.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

# In the closure of the jobs that import it (galu.workflow.closure): it writes their bytes.
RESULT_CODE = "which scale's tolerances a run is judged by, and where its tables are read"

QUICK = "quick"
# Top-level folders whose contents belong to one run; everything else (data/) is shared.
SCALED_FOLDERS = ("results", "figures", "logs")


def scaled(path: str, scale: str) -> str:
    """The path of contract ``path`` in a run of ``scale``: unchanged for ``quick`` and for
    paths outside ``results/``, ``figures/`` and ``logs/``; else the scale's name inserted
    after the top folder (``results/scm/x.csv`` -> ``results/paper-cpu/scm/x.csv``)."""
    parts = PurePosixPath(path).parts
    if scale == QUICK or not parts or parts[0] not in SCALED_FOLDERS:
        return path
    return PurePosixPath(parts[0], scale, *parts[1:]).as_posix()


def unscaled(path: str, scale: str) -> str:
    """The contract path of a path of a ``scale`` run: the inverse of :func:`scaled`."""
    parts = PurePosixPath(path).parts
    if scale == QUICK or len(parts) < 2 or parts[0] not in SCALED_FOLDERS or parts[1] != scale:
        return path
    return PurePosixPath(parts[0], *parts[2:]).as_posix()


# The claims (workflow/claims.yaml: their ``scales`` and per-scale tolerances) a scale is
# judged by: paper-cpu keeps the paper's per-network settings, so it is judged as the paper
# scale, except for the claims its ``reductions`` name (those are indicative: measured, not judged).
JUDGED_AS = {"paper-cpu": "paper"}


def judged_as(scale: str) -> str:
    """The scale whose claims and tolerances a run of ``scale`` is checked against."""
    return JUDGED_AS.get(scale, scale)


@dataclass(frozen=True)
class OutputRoot:
    """Where a run's outputs are: ``root / "results/claims.csv"`` is the claims table of the
    run of ``scale`` in the checkout ``base`` (for a published copy, ``base`` is its folder
    and ``scale`` its run's scale)."""

    base: Path = Path(".")
    scale: str = QUICK

    def __truediv__(self, contract: str | os.PathLike[str]) -> Path:
        return self.base / scaled(Path(contract).as_posix(), self.scale)

    def relative(self, contract: str) -> str:
        """The path of ``contract`` relative to the checkout (what sidecars record)."""
        return scaled(contract, self.scale)


def output_root(root: str | os.PathLike[str] | OutputRoot = ".") -> OutputRoot:
    """``root`` as an :class:`OutputRoot`: a plain folder is a checkout's quick run."""
    return root if isinstance(root, OutputRoot) else OutputRoot(Path(root))


def scale_of(configfiles: list[str | os.PathLike[str]]) -> str:
    """The scale a run with these ``--configfile`` overlays has: the last one that sets
    ``scale`` (Snakemake merges them in order over config/config.yaml), else quick."""
    import yaml

    scale = QUICK
    for path in configfiles:
        loaded = yaml.safe_load(Path(path).read_text()) or {}
        if isinstance(loaded, dict) and "scale" in loaded:
            scale = str(loaded["scale"])
    return scale


if __name__ == "__main__":  # `make report`: where the report of a run with these overlays goes
    import sys

    print(scaled("results/report.zip", scale_of(sys.argv[1:])))
