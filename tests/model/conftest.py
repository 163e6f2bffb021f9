"""Model tests run single-threaded: they use small tensors, and on a shared 2-core machine
OpenMP barriers make such ops 10-20x slower with two threads than with one."""

import pytest
import torch


@pytest.fixture(autouse=True)
def _one_thread():
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)
