"""Packed k-mer codes of a whole sequence, built by doubling.

A k-mer of 2-bit bases packs into an unsigned integer (first base most significant). Shifting
and OR-ing one code per base costs k passes over the sequence; here the codes of 2-mers are
made from those of 1-mers, 4-mers from 2-mers and so on, and a k that is not a power of two is
joined from the powers in its binary expansion: about log2(k) + popcount(k) passes, on integers
no wider than each step needs (6 passes instead of 32 for the 32-mers of the leakage guard).
"""

from __future__ import annotations

import numpy as np

_WIDTHS = ((4, np.uint8), (8, np.uint16), (16, np.uint32), (32, np.uint64))


def code_dtype(k: int) -> type:
    """The narrowest unsigned integer type that holds a packed ``k``-mer (k ≤ 32)."""
    for most, dtype in _WIDTHS:
        if k <= most:
            return dtype
    raise ValueError(f"a packed k-mer holds at most 32 bases, not {k}")


def packed_kmers(code: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """Codes of every ``k``-mer of an encoded sequence ``code`` (uint8: 0..3 for ACGT, 4 for
    anything else, as :func:`genoctx.heads.orfs.encode` makes), ``[L - k + 1]`` of
    :func:`code_dtype` ``(k)``, and a mask of the k-mers that hold only A/C/G/T; the codes of
    the others read their other bases as A and mean nothing.

    >>> from genoctx.heads.orfs import encode
    >>> packed_kmers(encode(b"ACGTN"), 2)[0].tolist(), packed_kmers(encode(b"ACGTN"), 2)[1].tolist()
    ([1, 6, 11, 12], [True, True, True, False])
    """
    return _packed(code, k), _all_acgt(code, k)


def canonical_kmers(code: np.ndarray, k: int,
                    positions: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """As :func:`packed_kmers`, each code the smaller of the k-mer's and its reverse
    complement's: the same value for a k-mer read on either strand. With ``positions``, only
    the k-mers starting there (each within the sequence): k passes over the starts, for a
    sample of a long sequence."""
    if positions is not None:
        return _canonical_at(code, k, np.asarray(positions, dtype=np.int64))
    fwd = _packed(code, k)
    rc = (np.uint8(3) - (np.asarray(code, np.uint8) & np.uint8(3)))[::-1]
    np.minimum(fwd, _packed(rc, k)[::-1], out=fwd)  # the reverse strand's k-mer at each start
    return fwd, _all_acgt(code, k)


def _canonical_at(code: np.ndarray, k: int, at: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    dtype = code_dtype(k)
    fwd, rev, two = np.zeros(len(at), dtype), np.zeros(len(at), dtype), dtype(2)
    for j in range(k):  # one pass per base, gathering at the starts
        fwd <<= two
        fwd |= code[at + j] & 3
        rev <<= two
        rev |= 3 - (code[at + k - 1 - j] & 3)
    np.minimum(fwd, rev, out=fwd)
    bad = np.concatenate([[0], np.cumsum(np.asarray(code) > 3)])
    return fwd, bad[at + k] == bad[at]


def _packed(code: np.ndarray, k: int) -> np.ndarray:
    out_type = code_dtype(k)
    n = len(code) - k + 1
    if k < 1 or n <= 0:
        return np.zeros(0, out_type)
    kept = {1 << i for i in range(k.bit_length()) if k >> i & 1}  # k's binary expansion
    powers = {1: np.asarray(code, np.uint8) & np.uint8(3)}
    width = 1
    while 2 * width <= k:  # codes of 2w-mers from those of w-mers
        part = powers[width] if width in kept else powers.pop(width)  # memory: drop the rest
        dtype = code_dtype(2 * width)
        m = len(part) - width
        joined = part[:m].astype(dtype) << dtype(2 * width)
        joined |= part[width:width + m]
        powers[2 * width] = joined
        del part
        width *= 2
    out, at = None, 0
    for width in sorted(powers, reverse=True):  # k's binary expansion, first bases first
        if width not in kept:
            continue
        part = powers.pop(width)[at:at + n]
        if out is None:  # the level itself when k is a power of two (popped: ours)
            out = part.astype(out_type, copy=False)
        else:
            out <<= out_type(2 * width)
            out |= part
        at += width
    return out


def _all_acgt(code: np.ndarray, k: int) -> np.ndarray:
    """Whether each k-mer of ``code`` holds only A/C/G/T (codes below 4)."""
    n = len(code) - k + 1
    if k < 1 or n <= 0:
        return np.zeros(0, bool)
    bad = np.cumsum(np.asarray(code) > 3, dtype=np.int32 if len(code) < 2**31 else np.int64)
    ok = np.empty(n, bool)
    ok[0] = bad[k - 1] == 0
    np.equal(bad[k:], bad[:n - 1], out=ok[1:])
    return ok
