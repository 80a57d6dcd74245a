"""``galu audit``: check every output under the audited folders against its provenance sidecar
(stale code, edited bytes, outputs made on another commit or from a modified tree, the
recorded number-neutral changes they rely on); ``--explain FILE`` prints one output's
provenance chain down to the raw archives."""

from __future__ import annotations

import argparse
from collections.abc import Iterable
from pathlib import Path

from galu.workflow.commands.common import UsageError, checked_ledger, inside, root_option
from galu.workflow.equivalence import LEDGER
from galu.workflow.provenance import git_state
from galu.workflow.publication_folders import leftover_of, publication_scale
from galu.workflow.trust.audit import (
    DEFAULT_FOLDERS,
    STALE,
    audit_tree,
    commits,
    count_outputs,
    equivalent_outputs,
    ledger_of,
    left_out_inputs,
    published_notes,
    rebuild_command,
    substitutes,
    uncoded,
)
from galu.workflow.trust.ledger_verify import recomputed_problems
from galu.workflow.trust.lineage import explain, summary_lines


def add_parser(sub: argparse._SubParsersAction) -> argparse.ArgumentParser:
    """Add ``galu audit`` to the subcommands ``sub`` and return its parser."""
    parser = sub.add_parser("audit", help="check every output against its provenance sidecar")
    root_option(parser)
    parser.add_argument(
        "--folders",
        nargs="+",
        default=list(DEFAULT_FOLDERS),
        help=f"folders to audit, relative to the root (default: {' '.join(DEFAULT_FOLDERS)})",
    )
    parser.add_argument(
        "--explain",
        metavar="FILE",
        help="print the provenance chain of one output, down to the raw archives",
    )
    parser.add_argument(
        "--strict",
        action="store_true",
        help="also fail when outputs were made on another commit or from a modified tree",
    )
    parser.add_argument(
        "--verbose",
        action="store_true",
        help="list the evidence of every recorded number-neutral change the outputs rely on",
    )
    return parser


def run(args: argparse.Namespace) -> int:
    _audit_scope(args)
    checked_ledger(args.root)
    if args.explain:
        return _explain(args)
    if count_outputs(args.root, args.folders) == 0:
        print(
            f"galu audit: nothing to check: no output under {', '.join(args.folders)} in"
            f" {Path(args.root).resolve()}. Run the workflow first (snakemake --cores 2), or"
            " pass --root the checkout that holds the results."
        )
        return 1
    findings = audit_tree(args.root, args.folders)
    for finding in findings:
        print(f"PROBLEM {finding}")
    without_code = uncoded(args.root, args.folders)
    notes = _commit_notes(args, set(without_code))
    # A published run's outputs are judged by published_notes below.
    old = [p for p in without_code if publication_scale(p) is None]
    if old:
        notes.append(
            f"{len(old)} output(s) record no code closure (made before galu recorded it), "
            f"e.g. {old[0]}"
        )
    notes += published_notes(args.root, args.folders)
    notes += [
        f"{LEDGER} entry not trusted, so the outputs it vouched for count as made by other"
        f" code: {why}"
        for why in ledger_of(Path(args.root)).untrusted.values()
    ]
    for note in notes:
        print(f"{'PROBLEM' if args.strict else 'NOTE'} {note}")
    relied = equivalent_outputs(args.root, args.folders)
    steps = dict.fromkeys(step for chain in relied.values() for step in chain)
    _print_equivalences(args, relied, steps)
    # The entries these outputs rely on, recomputed from their commits (not read): one whose
    # closures are not its commits' vouches for nothing.
    wrong = recomputed_problems(Path(args.root), steps)
    for why in wrong.values():
        print(f"PROBLEM {LEDGER} entry does not hold: {why}")
    head = git_state().get("commit")
    if notes and head:
        print(f"NOTE the checkout is at commit {head}")
    problems = len(findings) + len(wrong) + (len(notes) if args.strict else 0)
    checked = count_outputs(args.root, args.folders)
    lacking = left_out_inputs(args.root, args.folders)
    if lacking:  # by design after `galu resume`: not a problem, even under --strict
        print(
            f"NOTE {len(lacking)} output(s) were made from a file their run's publication left"
            f" out as too large, which this checkout lacks (e.g. {lacking[0]}): `snakemake`"
            " remakes it and reruns what reads it."
        )
    flagged = substitutes(args.root, args.folders)
    if flagged:
        print(
            f"NOTE {len(flagged)} output(s) descend from substitute data (data_substitute in"
            f" their sidecars; e.g. {flagged[0]}): a non-official dataset copy, see README,"
            " Datasets."
        )
    if problems:
        stale = sum(1 for f in findings if f.problem.startswith(STALE))
        print(
            f"galu audit: {problems} problem(s) in {checked} output(s) under "
            f"{', '.join(args.folders)} ({stale} stale: made with code that changed since). "
            "An output edited by hand has no trustworthy provenance; `galu audit --explain "
            "FILE` shows its chain."
        )
        if any(not leftover_of(f.path) for f in findings):
            print(f"To rebuild them and what depends on them: {rebuild_command(findings)}")
        elif old:
            print(f"To rebuild them: snakemake --cores all --forcerun {' '.join(old)}")
        return 1
    print(f"galu audit: {checked} output(s) consistent with their provenance sidecars.")
    return 0


