"""What htslib (through pysam) shares across genoctx's readers."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import pysam


@contextlib.contextmanager
def quiet_htslib() -> Iterator[None]:
    """Silence htslib's stderr lines (a missing index, undeclared contigs, a failed decode) in
    the block, where genoctx explains a failure in one line of its own; errors still raise."""
    previous = pysam.set_verbosity(0)
    try:
        yield
    finally:
        pysam.set_verbosity(previous)
