"""Number-neutral code changes: code closures shown to make the same bytes as earlier ones.

Every output depends on its job's code closure (:mod:`galu.workflow.closure`): the closure's
hash is the rule's ``code`` param, so Snakemake reruns a job whose code changed, and ``galu audit``
names its outputs as stale. A refactor that changes no number would condemn hours of
finished work to rerun. When ``galu equivalence`` (:mod:`galu.workflow.trust.equivalence_check`) has
run the affected rules before and after a change and found every output byte-identical, it
records that here, in :data:`LEDGER` (committed with the code): the newer closure is *the
same as* the earlier one. From then on both share one canonical hash, the earliest of the
chain, which is what the workflow gives Snakemake and what the audit compares; the sidecars
keep the closure that actually ran.

The evidence covers the code paths the checked scales take (the tiny and the paper-smoke
configurations); a path only a full paper-scale run reaches is covered only as far as the
smoke exercises it. A change that alters any output gets no entry, so exactly the outputs
that depend on it stay stale.
"""

from __future__ import annotations

import re
import subprocess
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import yaml

from galu.atomic import atomic_write_bytes
from galu.yaml_files import load_yaml

LEDGER = "workflow/code-equivalence.yaml"
_HEADER = """\
# Code closures shown to make byte-identical outputs to earlier ones
# (galu/workflow/equivalence.py). Written by `galu equivalence --base <commit>`, which runs
# the rules whose closure changed at both commits and compares every output they make; commit it
# with the code it vouches for. closure: the newer closure's sha256; same_as: the earlier one's;
# baseline / checked: the commits of the earlier and the newer code; scales: the configurations run;
# outputs: the files compared (all identical); changed: the closure's files that differ; steps
# (where given): the recorded steps this entry stands for (`galu equivalence --compact`).
"""
_FIELDS = ("script", "closure", "same_as", "baseline", "checked", "scales", "outputs", "changed")
_OPTIONAL = ("steps",)


class LedgerError(ValueError):
    """The ledger file cannot be read (YAML error, missing field, a cycle)."""


@dataclass(frozen=True)
class Equivalence:
    """One recorded number-neutral change of one script's closure."""

    script: str
    closure: str
    same_as: str
    baseline: str
    checked: str
    scales: tuple[str, ...]
    outputs: int
    changed: tuple[str, ...]
    # >1: the entry joins that many recorded steps (each compared at these scales at least)
    steps: int = 1

    def evidence(self) -> str:
        """One line for the audit: what was compared, where."""
        through = f" (through {self.steps} recorded steps)" if self.steps > 1 else ""
        return (
            f"{self.script}: {self.outputs} output(s) byte-identical at"
            f" {', '.join(self.scales)} between {self.baseline[:12]} and {self.checked[:12]}"
            f"{through}"
        )


_FIX = f"restore it from git (`git checkout -- {LEDGER}`) or let `galu equivalence` write it"
_SHA256 = re.compile(r"[0-9a-f]{64}")
_COMMIT = re.compile(r"[0-9a-f]{40}")


def _strings(value: Any) -> bool:
    return isinstance(value, list) and all(isinstance(v, str) and v for v in value)


def _matches(pattern: re.Pattern[str]) -> Callable[[Any], bool]:
    return lambda value: isinstance(value, str) and bool(pattern.fullmatch(value))


# field -> (what it must be, the check); a YAML 0 or a short hash is no commit.
_SHA = ("a sha256 (64 hex digits)", _matches(_SHA256))
_FULL_COMMIT = ("a full commit hash (40 hex digits)", _matches(_COMMIT))
_CHECKS = {
    "script": ("a script path", lambda v: isinstance(v, str) and v.startswith("scripts/")),
    "closure": _SHA,
    "same_as": _SHA,
    "baseline": _FULL_COMMIT,
    "checked": _FULL_COMMIT,
    "scales": ("a list of scale names", lambda v: _strings(v) and len(v) > 0),
    "outputs": ("a count of outputs (> 0)", lambda v: type(v) is int and v > 0),
    "changed": ("a list of paths", _strings),
    "steps": ("a count of steps (> 1)", lambda v: type(v) is int and v > 1),
}


def _entry(raw: Any, where: str) -> Equivalence:
    if not isinstance(raw, dict) or not set(_FIELDS) <= set(raw) <= {*_FIELDS, *_OPTIONAL}:
        raise LedgerError(
            f"{where}: an entry needs exactly the fields {', '.join(_FIELDS)}"
            f" (and optionally {', '.join(_OPTIONAL)}); {_FIX}"
        )
    for name, (what, check) in _CHECKS.items():
        if name in raw and not check(raw[name]):
            raise LedgerError(f"{where}: {name} is {raw[name]!r}, not {what}; {_FIX}")
    return Equivalence(
        script=raw["script"],
        closure=raw["closure"],
        same_as=raw["same_as"],
        baseline=raw["baseline"],
        checked=raw["checked"],
        scales=tuple(raw["scales"]),
        outputs=raw["outputs"],
        changed=tuple(raw["changed"]),
        steps=raw.get("steps", 1),
    )


