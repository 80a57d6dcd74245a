"""galu.seeding: the seeds of a setting's runs, and the streams derived from one seed."""

from __future__ import annotations

import numpy as np
import pytest

from galu.seeding import derive_seed, run_seeds


def test_run_seeds_are_consecutive_from_the_config_seed():
    assert run_seeds(0, 1) == [0]
    assert run_seeds(7, 3) == [7, 8, 9]
    assert run_seeds(np.int64(2), 2) == [2, 3]
    assert all(type(s) is int for s in run_seeds(np.int64(2), 2))  # plain ints in the CSVs


@pytest.mark.parametrize(
    ("seed", "count", "message"),
    [
        (-1, 2, "seed must be an integer >= 0, got -1"),
        (True, 2, "seed must be an integer >= 0, got True"),
        (0, 0, "seeds must be an integer >= 1, got 0"),
        (0, 1.5, "seeds must be an integer >= 1, got 1.5"),
    ],
)
def test_run_seeds_refuse_what_is_not_a_count(seed, count, message):
    with pytest.raises(ValueError, match=message):
        run_seeds(seed, count)


def test_derived_streams_are_fixed_and_distinct():
    assert derive_seed(0, "init") == derive_seed(0, "init")
    seeds = {derive_seed(s, stream) for s in (0, 1) for stream in ("init", "gates", "data")}
    assert len(seeds) == 6
