"""Repeat masking from the input itself: bases covered by a k-mer that recurs in the input.

Eukaryote gene finders run on soft-masked genomes, because transposons carry open reading frames
that look like genes to a coding model. The data here carry no masking, so the spliced decoder
masks the input itself, as WindowMasker does from a genome's own k-mer counts: every canonical
k-mer (a k-mer and its reverse complement count as one) is counted over all the records decoded
together, and a base is masked when some k-mer of at least ``min_count`` occurrences covers it.
Legend: L = sequence length, k = k-mer length.
"""

from __future__ import annotations

import numpy as np


def _canonical_kmers(x: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """Canonical k-mer ids ``[L - k + 1]`` (uint64) and whether each holds a non-ACGT base."""
    n = len(x) - k + 1
    ok = x < 4
    v = np.where(ok, x, 0).astype(np.uint64)
    fwd = np.zeros(n, dtype=np.uint64)
    rev = np.zeros(n, dtype=np.uint64)
    bad = np.zeros(n, dtype=bool)
    four = np.uint64(4)
    for i in range(k):
        part = v[i:i + n]
        fwd = fwd * four + part
        rev += (np.uint64(3) - part) * four ** np.uint64(i)
        bad |= ~ok[i:i + n]
    return np.minimum(fwd, rev), bad


def repeat_masks(codes: list[np.ndarray], k: int = 16, min_count: int = 3) -> list[np.ndarray]:
    """Boolean masks ``[L]``, one per sequence of ``codes`` (base codes 0..3, 4 = other): True
    where a canonical k-mer seen at least ``min_count`` times across all of ``codes`` covers the
    base. k-mers with a non-ACGT base are not counted."""
    if not 1 <= k <= 32:
        raise ValueError(f"k must lie in 1..32, got {k}")
    if min_count < 2:
        raise ValueError(f"min_count must be at least 2, got {min_count}")
    ids, bads = [], []
    for x in codes:
        x = np.asarray(x)
        if len(x) >= k:
            i, b = _canonical_kmers(x, k)
        else:
            i, b = np.zeros(0, dtype=np.uint64), np.zeros(0, dtype=bool)
        ids.append(i)
        bads.append(b)
    every = np.concatenate(ids)[~np.concatenate(bads)] if ids else np.zeros(0, np.uint64)
    uniq, counts = np.unique(every, return_counts=True)
    frequent = uniq[counts >= min_count]
    out = []
    for x, i, b in zip(codes, ids, bads):
        hit = np.isin(i, frequent) & ~b
        cover = np.zeros(len(x) + 1, dtype=np.int32)
        at = np.flatnonzero(hit)
        np.add.at(cover, at, 1)
        np.add.at(cover, at + k, -1)
        out.append(np.cumsum(cover)[:len(x)] > 0)
    return out