class Ledger:
    """The recorded equivalences, keyed by the newer closure's hash."""

    def __init__(
        self,
        entries: Iterable[Equivalence] = (),
        verify: Callable[[Equivalence], str | None] | None = None,
    ):
        self.entries: dict[str, Equivalence] = {}
        # closure -> why its entry is not trusted (kept in the file, left out of every chain)
        self.untrusted: dict[str, str] = {}
        # an entry's check before a chain first goes through it (None: why it fails); the
        # workflow's recomputes its closures (galu.workflow.trust.ledger_verify.verifier)
        self.verify = verify
        self._verified: set[str] = set()
        self.add(entries)

    @classmethod
    def load(
        cls, root: str | Path = ".", verify: Callable[[Equivalence], str | None] | None = None
    ) -> Ledger:
        """The ledger of the checkout at ``root`` (empty when there is none); ``verify``:
        an entry's check before any chain trusts it (see :meth:`chain`)."""
        path = Path(root) / LEDGER
        if not path.is_file():
            return cls()
        try:
            # (libyaml's loader: every job reads the ledger when it records its code)
            raw = load_yaml(path) or {}
        except (yaml.YAMLError, UnicodeDecodeError) as error:
            where = getattr(error, "problem_mark", None)
            at = f" at line {where.line + 1}" if where is not None else ""
            raise LedgerError(f"{LEDGER} is not valid YAML{at}; {_FIX}") from error
        items = raw.get("equivalences") if isinstance(raw, dict) else None
        if not isinstance(items, list):
            raise LedgerError(f"{LEDGER} must hold a list under `equivalences:`; {_FIX}")
        ledger = cls(_entry(item, f"{LEDGER}, entry {i + 1}") for i, item in enumerate(items))
        ledger.untrusted = unverified(Path(root), ledger.entries.values())
        ledger.verify = verify
        return ledger

    def chain(self, sha: str) -> list[Equivalence]:
        """The recorded steps from closure ``sha`` back to its canonical (earliest) one."""
        steps: list[Equivalence] = []
        seen = {sha}
        while sha in self.entries and self._trusted(sha):
            step = self.entries[sha]
            steps.append(step)
            sha = step.same_as
            if sha in seen:
                raise LedgerError(f"{LEDGER} has a cycle through closure {sha[:12]}; {_FIX}")
            seen.add(sha)
        return steps

    def _trusted(self, sha: str) -> bool:
        """Whether the entry of closure ``sha`` may be followed: not untrusted, and checked by
        :attr:`verify` (once) where there is one."""
        if sha in self.untrusted:
            return False
        if self.verify is not None and sha not in self._verified:
            self._verified.add(sha)
            if (why := self.verify(self.entries[sha])) is not None:
                self.untrusted[sha] = why
                return False
        return True

    def canonical(self, sha: str) -> str:
        """The earliest closure ``sha`` is recorded to be equivalent to (itself if none)."""
        steps = self.chain(sha)
        return steps[-1].same_as if steps else sha

    def evidence(self, recorded: str, current: str) -> list[Equivalence] | None:
        """The steps that make closure ``current`` equivalent to ``recorded`` (an output's
        code): [] when they are the same, None when they are not equivalent."""
        if recorded == current:
            return []
        if self.canonical(recorded) != self.canonical(current):
            return None
        older = {step.closure for step in self.chain(recorded)} | {recorded}
        return [step for step in self.chain(current) if step.closure not in older]

    def save(self, root: str | Path = ".") -> None:
        """Write the ledger (atomically), entries in the order they were recorded."""
        body = {"equivalences": [_plain(e) for e in self.entries.values()]}
        text = _HEADER + yaml.safe_dump(body, sort_keys=False, width=100)
        atomic_write_bytes(Path(root) / LEDGER, text.encode())

    def add(self, entries: Iterable[Equivalence]) -> None:
        """Record ``entries`` (a newer entry for the same closure replaces the older one)."""
        for entry in entries:
            self.entries[entry.closure] = entry
        for sha in self.entries:
            self.chain(sha)  # raises on a cycle


def history(root: Path) -> set[str] | None:
    """The commits of ``root``'s HEAD and all its ancestors; None without git history."""
    proc = subprocess.run(
        ["git", "rev-list", "HEAD"], cwd=root, capture_output=True, text=True, check=False
    )
    return set(proc.stdout.split()) if proc.returncode == 0 else None


def unverified(root: Path, entries: Iterable[Equivalence]) -> dict[str, str]:
    """The entries whose evidence this checkout cannot vouch for (closure -> why): a baseline
    or checked commit that is not HEAD or one of its ancestors (a hand-written entry, a
    commit from another branch), or no git history at all (a copy without ``.git``)."""
    entries = list(entries)
    known = history(root) if entries else set()
    if known is None:
        why = "this checkout has no git history to verify it against (clone the repository)"
        return {e.closure: why for e in entries}
    found = {}
    for e in entries:
        missing = [c[:12] for c in (e.baseline, e.checked) if c not in known]
        if missing:
            found[e.closure] = (
                f"{e.script}: commit(s) {', '.join(missing)} of its evidence are not in this"
                " checkout's history (HEAD and its ancestors)"
            )
    return found


def _plain(entry: Equivalence) -> dict[str, Any]:
    plain = asdict(entry)
    plain["scales"] = list(entry.scales)
    plain["changed"] = list(entry.changed)
    if entry.steps == 1:
        del plain["steps"]  # a step compared directly, as every entry written before --compact
    return plain


def closure_record(closure: Any, ledger: Ledger) -> dict[str, Any]:
    """A closure as a sidecar records it: :meth:`Closure.record`, plus ``canonical`` where
    the ledger records it as number-neutral to an earlier closure (what the audit compares)."""
    record = closure.record()
    canonical = ledger.canonical(closure.sha256)
    if canonical != closure.sha256:
        record["canonical"] = canonical
    return record
