"""How a job writes its results: the bytes of every table and figure, then their sidecars.

Job scripts write through :class:`Run` from here. The bytes (the CSV format, the figure
formats and the metadata left out of them) are this module's; the provenance record beside
each output is :class:`galu.workflow.provenance.Run`'s, which is machinery and outside the
jobs' code closures (:mod:`galu.workflow.closure`): a change to how sidecars are kept reruns
nothing, a change here reruns every job that writes through it. ``tests/test_result_code.py``
pins the bytes written for fixed inputs.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from galu.atomic import atomic_path
from galu.seeding import seeds_in
from galu.workflow import provenance
from galu.workflow.tables import check_table

RESULT_CODE = "the bytes of every result table (CSV format) and figure (PNG, PDF)"


def write_table_bytes(df: Any, path: str | os.PathLike[str]) -> None:
    """A pandas DataFrame as CSV: no index, floats to 10 significant digits, ``\\n`` line
    ends; written aside and renamed into place, so a killed job leaves no half file."""
    with atomic_path(path) as tmp:
        df.to_csv(tmp, index=False, float_format="%.10g", lineterminator="\n")


def figure_files(png: str | os.PathLike[str]) -> dict[Path, dict[str, None]]:
    """The files a figure is saved as (the PNG, the PDF beside it), each with the metadata
    left out so that the same figure gives the same bytes (no software version, no date)."""
    png = Path(png)
    return {png: {"Software": None}, png.with_suffix(".pdf"): {"CreationDate": None}}


def write_figure_bytes(fig: Any, target: Path, metadata: dict[str, None]) -> None:
    """One file of a matplotlib figure, in the format its suffix names, written aside."""
    with atomic_path(target) as tmp:
        fig.savefig(tmp, format=target.suffix[1:], metadata=metadata)


class Run(provenance.Run):
    """A job's provenance record (:class:`galu.workflow.provenance.Run`) that also chooses
    its device and writes its tables and figures (both can change a result's bytes)."""

    def use_device(self, requested: str) -> str:
        """Resolve the configured device (``auto``, ``cpu``, ``cuda``: see
        :func:`galu.device.resolve_device`) and record it for the sidecars; return it.

        Called once the run exists, so the warning of a fallback to the CPU goes to the job's
        log like everything else.
        """
        from galu.device import describe, resolve_device

        device = resolve_device(requested)
        self.device = describe(device)
        return device

    def write_csv(
        self, df: Any, path: str | os.PathLike[str], seeds: Iterable[int] | None = None
    ) -> None:
        """Write a table (:func:`write_table_bytes`) plus its sidecar.

        The sidecar's seeds are the table's own (:func:`galu.seeding.seeds_in`) unless
        ``seeds`` names them, so a seeded table cannot be written without them. A table with
        a column contract (:mod:`galu.workflow.tables`) is checked first: one that breaks it
        raises TableContractError and the previous output keeps its bytes.
        """
        check_table(df, path)
        write_table_bytes(df, path)
        self.stamp(path, seeds_in(df) if seeds is None else seeds)

    def save_figure(self, fig: Any, png: str | os.PathLike[str], seeds: Iterable[int] = ()) -> None:
        """Save a matplotlib figure as PNG and as the PDF beside it, each with a sidecar."""
        for target, metadata in figure_files(png).items():
            write_figure_bytes(fig, target, metadata)
            self.stamp(target, seeds)
