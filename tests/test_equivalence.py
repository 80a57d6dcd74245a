"""The equivalence ledger (galu/equivalence.py): canonical closures, evidence, bad files."""

from __future__ import annotations

from pathlib import Path

import pytest

from galu.equivalence import LEDGER, Equivalence, Ledger, LedgerError


def step(new: str, old: str, script: str = "scripts/scm_ode.py") -> Equivalence:
    return Equivalence(script, new, old, "b" * 40, "c" * 40, ("tiny",), 3, ("galu/x.py",))


def test_canonical_follows_the_chain_to_the_earliest_closure():
    ledger = Ledger([step("c3", "c2"), step("c2", "c1")])
    assert ledger.canonical("c3") == ledger.canonical("c2") == ledger.canonical("c1") == "c1"
    assert ledger.canonical("other") == "other"
    assert [s.closure for s in ledger.chain("c3")] == ["c3", "c2"]


def test_evidence_is_the_steps_between_two_closures_and_none_when_not_equivalent():
    ledger = Ledger([step("c3", "c2"), step("c2", "c1"), step("d2", "d1")])
    assert ledger.evidence("c1", "c1") == []
    assert [s.closure for s in ledger.evidence("c1", "c3")] == ["c3", "c2"]
    assert [s.closure for s in ledger.evidence("c2", "c3")] == ["c3"]
    assert ledger.evidence("c1", "d2") is None
    assert ledger.evidence("c1", "unrecorded") is None


def test_a_cycle_is_refused():
    with pytest.raises(LedgerError, match="cycle"):
        Ledger([step("a", "b"), step("b", "a")])


def test_save_and_load_round_trip(tmp_path: Path):
    ledger = Ledger([step("c2", "c1"), step("c3", "c2", script="scripts/scm_sim.py")])
    (tmp_path / "workflow").mkdir()
    ledger.save(tmp_path)
    text = (tmp_path / LEDGER).read_text()
    assert text.startswith("# Code closures shown to make byte-identical outputs")
    assert Ledger.load(tmp_path).entries == ledger.entries


def test_no_ledger_is_an_empty_one(tmp_path: Path):
    assert Ledger.load(tmp_path).entries == {}


@pytest.mark.parametrize(
    "text, message",
    [
        ("equivalences: [\n", "not valid YAML"),
        ("equivalences: {}\n", "a list under `equivalences:`"),
        ("- a\n", "a list under `equivalences:`"),
        (
            "equivalences:\n  - script: s\n",
            "entry 1: an entry needs exactly the fields script, closure",
        ),
    ],
)
def test_a_broken_ledger_is_named_with_the_fix(tmp_path: Path, text: str, message: str):
    (tmp_path / "workflow").mkdir()
    (tmp_path / LEDGER).write_text(text)
    with pytest.raises(LedgerError, match=message):
        Ledger.load(tmp_path)
