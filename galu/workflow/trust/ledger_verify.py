"""The equivalence ledger's closures checked against the commits they name, not read.

An entry of ``workflow/code-equivalence.yaml`` says: at commit ``checked`` the script's code
closure was ``closure``, at ``baseline`` it was ``same_as``, and the two made the same bytes.
Its commits are checked to be in the checkout's history whenever the ledger is read
(:func:`galu.workflow.equivalence.unverified`). Here the closures themselves are recomputed:
each commit's ``galu/`` and ``scripts/`` are exported and scanned by that commit's own code
(:func:`galu.workflow.trust.equivalence_check.tree_closures`: which modules a closure holds is the
rule of the code that ran), and an entry whose closures are not those is named. A commit's
closures never change (a commit is named by its content), so they are kept per commit in the
user's cache (``$XDG_CACHE_HOME/galu/tree-closures/``, by default ``~/.cache/...``), shared by
every checkout of the repository.
``galu audit`` checks the entries its outputs rely on.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Callable, Iterable
from pathlib import Path

from galu.atomic import atomic_write_bytes
from galu.workflow.equivalence import Equivalence
from galu.workflow.trust.equivalence_check import EquivalenceError, export, tree_closures


def cache_folder() -> Path:
    """Where the closures of each commit are kept (see the module docstring)."""
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "galu/tree-closures"


def commit_closures(root: Path, commit: str) -> dict[str, str]:
    """Unit label -> closure sha256 of every script at ``commit``, by that commit's code."""
    cached = cache_folder() / f"{commit}.json"
    if cached.is_file():
        try:
            return json.loads(cached.read_text())
        except ValueError:
            pass  # a damaged cache file: computed again below
    with tempfile.TemporaryDirectory(prefix="galu-ledger-") as tmp:
        tree = export(root, commit, Path(tmp) / "tree", ("galu", "scripts"))
        found = {label: sha for label, (sha, _) in tree_closures(tree).items()}
    try:
        atomic_write_bytes(cached, json.dumps(found, sort_keys=True).encode())
    except OSError:  # a read-only checkout only loses the cache
        pass
    return found


def recomputed_problems(root: Path, entries: Iterable[Equivalence]) -> dict[str, str]:
    """Closure -> why, for each entry whose recorded closures are not those its commits'
    trees have (an entry written by hand, or by a tool that scanned one tree by another's
    rule), or whose commits could not be scanned."""
    problems = {}
    for entry in entries:
        try:
            new = commit_closures(root, entry.checked).get(entry.script)
            old = commit_closures(root, entry.baseline).get(entry.script)
        except (EquivalenceError, OSError, ValueError) as error:
            problems[entry.closure] = f"{entry.script}: its commits could not be scanned ({error})"
            continue
        wrong = [
            f"{name} at {commit[:12]} is {found[:12] if found else 'absent'}, not {want[:12]}"
            for name, commit, found, want in (
                ("closure", entry.checked, new, entry.closure),
                ("same_as", entry.baseline, old, entry.same_as),
            )
            if found != want
        ]
        if wrong:
            problems[entry.closure] = f"{entry.script}: recomputed, its {'; '.join(wrong)}"
    return problems


def verifier(root: Path) -> Callable[[Equivalence], str | None]:
    """An entry's check for :class:`galu.workflow.equivalence.Ledger` (``verify``): its
    closures recomputed from its commits (:func:`recomputed_problems`), why it fails or None.
    Each commit's closures are computed once per machine (the cache above)."""
    return lambda entry: recomputed_problems(root, [entry]).get(entry.closure)
