"""Model calls on CPU worker threads: whole calls side by side instead of each op split.

The embedded model's ops are small; split over all cores (torch's intra-op threads), each op
waits at a barrier for the slowest core. Running independent calls (windows, strands) in
worker threads that share the cores out is faster (``benchmarks/annotate_settings.py``,
``benchmarks/embed_workers.py``). Worker threads enter ``torch.inference_mode`` themselves
(it is thread-local); results move only by float rounding against one batched call.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

import torch

T = TypeVar("T")
R = TypeVar("R")

# Most worker threads by default (each gets torch threads / workers cores); measured at 2 only.
MAX_CPU_WORKERS = 4


def cpu_workers(device, workers: int | None = None) -> int:
    """Worker threads for model calls on ``device``: ``workers`` (default: torch's thread
    count, at most :data:`MAX_CPU_WORKERS`) on CPU, and 1 elsewhere (a GPU batches instead)."""
    if torch.device(device).type != "cpu":
        return 1
    return max(1, min(torch.get_num_threads(), MAX_CPU_WORKERS) if workers is None else workers)


def in_order(fn: Callable[[T], R], items: Iterable[T], workers: int) -> Iterator[R]:
    """``fn(item)`` for each item, yielded in order.

    With ``workers > 1`` the calls run on that many threads, each with ``torch threads //
    workers`` intra-op threads (restored afterwards), and at most ``workers`` calls are in
    flight, so memory stays that of ``workers`` calls. An exception in a call is raised here.
    """
    if workers <= 1:
        yield from map(fn, items)
        return
    threads = torch.get_num_threads()
    torch.set_num_threads(max(1, threads // workers))
    try:
        with ThreadPoolExecutor(workers) as pool:
            pending: deque = deque()
            for item in items:
                if len(pending) == workers:
                    yield pending.popleft().result()
                pending.append(pool.submit(fn, item))
            while pending:
                yield pending.popleft().result()
    finally:
        torch.set_num_threads(threads)
