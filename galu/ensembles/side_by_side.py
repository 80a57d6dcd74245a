"""Independent ensembles trained side by side, one torch thread each.

An ensemble's step is a few batched products of small matrices (members x batch x width):
torch's intra-op threads split such an operation across cores poorly, so a second thread
buys little (``benchmarks/ensemble.py``: 1.1-1.3x from 1 to 2 threads). Independent
ensembles are better spread over the threads whole. Python threads suffice: torch releases
the GIL inside each operation, and an ensemble's time is in its operations.

Each piece of work runs with one intra-op thread, exactly as it runs alone at
``torch.set_num_threads(1)``, so the results do not depend on the thread count. The work
must draw its random numbers from its own generators (as galu's trainers do), never from
torch's global one, whose draws would interleave between threads.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

import torch

from galu.device import torch_threads

Item = TypeVar("Item")
Result = TypeVar("Result")


def map_side_by_side(
    work: Callable[[Item], Result],
    items: Sequence[Item],
    cost: Callable[[Item], float],
    device: str = "cpu",
) -> list[Result]:
    """``[work(item) for item in items]``, computed in ``torch.get_num_threads()`` threads on
    a CPU (the costliest items first, so the threads finish together), sequentially on a GPU
    or with one thread. Torch's thread count is restored afterwards, also after an error."""
    threads = torch.get_num_threads()
    if torch.device(device).type != "cpu" or threads == 1 or len(items) < 2:
        return [work(item) for item in items]
    order = sorted(range(len(items)), key=lambda i: -cost(items[i]))
    results: list[Result | None] = [None] * len(items)
    with torch_threads(1), ThreadPoolExecutor(min(threads, len(items))) as pool:
        for i, result in zip(order, pool.map(lambda i: work(items[i]), order), strict=True):
            results[i] = result
    return results
