"""Minimal-width search (galu.memorization.width_search) against monotone oracles with
known thresholds."""

from __future__ import annotations

import pytest

from galu.memorization.width_search import MinWidthSearch, run_searches, search_min_width


def _threshold_oracle(threshold: int, calls: list[list[int]]):
    def oracle(widths: list[int]) -> list[bool]:
        calls.append(list(widths))
        return [w >= threshold for w in widths]

    return oracle


@pytest.mark.parametrize("hi", [1, 2, 7, 100])
@pytest.mark.parametrize("probes", [1, 3, 4])
@pytest.mark.parametrize("start_at", ["lo", "middle", "hi"])
def test_finds_the_exact_threshold_of_every_monotone_oracle(
    hi: int, probes: int, start_at: str
) -> None:
    start = {"lo": 1, "middle": (1 + hi) // 2, "hi": hi}[start_at]
    for threshold in range(1, hi + 1):
        calls: list[list[int]] = []
        result = search_min_width(_threshold_oracle(threshold, calls), 1, hi, start, probes)
        assert result.found and result.min_width == threshold
        assert result.monotone
        probed = [w for call in calls for w in call]
        assert len(probed) == len(set(probed)), "a width was probed twice"
        assert all(1 <= w <= hi for w in probed)
        assert all(len(call) <= probes for call in calls)
        assert result.rounds == len(calls)


def test_reports_clearly_when_no_width_in_the_range_succeeds() -> None:
    calls: list[list[int]] = []
    result = search_min_width(_threshold_oracle(1000, calls), 4, 512)
    assert not result.found and result.min_width is None
    assert (512, False) in result.probes
    assert "no width in [4, 512] succeeded" in result.message
    assert "raise the upper end" in result.message


def test_success_everywhere_gives_the_lower_end() -> None:
    result = search_min_width(lambda ws: [True] * len(ws), 5, 64, start=20)
    assert result.min_width == 5
    assert result.message == "smallest successful width in [5, 64] is 5"


@pytest.mark.parametrize("ladder_probes", [1, 2, 3])
def test_the_ladder_keeps_probes_within_a_bounded_factor_of_the_threshold(
    ladder_probes: int,
) -> None:
    # Wide probes are the expensive ones: from a low start, a ladder of r doubling probes
    # per round overshoots the answer by less than a factor 2^r.
    for threshold in (3, 17, 33, 200):
        calls: list[list[int]] = []
        oracle = _threshold_oracle(threshold, calls)
        result = search_min_width(oracle, 1, 512, ladder_probes=ladder_probes)
        assert result.min_width == threshold
        assert max(w for call in calls for w in call) < 2**ladder_probes * threshold


def test_binary_search_round_count_on_a_wide_range() -> None:
    # One probe per round is plain bisection after the ladder: about 2 log2(hi) rounds.
    calls: list[list[int]] = []
    result = search_min_width(_threshold_oracle(300, calls), 1, 512, probes_per_round=1)
    assert result.min_width == 300
    assert result.rounds <= 2 * 9 + 1


def test_non_monotone_oracle_is_flagged() -> None:
    # Succeeds at 4 and from 8 on but fails at 6: the search sees 4 succeed and 6 fail.
    result = search_min_width(lambda ws: [w == 4 or w >= 8 for w in ws], 1, 16, 8, 3)
    assert [w for w, _ in result.probes] == [8, 16, 2, 4, 6, 3]
    assert result.min_width == 4 and not result.monotone
    monotone = search_min_width(lambda ws: [w >= 4 for w in ws], 1, 16, 8, 3)
    assert monotone.min_width == 4 and monotone.monotone


def test_lock_step_searches_share_each_round() -> None:
    thresholds = [5, 40, 1]
    searches = [MinWidthSearch(1, 64) for _ in thresholds]
    rounds: list[list[tuple[int, int]]] = []

    def oracle(requests: list[tuple[int, int]]) -> list[bool]:
        rounds.append(requests)
        return [w >= thresholds[i] for i, w in requests]

    results = run_searches(searches, oracle, probes_per_round=3)
    assert [r.min_width for r in results] == thresholds
    # The first round holds probes of all three searches; later rounds only unfinished ones.
    assert {i for i, _ in rounds[0]} == {0, 1, 2}
    assert len(rounds) == max(r.rounds for r in results)
    for i, result in enumerate(results):
        assert len(result.probes) == sum(1 for call in rounds for j, _ in call if j == i)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"lo": 0, "hi": 4}, "need 1 <= lo <= hi, got lo=0, hi=4"),
        ({"lo": 5, "hi": 4}, "need 1 <= lo <= hi"),
        ({"lo": 1, "hi": 4, "start": 9}, r"start must lie in \[1, 4\], got 9"),
        ({"lo": 1, "hi": 4, "ladder_probes": 0}, "ladder_probes must be >= 1"),
    ],
)
def test_bad_ranges_raise(kwargs: dict, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        MinWidthSearch(**kwargs)


def test_oracle_must_answer_every_probe() -> None:
    with pytest.raises(ValueError, match="oracle returned 1 verdicts for 2 probes"):
        run_searches([MinWidthSearch(1, 8)], lambda requests: [True])
