"""Repeat masking from the input itself: bases covered by a k-mer that recurs in the input.

Eukaryote gene finders run on soft-masked genomes, because transposons carry open reading frames
that look like genes to a coding model. The data here carry no masking, so the spliced decoder
masks the input itself, as WindowMasker does from a genome's own k-mer counts: every canonical
k-mer (a k-mer and its reverse complement count as one) is counted over all the records decoded
together, and a base is masked when some k-mer of at least ``min_count`` occurrences covers it.

Memory is bounded: k-mer ids are computed a chunk of ``chunk`` bases at a time, and when the
input holds more k-mers than ``max_bytes`` of 8-byte ids, the ids are counted in hash buckets,
one bucket per pass over the input (recomputing the ids each pass), so the ids held at once stay
under ``max_bytes``. The counts are exact either way.
Legend: L = sequence length, k = k-mer length, P = number of hash buckets (passes).
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

_MIX = np.uint64(0x9E3779B97F4A7C15)   # Fibonacci hashing: bucket = top bits of id * _MIX


def _windows(v: np.ndarray, k: int) -> np.ndarray:
    """``sum_j v[i + j] 4^(k-1-j)`` for every window of ``k`` (uint64 ``[len(v) - k + 1]``),
    by doubling: a window of a + b bases is the a-window shifted by 2b bits plus the b-window
    starting a bases on, so it takes O(log k) array passes instead of k."""
    power = {1: v}
    m = 1
    while 2 * m <= k:
        w = power[m]
        power[2 * m] = (w[:len(w) - m] << np.uint64(2 * m)) | w[m:]
        m *= 2
    out, have = None, 0
    for m in sorted(power, reverse=True):
        if have + m > k:
            continue
        w = power[m]
        if out is None:
            out = w
        else:
            n = len(w) - have
            out = (out[:n] << np.uint64(2 * m)) | w[have:have + n]
        have += m
    return out[:len(v) - k + 1]


def _canonical_kmers(x: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """Canonical k-mer ids ``[L - k + 1]`` (uint64) and whether each holds a non-ACGT base."""
    ok = x < 4
    v = np.where(ok, x, 0).astype(np.uint64)
    fwd = _windows(v, k)
    rev = _windows((np.uint64(3) - v)[::-1].copy(), k)[::-1]
    bad_run = np.concatenate([[0], np.cumsum(~ok, dtype=np.int64)])
    bad = bad_run[k:] > bad_run[:len(x) - k + 1]
    return np.minimum(fwd, rev), bad


def _chunks(codes: list[np.ndarray], k: int, chunk: int) -> Iterator[tuple[int, int, np.ndarray,
                                                                          np.ndarray]]:
    """(record index, first k-mer position, ids, has-N) over every record, ``chunk`` k-mers at a
    time (each chunk reads k - 1 bases past its end, so no k-mer is lost at a seam)."""
    for r, x in enumerate(codes):
        n = len(x) - k + 1
        for a in range(0, max(n, 0), chunk):
            b = min(a + chunk, n)
            ids, bad = _canonical_kmers(np.asarray(x[a:b + k - 1]), k)
            yield r, a, ids, bad


def repeat_masks(codes: list[np.ndarray], k: int = 16, min_count: int = 3, *,
                 chunk: int = 1 << 20, max_bytes: int = 1 << 28) -> list[np.ndarray]:
    """Boolean masks ``[L]``, one per sequence of ``codes`` (base codes 0..3, 4 = other): True
    where a canonical k-mer seen at least ``min_count`` times across all of ``codes`` covers the
    base. k-mers with a non-ACGT base are not counted. ``chunk`` and ``max_bytes`` bound memory
    (module docstring); they do not change the masks."""
    if not 1 <= k <= 32:
        raise ValueError(f"k must lie in 1..32, got {k}")
    if min_count < 2:
        raise ValueError(f"min_count must be at least 2, got {min_count}")
    if chunk < 1 or max_bytes < 8:
        raise ValueError(f"chunk and max_bytes must be positive, got {chunk}, {max_bytes}")
    total = sum(max(len(x) - k + 1, 0) for x in codes)
    bits = 0
    while (8 * total) >> bits > max_bytes:
        bits += 1
    frequent = []
    for bucket in range(1 << bits):
        held = []
        for _, _, ids, bad in _chunks(codes, k, chunk):
            ids = ids[~bad]
            if bits:
                ids = ids[((ids * _MIX) >> np.uint64(64 - bits)) == bucket]
            held.append(ids)
        if held:
            ids = np.concatenate(held)
            del held
            ids.sort()
            # in sorted ids, a run of at least min_count equal ids starts wherever an id equals
            # the one min_count - 1 places on
            m = min_count - 1
            frequent.append(np.unique(ids[:len(ids) - m][ids[:len(ids) - m] == ids[m:]]))
            del ids
    frequent = np.sort(np.concatenate(frequent)) if frequent else np.zeros(0, np.uint64)
    masks = [np.zeros(len(x), dtype=bool) for x in codes]
    for r, a, ids, bad in _chunks(codes, k, chunk):
        if not len(frequent):
            break
        at = np.searchsorted(frequent, ids)
        hit = (frequent[np.minimum(at, len(frequent) - 1)] == ids) & ~bad
        cover = np.zeros(len(ids) + k, dtype=np.int32)
        at = np.flatnonzero(hit)
        np.add.at(cover, at, 1)
        np.add.at(cover, at + k, -1)
        masks[r][a:a + len(ids) + k - 1] |= np.cumsum(cover[:-1], dtype=np.int32) > 0
    return masks
