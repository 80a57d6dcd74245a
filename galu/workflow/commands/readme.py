"""``galu readme``: compare (or ``--update``) the README's generated sections, the quick verdict
and "What reproduces at the paper level"; ``--verdicts`` is the end of ``make reproduce``."""

from __future__ import annotations

import argparse
from pathlib import Path

from galu.atomic import atomic_write_bytes
from galu.workflow.commands.common import UsageError, read_text
from galu.workflow.publication_readme import PAPER_MARKERS, paper_section
from galu.workflow.readme_sections import (
    QUICK_MARKERS,
    describe_differences,
    readme_differences,
    readme_with_section,
)


def add_parser(sub: argparse._SubParsersAction) -> argparse.ArgumentParser:
    """Add ``galu readme`` to the subcommands ``sub`` and return its parser."""
    parser = sub.add_parser(
        "readme", help="compare (or --update) README's generated claims sections"
    )
    parser.add_argument("--claims", default="results/claims.md", help="the generated table")
    parser.add_argument("--readme", default="README.md", help="the README to check")
    parser.add_argument("--update", action="store_true", help="rewrite the section in place")
    parser.add_argument(
        "--verdicts",
        action="store_true",
        help="fail only where a verdict differs (numbers past the precision shown and wording"
        " are notes), then print this run's verdict summary (the end of make reproduce)",
    )
    return parser


def run(args: argparse.Namespace) -> int:
    """Both generated sections of the README: the quick verdict (from ``--claims``) and
    "What reproduces at the paper level" (from ``published/``)."""
    readme = read_text(
        args.readme, "the README", "run galu from the repository root or pass --readme"
    )
    quick = read_text(
        args.claims, "the generated claims table", "run the workflow first (snakemake --cores 2)"
    )
    sections = [
        (QUICK_MARKERS, quick, args.claims),
        # the published runs beside the quick run whose table is the first section
        (PAPER_MARKERS, paper_level_section(args), "published/"),
    ]
    for markers, _, _ in sections:
        if markers[0] not in readme or markers[1] not in readme:
            raise UsageError(f"{args.readme} lacks the markers {markers[0]} and {markers[1]}")
    if args.verdicts:
        return _readme_verdicts(readme, sections)
    status = 0
    for markers, section, source in sections:
        status = max(status, _readme_section(args, markers, section, source))
    return status


def _readme_verdicts(readme: str, sections: list[tuple[tuple[str, str], str, str]]) -> int:
    """The end of ``make reproduce``: how this run's sections differ from the README's (a
    verdict change is a finding, exit 1; numbers past the precision shown and wording are
    NOTEs), then this run's verdict summary as the last lines."""
    from galu.workflow.landing import run_summary
    from galu.workflow.readme_sections import compare_section, describe_comparison

    status, lines = 0, []
    names = {QUICK_MARKERS: "quick-scale section", PAPER_MARKERS: "paper-level section"}
    for markers, section, _ in sections:
        comparison = compare_section(readme, section, markers)
        status = max(status, int(bool(comparison.verdicts)))
        lines += describe_comparison(names[markers], comparison)
    if not lines:
        lines.append("README.md's verdicts and numbers are this run's (at the precision shown).")
    elif not status:
        lines.append("README.md's verdicts are this run's.")
    print("\n".join([*lines, run_summary(".")]))
    return status


def paper_level_section(args: argparse.Namespace) -> str:
    """README's paper-level section, beside the quick run of ``--claims`` (its claims.csv)."""
    from galu.workflow.compare import CompareError

    try:
        return paper_section(Path(args.readme).parent, Path(args.claims).with_suffix(".csv"))
    except (CompareError, ValueError) as error:
        raise UsageError(str(error)) from None


def _readme_section(
    args: argparse.Namespace, markers: tuple[str, str], section: str, source: str
) -> int:
    """Check (or with --update rewrite) the README section between ``markers``."""
    readme = Path(args.readme).read_text()
    differences = readme_differences(readme, section, markers)
    exact = readme_with_section(readme, section, markers) == readme
    if args.update and not exact:  # asked to: take the run's section, digits included
        atomic_write_bytes(args.readme, readme_with_section(readme, section, markers).encode())
        print(f"updated the section of {args.readme} generated from {source}.")
        return 0
    if not differences:
        print(
            f"{args.readme} is current with {source}"
            + ("." if exact else " at the precision shown (numbers within one unit of their"
               " last digit).")
        )  # fmt: skip
        return 0
    print(
        f"{args.readme} differs from {source} in {len(differences)} line(s):\n"
        f"{describe_differences(differences)}\nRun `galu readme --update` to take the run's."
    )
    return 1
