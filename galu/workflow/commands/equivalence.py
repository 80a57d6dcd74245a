"""``galu equivalence --base REV``: run the rules whose code changed since REV at both commits
and, when every output is byte-identical, record the change as number-neutral in the ledger
(galu/workflow/trust/equivalence_check.py). ``galu equivalence --compact``: shorten the ledger to
the closures something still records (galu/workflow/trust/ledger_compact.py)."""

from __future__ import annotations

import argparse
from pathlib import Path

from galu.workflow.commands.common import UsageError, checkout, root_option
from galu.workflow.equivalence import LEDGER


def add_parser(sub: argparse._SubParsersAction) -> argparse.ArgumentParser:
    """Add ``galu equivalence`` to the subcommands ``sub`` and return its parser."""
    parser = sub.add_parser(
        "equivalence",
        help="run the rules whose code changed since --base at both commits and, when every"
        " output is byte-identical, record the change as number-neutral",
    )
    parser.add_argument("--base", help="the commit whose outputs should stay current")
    parser.add_argument(
        "--compact", action="store_true",
        help="instead: join each chain of the ledger into one entry per closure still recorded"
        " (the checkout's code, the sidecars under published/ and results/, --keep's commits)",
    )  # fmt: skip
    parser.add_argument(
        "--keep", action="append", default=[], metavar="REV",
        help="with --compact: also keep the closures of this commit's code (a run's checkout)",
    )  # fmt: skip
    parser.add_argument(
        "--scale", action="append", dest="scales", metavar="NAME",
        help="a configuration to run (tiny, paper-smoke, quick; repeat it; default: all three)",
    )  # fmt: skip
    parser.add_argument(
        "--stage", action="append", dest="stages", metavar="NAME",
        help="run only this stage (repeat it; default: the configuration's stages)",
    )  # fmt: skip
    parser.add_argument("--cores", type=int, default=2, help="cores per run (default: 2)")
    root_option(parser)
    return parser


def run(args: argparse.Namespace) -> int:
    from galu.workflow.equivalence import LedgerError
    from galu.workflow.trust.equivalence_check import DEFAULT_SCALES, EquivalenceError, check

    root = checkout(args.root)
    if bool(args.base) == args.compact:
        raise UsageError(
            "give either --base REV (check a change) or --compact (shorten the ledger)"
        )
    if args.compact:
        return compact(root, args.keep)
    if args.keep:
        raise UsageError("--keep goes with --compact")
    try:
        outcome = check(
            root, args.base, args.scales or DEFAULT_SCALES, args.cores, stages=args.stages
        )
    except (EquivalenceError, LedgerError) as error:
        raise UsageError(str(error)) from None
    untested = [c.script for c in outcome.changes if not outcome.compared.get(c.script)]
    for step in outcome.recorded:
        print(f"recorded {step.evidence()}")
    if untested:
        print(f"not recorded (no output at the scales run, so no evidence): {', '.join(untested)}")
    if outcome.different:
        print(
            f"galu equivalence: {len(outcome.different)} output(s) differ: no evidence for"
            f" {', '.join(sorted(outcome.unproven))} (an output differs, or was made from"
            " inputs that differ), nothing recorded for them, their jobs rerun as usual:"
        )
        print("\n".join(f"  {path}" for path in outcome.different))
    if outcome.recorded:
        print(f"galu equivalence: commit {LEDGER} with the code it vouches for.")
    return 1 if outcome.different else 0


def compact(root: Path, keep_commits: list[str]) -> int:
    """``--compact``: rewrite the ledger with one entry per closure still recorded, each
    entry checked against its commits before it is written."""
    import subprocess
    import tempfile

    from galu.workflow.equivalence import Ledger, LedgerError
    from galu.workflow.trust.equivalence_check import EquivalenceError, export, tree_closures
    from galu.workflow.trust.ledger_compact import compacted, recorded_closures
    from galu.workflow.trust.ledger_verify import commit_closures, recomputed_problems

    def commit(rev: str) -> str:
        proc = subprocess.run(["git", "rev-parse", "--verify", f"{rev}^{{commit}}"], cwd=root,
                              capture_output=True, text=True, check=False)  # fmt: skip
        if proc.returncode != 0:
            raise UsageError(f"--keep {rev}: no such commit in {root.resolve()}")
        return proc.stdout.strip()

    try:
        ledger = Ledger.load(root)
        keep = recorded_closures(p for p in (root / "published", root / "results") if p.is_dir())
        for rev in ["HEAD", *keep_commits]:
            keep |= set(commit_closures(root, commit(rev)).values())
        trees: dict[str, dict] = {}
        with tempfile.TemporaryDirectory(prefix="galu-compact-") as tmp:

            def files_at(rev: str, script: str) -> dict[str, str]:
                if rev not in trees:
                    tree = export(root, rev, Path(tmp) / rev, ("galu", "scripts"))
                    trees[rev] = tree_closures(tree)
                return trees[rev][script][1]

            entries = compacted(ledger, keep & set(ledger.entries), files_at)
        wrong = recomputed_problems(root, [e for e in entries if e.steps > 1])
    except (EquivalenceError, LedgerError, KeyError) as error:
        raise UsageError(f"the ledger could not be compacted: {error}") from None
    if wrong:
        raise UsageError("joined entries do not match their commits: " + "; ".join(wrong.values()))
    before = len(ledger.entries)
    Ledger(entries).save(root)
    print(f"galu equivalence: {LEDGER} holds {len(entries)} entries (was {before}); commit it.")
    return 0