def _explain(args: argparse.Namespace) -> int:
    root = Path(args.root)
    target = Path(args.explain)
    if target.is_absolute() or ".." in target.parts:
        target = inside(root, args.explain, "--explain")
    if not (root / target).is_file():
        claim = f"; to explain a claim, `galu explain {target}`" if "/" not in str(target) else ""
        raise UsageError(
            f"{target} does not exist under {root.resolve()}: nothing to explain{claim}"
        )
    node = explain(target, root)
    findings = node.findings()
    print("\n".join([*node.lines(), *summary_lines("galu audit --explain", target, findings)]))
    return 1 if findings else 0


def _commit_notes(args: argparse.Namespace, without_code: set[str]) -> list[str]:
    """Outputs their commit does not vouch for: made from a modified tree, or made on another
    commit than the checkout's without a code closure to judge them by. (An output that
    records its closure is current when its closure is, whatever commit made it:
    ``galu.workflow.trust.audit.code_problem``. A published run is judged by
    ``published_notes``.)"""
    head = git_state().get("commit")
    notes = []
    for commit, paths in sorted(commits(args.root, args.folders).items()):
        paths = [p for p in paths if publication_scale(p) is None]
        if commit.endswith("+dirty") and paths:
            notes.append(
                f"{len(paths)} output(s) made from uncommitted changes on commit"
                f" {commit.removesuffix('+dirty')}, e.g. {paths[0]}"
            )
            continue
        old = [p for p in paths if p in without_code]
        if old and (head is None or commit != head):
            notes.append(f"{len(old)} output(s) made on commit {commit}, e.g. {old[0]}")
    return notes


def _print_equivalences(args: argparse.Namespace, found: dict, steps: Iterable) -> None:
    """Outputs current only by a recorded number-neutral change, and the ``steps`` of the
    ledger they rely on: the evidence, once each."""
    if not found:
        return
    steps = list(steps)
    print(
        f"NOTE {len(found)} output(s) were made by earlier code that {LEDGER} records as"
        f" number-neutral (e.g. {next(iter(found))}), by {len(steps)} recorded change(s)"
        + ("; the evidence:" if args.verbose else "; --verbose lists the evidence.")
    )
    if args.verbose:
        for step in steps:
            print(f"  {step.evidence()}")


def _audit_scope(args: argparse.Namespace) -> None:
    """A root that exists, and folders given by hand that exist under it (a misspelt folder
    would otherwise be audited as empty, and pass)."""
    root = Path(args.root)
    if not root.is_dir():
        raise UsageError(f"--root {args.root} is not a folder; give the checkout to audit")
    if list(args.folders) != list(DEFAULT_FOLDERS):
        for folder in args.folders:
            inside(root, folder, "--folders")
        missing = [f for f in args.folders if not (root / f).is_dir()]
        if missing:
            raise UsageError(
                f"no folder {', '.join(missing)} under {root.resolve()}; the workflow writes"
                f" {', '.join(DEFAULT_FOLDERS)}"
            )
