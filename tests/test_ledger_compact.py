"""The equivalence ledger shortened to the closures still recorded
(galu/workflow/trust/ledger_compact.py, ``galu equivalence --compact``)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from galu.workflow.equivalence import LEDGER, Equivalence, Ledger, LedgerError
from galu.workflow.trust.ledger_compact import compacted, joined, recorded_closures

FILES = {  # (commit, script) -> closure files, as files_at gives them
    ("b1", "scripts/s.py"): {"galu/x.py": "1", "galu/gone.py": "1", "scripts/s.py": "1"},
    ("k4", "scripts/s.py"): {"galu/x.py": "2", "galu/new.py": "1", "scripts/s.py": "1"},
}


def step(new, old, scales=("tiny", "paper-smoke"), outputs=3, base=None, checked=None):
    return Equivalence("scripts/s.py", new, old, base or f"b{old[1]}", checked or f"k{new[1]}",
                       scales, outputs, ("galu/x.py",))  # fmt: skip


def chain() -> Ledger:
    """c1 <- c2 <- c3 <- c4: three recorded steps, c1 canonical."""
    return Ledger([step("c2", "c1"), step("c3", "c2", outputs=2), step("c4", "c3")])


def files_at(commit: str, script: str) -> dict[str, str]:
    return FILES[(commit, script)]


def test_a_kept_closure_points_straight_at_the_canonical_one_through_its_steps():
    (whole,) = compacted(chain(), {"c4"}, files_at)
    assert (whole.closure, whole.same_as, whole.baseline, whole.checked) == ("c4", "c1", "b1", "k4")
    assert whole.steps == 3 and whole.outputs == 2  # the fewest outputs any step compared
    assert whole.changed == ("galu/gone.py (no longer used)", "galu/new.py (newly used)",
                             "galu/x.py")  # fmt: skip
    assert "(through 3 recorded steps)" in whole.evidence()


def test_canonicals_stay_and_only_closures_nothing_records_lose_their_entry():
    before = chain()
    after = Ledger(compacted(before, {"c4", "c2"}, files_at))
    assert [e.closure for e in after.entries.values()] == ["c2", "c4"]  # the ledger's order
    assert after.entries["c2"] == before.entries["c2"]  # a single step stays as it was
    for sha in ("c1", "c2", "c4"):
        assert after.canonical(sha) == before.canonical(sha) == "c1"
    assert after.canonical("c3") == "c3"  # recorded nowhere: its outputs are stale
    assert [s.closure for s in after.evidence("c2", "c4")] == ["c4"]
    assert compacted(before, {"c1", "elsewhere"}, files_at) == []  # canonical or unknown


@pytest.mark.parametrize(
    "scales, common",
    [
        ([("tiny", "paper-smoke"), ("tiny", "paper-smoke", "quick")], ("tiny", "paper-smoke")),
        ([("tiny",), ("tiny (normalization)",)], ("tiny (normalization)",)),
        ([("tiny (normalization)",), ("tiny",), ("quick", "tiny")], ("tiny (normalization)",)),
        ([("tiny (scm)",), ("tiny (normalization)",)], None),
        ([("tiny",), ("quick",)], None),
    ],
)
def test_a_joined_entry_claims_only_the_scales_every_step_checked(scales, common):
    steps = [step(f"c{i + 2}", f"c{i + 1}", s) for i, s in enumerate(scales)][::-1]
    whole = joined(steps, ())
    assert (whole.scales if whole else None) == common


def test_a_chain_no_scale_vouches_for_whole_keeps_its_steps():
    ledger = Ledger([step("c2", "c1", ("tiny",)), step("c3", "c2", ("quick",))])
    kept = compacted(ledger, {"c3"}, files_at)
    assert kept == list(ledger.entries.values())


def test_joined_entries_round_trip_and_steps_are_checked(tmp_path: Path):
    (tmp_path / "workflow").mkdir()
    full = [Equivalence("scripts/s.py", c * 64, "0" * 64, "b" * 40, "c" * 40, ("tiny",), 1, (),
                        steps) for c, steps in (("1", 1), ("2", 4))]  # fmt: skip
    Ledger(full).save(tmp_path)
    text = (tmp_path / LEDGER).read_text()
    assert text.count("steps: 4") == 1 and "steps: 1" not in text  # a plain step as before
    assert list(Ledger([]).load(tmp_path).entries.values()) == full  # (no git: untrusted only)
    for bad in ("steps: 1", "steps: two"):
        (tmp_path / LEDGER).write_text(text.replace("steps: 4", bad))
        with pytest.raises(LedgerError, match="steps is .*, not a count of steps"):
            Ledger.load(tmp_path)


def test_recorded_closures_are_read_from_sidecars_and_unreadable_ones_skipped(tmp_path: Path):
    for rel, body in {
        "a/x.csv.meta.json": json.dumps({"code": {"sha256": "aa"}}),
        "a/b/y.csv.meta.json": json.dumps({"code": {"sha256": "bb", "canonical": "cc"}}),
        "a/z.csv.meta.json": "{not json",
        "a/w.csv.meta.json": json.dumps(["a list"]),
        "a/v.csv.meta.json": json.dumps({"code": None}),
        "a/u.csv": json.dumps({"code": {"sha256": "not a sidecar"}}),
    }.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(body)
    assert recorded_closures([tmp_path / "a"]) == {"aa", "bb"}
