"""``galu readme``: compare (or ``--update``) the generated verdict sections: the pages
docs/verdicts-quick.md (the quick run's verdict) and docs/verdicts-paper.md ("What reproduces
at the paper level") and README.md's per-paper counts of each
(:mod:`galu.workflow.pages.readme_pages`); ``--verdicts`` is the end of ``make reproduce``."""

from __future__ import annotations

import argparse
from pathlib import Path

from galu.atomic import atomic_write_bytes
from galu.workflow.commands.common import UsageError, read_text
from galu.workflow.pages.readme_pages import (
    PAPER_PAGE,
    QUICK_PAGE,
    Generated,
    generated_sections,
)
from galu.workflow.pages.readme_sections import describe_differences, readme_with_section

RUN_FIRST = "run the workflow first (snakemake --cores 2)"


def add_parser(sub: argparse._SubParsersAction) -> argparse.ArgumentParser:
    """Add ``galu readme`` to the subcommands ``sub`` and return its parser."""
    parser = sub.add_parser(
        "readme",
        help="compare (or --update) the generated verdict pages and README's counts of them",
    )
    parser.add_argument(
        "--claims",
        default="results/claims.md",
        help="the quick run's generated table (its claims.csv beside it gives the counts)",
    )
    parser.add_argument("--readme", default="README.md", help="the README to check")
    parser.add_argument(
        "--quick-page",
        help=f"the quick run's verdict page (default: {QUICK_PAGE} beside the README)",
    )
    parser.add_argument(
        "--paper-page",
        help=f"the paper-level verdict page (default: {PAPER_PAGE} beside the README)",
    )
    parser.add_argument("--update", action="store_true", help="rewrite the sections in place")
    parser.add_argument(
        "--verdicts",
        action="store_true",
        help="fail only where a verdict differs (numbers past the precision shown and wording"
        " are notes), then print this run's verdict summary (the end of make reproduce)",
    )
    return parser


def run(args: argparse.Namespace) -> int:
    """The generated sections: the quick verdict (from ``--claims``) and "What reproduces at
    the paper level" (from ``published/``) on their pages, and README's counts of each."""
    from galu.workflow.pages.compare import CompareError

    readme, claims = Path(args.readme), Path(args.claims)
    read_text(readme, "the README", "run galu from the repository root or pass --readme")
    read_text(claims, "the generated claims table", RUN_FIRST)
    read_text(claims.with_suffix(".csv"), "the claims table", RUN_FIRST)
    pages = [Path(p) if p else None for p in (args.quick_page, args.paper_page)]
    try:
        sections = generated_sections(readme, claims, claims.with_suffix(".csv"), *pages)
    except (CompareError, ValueError) as error:
        raise UsageError(str(error)) from None
    for section in sections:
        held = read_text(section.path, "the page", "restore it from git (git checkout -- FILE)")
        if section.markers[0] not in held or section.markers[1] not in held:
            raise UsageError(
                f"{section.path} lacks the markers {section.markers[0]} and {section.markers[1]}"
            )
    if args.verdicts:
        return _readme_verdicts(sections)
    return max(_readme_section(args, section) for section in sections)


def _readme_verdicts(sections: list[Generated]) -> int:
    """The end of ``make reproduce``: how this run's sections differ from the pages' (a
    verdict change is a finding, exit 1; numbers past the precision shown and wording are
    NOTEs; README's counts, which follow the verdicts, a NOTE when only they differ), then
    this run's verdict summary as the last lines."""
    from galu.workflow.landing import run_summary
    from galu.workflow.pages.readme_sections import compare_section, describe_comparison

    status, lines, counts = 0, [], []
    for section in sections:
        held = section.path.read_text()
        if section.exact:
            if section.differences(held):
                counts.append(f"{section.path}'s {section.what}")
            continue
        comparison = compare_section(held, section.text, section.markers)
        status = max(status, int(bool(comparison.verdicts)))
        lines += describe_comparison(f"{section.path}'s {section.what}", comparison)
    if counts and not status:
        lines.append(
            f"NOTE {' and '.join(counts)} differ from this run's (`galu readme --update` takes"
            " the run's)."
        )
    pages = " and ".join(str(s.path) for s in sections if not s.exact)
    if not lines:
        lines.append(
            f"The verdicts and numbers of {pages} are this run's (at the precision shown)."
        )
    elif not status:
        lines.append(f"The verdicts of {pages} are this run's.")
    print("\n".join([*lines, run_summary(".")]))
    return status


def _readme_section(args: argparse.Namespace, section: Generated) -> int:
    """Check (or with --update rewrite) one generated section in its file."""
    held = section.path.read_text()
    differences = section.differences(held)
    exact = readme_with_section(held, section.text, section.markers) == held
    if args.update and not exact:  # asked to: take the run's section, digits included
        updated = readme_with_section(held, section.text, section.markers)
        atomic_write_bytes(section.path, updated.encode())
        print(f"updated the {section.what} of {section.path}, generated from {section.source}.")
        return 0
    if not differences:
        print(
            f"{section.path}'s {section.what} are current with {section.source}"
            + ("." if exact else " at the precision shown (numbers within one unit of their"
               " last digit).")
        )  # fmt: skip
        return 0
    print(
        f"{section.path}'s {section.what} differ from {section.source} in {len(differences)}"
        f" line(s):\n{describe_differences(differences, label=section.label)}\n"
        "Run `galu readme --update` to take the run's."
    )
    return 1
