"""Independent random streams of one run seed (Richemond & Guo, arXiv 1905.01369, Sec. 4
experiments): the initial weights, the minibatch order and the training subset each draw
from their own stream, so they never coincide yet are all fixed by the seed."""

from __future__ import annotations

import numpy as np

# Independent random streams derived from one run seed, so that e.g. the initial
# weights never coincide with the draws that pick the training subset.
INIT_STREAM, SHUFFLE_STREAM, SUBSET_STREAM = 0, 1, 2


def stream_seed(seed: int, stream: int) -> int:
    """A seed for one use (init, batch order, subset) of the run seed ``seed``."""
    return int(np.random.SeedSequence([seed, stream]).generate_state(1)[0])
