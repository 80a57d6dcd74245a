"""Search for the smallest width at which a (monotone) success oracle holds.

Fiat, Malach & Shalev-Shwartz (arXiv 1906.05032), section 3.1 report the minimal number
of neurons that memorizes m random examples. Training succeeds more easily with more
neurons, so "success at width k" is (up to training noise) monotone in k and the
threshold can be found by search instead of a full sweep.

A search proposes several widths per round so that one round can train as a single
ensemble, and many searches advance in lock-step (:func:`run_searches`) so that their
probes share ensembles too. Each round either climbs a doubling ladder (no success seen
yet: probes stay within a factor 2 of the threshold, which keeps padded ensembles
narrow) or splits the bracket ``(largest failure, smallest success]`` into equal parts.
For a monotone oracle the result is exact; when the oracle is not monotone the result
is still a width that succeeded right above one that failed, and ``monotone`` says so.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from galu.progress import log_progress


@dataclass
class SearchResult:
    """Outcome of one search over ``[lo, hi]``; ``min_width`` is None when nothing succeeded."""

    lo: int
    hi: int
    min_width: int | None
    probes: list[tuple[int, bool]]
    rounds: int
    monotone: bool

    @property
    def found(self) -> bool:
        return self.min_width is not None

    @property
    def message(self) -> str:
        if self.found:
            return f"smallest successful width in [{self.lo}, {self.hi}] is {self.min_width}"
        return (
            f"no width in [{self.lo}, {self.hi}] succeeded (the largest, {self.hi}, failed); "
            "raise the upper end of the search range"
        )


@dataclass
class MinWidthSearch:
    """State of one search for the smallest successful width in ``[lo, hi]``.

    ``start`` is where the doubling ladder begins (default ``lo``) and ``ladder_probes``
    caps the ladder's probes per round (wide probes cost the most, and every ladder probe
    above the first success is wasted). Neither changes the answer for a monotone oracle.
    """

    lo: int
    hi: int
    start: int | None = None
    ladder_probes: int = 2
    probes: list[tuple[int, bool]] = field(default_factory=list)
    rounds: int = 0

    def __post_init__(self) -> None:
        if not 1 <= self.lo <= self.hi:
            raise ValueError(f"need 1 <= lo <= hi, got lo={self.lo!r}, hi={self.hi!r}")
        if self.start is None:
            self.start = self.lo
        if not self.lo <= self.start <= self.hi:
            raise ValueError(f"start must lie in [{self.lo}, {self.hi}], got {self.start!r}")
        if self.ladder_probes < 1:
            raise ValueError(f"ladder_probes must be >= 1, got {self.ladder_probes!r}")

    @property
    def smallest_success(self) -> int | None:
        wins = [w for w, ok in self.probes if ok]
        return min(wins) if wins else None

    @property
    def largest_failure(self) -> int:
        """Largest failing width below the smallest success (``lo - 1`` if none)."""
        ceiling = self.smallest_success
        losses = [w for w, ok in self.probes if not ok and (ceiling is None or w < ceiling)]
        return max(losses, default=self.lo - 1)

    @property
    def done(self) -> bool:
        success = self.smallest_success
        if success is None:
            return self.largest_failure >= self.hi
        return success - self.largest_failure == 1

    def propose(self, count: int) -> list[int]:
        """Up to ``count`` new widths to probe next, ascending; empty when done."""
        if count < 1:
            raise ValueError(f"count must be >= 1, got {count!r}")
        if self.done:
            return []
        fail, success = self.largest_failure, self.smallest_success
        if success is None:
            return self._ladder(fail, min(count, self.ladder_probes))
        gap = success - fail
        picks = {fail + math.ceil(i * gap / (count + 1)) for i in range(1, count + 1)}
        return sorted(w for w in picks if fail < w < success)

    def _ladder(self, fail: int, count: int) -> list[int]:
        base = self.start if fail < self.start else 2 * fail
        widths: list[int] = []
        width = max(base, fail + 1)
        while len(widths) < count and (not widths or widths[-1] < self.hi):
            widths.append(min(width, self.hi))
            width *= 2
        return widths

    def update(self, widths: Sequence[int], successes: Sequence[bool]) -> None:
        """Record the oracle's verdicts for the probed ``widths``."""
        if len(widths) != len(successes):
            raise ValueError(f"got {len(widths)} widths but {len(successes)} verdicts")
        self.probes.extend((int(w), bool(ok)) for w, ok in zip(widths, successes, strict=True))
        self.rounds += 1

    def result(self) -> SearchResult:
        success = self.smallest_success
        monotone = success is None or all(ok or w < success for w, ok in self.probes)
        return SearchResult(self.lo, self.hi, success, list(self.probes), self.rounds, monotone)


BatchOracle = Callable[[list[tuple[int, int]]], Sequence[bool]]


def run_searches(
    searches: Sequence[MinWidthSearch], oracle: BatchOracle, probes_per_round: int = 4
) -> list[SearchResult]:
    """Advance all searches in lock-step until each is done.

    Every round, ``oracle`` receives all pending probes as ``(search index, width)`` pairs
    and returns one verdict per pair, so it can train them as one ensemble.
    """
    round_ = 0
    while True:
        round_ += 1
        requests = [(i, w) for i, s in enumerate(searches) for w in s.propose(probes_per_round)]
        if not requests:
            return [s.result() for s in searches]
        open_searches = len({i for i, _ in requests})
        log_progress("width search round", round_, None, open=open_searches, probes=len(requests))
        verdicts = list(oracle(requests))
        if len(verdicts) != len(requests):
            raise ValueError(f"oracle returned {len(verdicts)} verdicts for {len(requests)} probes")
        for i, search in enumerate(searches):
            mine = [(w, ok) for (j, w), ok in zip(requests, verdicts, strict=True) if j == i]
            if mine:
                search.update([w for w, _ in mine], [ok for _, ok in mine])


def search_min_width(
    oracle: Callable[[list[int]], Sequence[bool]],
    lo: int,
    hi: int,
    start: int | None = None,
    probes_per_round: int = 4,
    ladder_probes: int = 2,
) -> SearchResult:
    """Smallest width in ``[lo, hi]`` for which ``oracle`` succeeds (one search).

    ``oracle`` takes a list of widths (one round) and returns a verdict for each.
    """
    search = MinWidthSearch(lo, hi, start, ladder_probes)
    results = run_searches([search], lambda req: oracle([w for _, w in req]), probes_per_round)
    return results[0]
