"""The equivalence ledger shortened to the closures something still records.

Every number-neutral change adds a step to a script's chain in the ledger
(:mod:`galu.workflow.equivalence`): closure C_n is the same as C_{n-1}, ... down to the
canonical C_0. Before the code closures were narrowed to result code, every machinery edit
added a step, so the chains grew long although only a few of their closures are still
recorded anywhere: the checkout's current code, the sidecars of a committed publication and
of the user's own runs. Equivalence is transitive, so each such closure can point straight at
its canonical one, in one entry that stands for the steps between them (``steps``), compared
at the scales every one of those steps ran (their intersection). The canonical closure is
kept, so no rule's ``code`` param, no sidecar's ``canonical`` and no checkpoint key changes:
nothing replans. A closure no longer recorded anywhere loses its entry; an output made with it
(a run of an older checkout nobody kept) is named stale and reruns. The retired steps stay in
git history.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from dataclasses import replace
from pathlib import Path

from galu.workflow.equivalence import Equivalence, Ledger

# (commit, script) -> the script's closure files at that commit, as that commit computes them
FilesAt = Callable[[str, str], dict[str, str]]


def _meet(a: str, b: str) -> str | None:
    """The scale two steps both checked: ``tiny`` and ``tiny (normalization)`` (a check run on
    one stage, :func:`galu.workflow.trust.equivalence_check.check`) share the stage's run."""
    if a == b:
        return a
    base_a, base_b = a.split(" (")[0], b.split(" (")[0]
    if base_a != base_b or (a != base_a and b != base_b):
        return None  # other scales, or runs of two different stages
    return a if a != base_a else b


def _common(scales: list[tuple[str, ...]]) -> tuple[str, ...]:
    """The scales every one of the steps checked (the narrowest label of each)."""
    common = scales[0]
    for these in scales[1:]:
        common = tuple(m for a in common for b in these if (m := _meet(a, b)) is not None)
    return common


def joined(steps: list[Equivalence], changed: tuple[str, ...]) -> Equivalence | None:
    """One entry for a chain of ``steps`` (newest first, as :meth:`Ledger.chain` gives them),
    or None when no scale was checked by every step (then no scale vouches for the whole)."""
    newest, oldest = steps[0], steps[-1]
    scales = _common([step.scales for step in steps])
    if not scales:
        return None
    return Equivalence(
        script=newest.script,
        closure=newest.closure,
        same_as=oldest.same_as,
        baseline=oldest.baseline,
        checked=newest.checked,
        scales=scales,
        outputs=min(step.outputs for step in steps),
        changed=changed,
        steps=sum(step.steps for step in steps),
    )


def compacted(ledger: Ledger, keep: Iterable[str], files_at: FilesAt) -> list[Equivalence]:
    """The entries the kept closures need, in the ledger's order: a chain of one step as it
    is; a longer one joined (its ``changed`` recomputed from the two commits' closures); a
    chain no common scale vouches for kept step by step."""
    from galu.workflow.closure import changed_files

    wanted: dict[str, Equivalence] = {}
    for sha in keep:
        steps = ledger.chain(sha)
        if not steps:
            continue  # a canonical closure, or one the ledger does not hold
        if len(steps) == 1:
            wanted[sha] = steps[0]
        elif (whole := joined(steps, ())) is None:
            wanted.update({s.closure: s for s in steps})
        else:
            before = files_at(whole.baseline, steps[-1].script)
            changes = changed_files(before, files_at(whole.checked, whole.script))
            wanted[sha] = replace(whole, changed=tuple(changes))
    order = list(ledger.entries)
    return sorted(wanted.values(), key=lambda e: order.index(e.closure))


def recorded_closures(folders: Iterable[Path]) -> set[str]:
    """The closures the sidecars under ``folders`` record (what their outputs were made with)."""
    found = set()
    for folder in folders:
        for sidecar in folder.rglob("*.meta.json"):
            try:
                code = json.loads(sidecar.read_text()).get("code") or {}
            except (OSError, ValueError, AttributeError):
                continue  # not a sidecar galu can read: the audit names it, not this
            if isinstance(code, dict) and isinstance(code.get("sha256"), str):
                found.add(code["sha256"])
    return found
