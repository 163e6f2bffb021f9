"""Worker processes: one way to start them, for every part of genoctx that shares out work.

Spawned, never forked: the caller may hold CUDA or torch's threads, and a worker imports only
what its job needs (numpy and the decoders, not torch). Where a system cannot start processes
(no process semaphores, as in some sandboxes) the caller gets None and does the work in turn,
with the same result.
"""

from __future__ import annotations


def spawn_pool(processes: int, **kwargs):
    """A ``ProcessPoolExecutor`` of ``processes`` spawned processes (``kwargs`` go to it, e.g.
    an ``initializer``), or None where this system cannot start one."""
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    try:
        return ProcessPoolExecutor(processes, mp_context=multiprocessing.get_context("spawn"),
                                   **kwargs)
    except (OSError, NotImplementedError):  # no process semaphores here
        return None
