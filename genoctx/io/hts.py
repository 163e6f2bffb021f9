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


@contextlib.contextmanager
def bytes_kept() -> Iterator[None]:
    """In the block, pysam decodes text that is not UTF-8 (a Latin-1 byte such as 0xFC, ``ü``,
    in a VCF header or INFO value) with ``surrogateescape`` instead of raising
    UnicodeDecodeError: each such byte becomes a lone surrogate (U+DCFC) that
    ``encode("utf-8", "surrogateescape")`` writes back as the same byte. pysam's setting is
    process-wide; the previous one is restored when the block ends."""
    from pysam.libcutils import set_encoding_error_handler

    previous = set_encoding_error_handler("surrogateescape")
    try:
        yield
    finally:
        set_encoding_error_handler(previous)
