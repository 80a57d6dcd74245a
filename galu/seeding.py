"""Seeds: every random stream of the library is derived from the configuration's seed.

A job's seed comes from the config and its wildcards; within a job, initialization, gates,
minibatch order and data each get their own stream of that seed (:func:`derive_seed`), so
they are independent yet fully determined, and a rerun gives the same bytes.
"""

from __future__ import annotations

from typing import Any

import numpy as np


def run_seeds(seed: int, count: int) -> list[int]:
    """The seeds of a setting's ``count`` runs (networks, simulations, draws): ``seed, seed + 1,
    ..., seed + count - 1``, every stage's convention (the config's ``seeds`` keys)."""
    for name, value, low in (("seed", seed, 0), ("seeds", count, 1)):
        if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < low:
            raise ValueError(f"{name} must be an integer >= {low}, got {value!r}")
    return [int(seed) + i for i in range(count)]


def seeds_in(table: Any) -> list[int]:
    """The distinct seeds of a table's ``seed`` column, ascending: the seeds its rows were
    made with (empty cells, such as an ODE's, and a table without one give none)."""
    if "seed" not in table.columns:
        return []
    return sorted(int(s) for s in table["seed"].dropna().unique())


def derive_seed(seed: int, stream: str) -> int:
    """Return a seed for one purpose (``stream``) derived from ``seed``.

    Initialization, gates, minibatch order and data use different streams of the same
    member seed, so they are statistically independent yet fully determined by it.
    """
    if isinstance(seed, bool) or not isinstance(seed, int | np.integer) or seed < 0:
        raise ValueError(f"seed must be a non-negative integer, got {seed!r}")
    entropy = [int(seed), *stream.encode()]
    state = np.random.SeedSequence(entropy).generate_state(2, dtype=np.uint32)
    return int(state[0]) << 31 | int(state[1]) >> 1
