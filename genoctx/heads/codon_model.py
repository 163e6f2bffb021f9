"""Self-trained coding statistics: GC frame bias, a three-periodic fifth-order Markov model, a
codon-pair score, and the length factor of open frames.

The first three give a score per codon of each frame of one strand, so that the coding score of
any open reading frame segment is a difference of two cumulative sums (O(1) per candidate gene).

* GC frame bias (Prodigal's seed): in a 120-bp window, the codon position with the most G+C
  marks the reading frame of real genes; the weight of each relative position is learned from
  the genome's long ORFs. It only seeds the first training set.
* Periodic Markov model: log P(base | 5 previous bases, codon position) under coding minus the
  same under a homogeneous background fitted on both strands of the whole genome. Every base of a
  codon is scored in its own codon position, so each hexamer at every phase carries evidence.
* Codon-pair score (Prodigal's dicodon score): log P(codon pair in genes) / P(hexamer anywhere),
  one term per codon, for the pair that codon begins.
* Length factor: how unlikely an open frame this long is by chance, given the stop-codon
  frequency of the genome's base composition.

Legend: L = strand length, C = codons in a frame, Q = codon position (3), K = 4**6 hexamers.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

ORDER = 5
NUM_KMERS = 4 ** (ORDER + 1)
GC_WINDOW = 120


def kmer_index(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Id of the hexamer ending at each position and whether it is valid (all ACGT), shape [L]."""
    n = len(x)
    idx = np.zeros(n, dtype=np.int32)
    bad = np.zeros(n, dtype=bool)
    for t in range(ORDER + 1):
        shift = ORDER - t  # base x[i - shift] holds digit t of the hexamer ending at i
        if shift >= n:
            continue
        src = x[: n - shift]
        idx[shift:] = idx[shift:] * 4 + np.minimum(src, 3)
        bad[shift:] |= src >= 4
    bad[:ORDER] = True
    return idx, ~bad


def codon_sum(base_scores_QL: np.ndarray, frame: int) -> np.ndarray:
    """Per-codon sum of per-base scores of ``frame``: codon i takes base q of row q, shape [C]."""
    n = max((base_scores_QL.shape[1] - frame) // 3, 0)  # a record shorter than the frame: none
    out = np.zeros(n, dtype=np.float64)
    for q in range(3):
        out += base_scores_QL[q, frame + q: frame + q + 3 * n: 3][:n]
    return out


def gc_frame_position(x: np.ndarray) -> np.ndarray:
    """For each base, the G+C count of the same-phase bases within ±60 bp (Prodigal's plot), [L]."""
    gc = ((x == 1) | (x == 2)).astype(np.int32)
    tot = np.zeros(len(x), dtype=np.int32)
    half = GC_WINDOW // 2 // 3  # codons each side
    for r in range(3):
        g = gc[r::3]
        m = len(g)
        c = np.zeros(m + 1, dtype=np.int64)
        np.cumsum(g, out=c[1:])
        # codon i counts codons [i - half, i + half] clipped to the strand: c[hi] - c[lo]
        hi = np.full(m, c[m])
        k = max(m - half - 1, 0)
        hi[:k] = c[half + 1: half + 1 + k]
        lo = np.zeros(m, dtype=np.int64)
        lo[half:] = c[:max(m - half, 0)]
        tot[r::3] = hi - lo
    return tot


def gc_best_position(x: np.ndarray, frame: int, tot: np.ndarray | None = None) -> np.ndarray:
    """Codon position (0..2) with the most same-phase G+C around each codon of ``frame``, [C].

    ``tot`` is :func:`gc_frame_position` of ``x`` when the caller already has it (it is the
    same for the three frames)."""
    if tot is None:
        tot = gc_frame_position(x)
    n = (len(x) - frame) // 3
    t_C3 = tot[frame: frame + 3 * n].reshape(n, 3)
    # argmax over three columns (the first maximum), without numpy's slow short-axis argmax
    best = (t_C3[:, 1] > t_C3[:, 0]).astype(np.int8)
    top = np.maximum(t_C3[:, 0], t_C3[:, 1])
    best[t_C3[:, 2] > top] = 2
    return best


def _conditional(counts_K: np.ndarray, alpha: float, order: int = ORDER) -> np.ndarray:
    """log P(last base | previous bases), smoothed by backing off to shorter contexts, [K].

    Contexts longer than ``order`` bases are ignored (their table rows repeat the ``order`` one).
    """
    p = None
    for k in range(order + 1):
        # counts of (k-base context, base): sum out the leading ORDER - k bases of the hexamer
        c = counts_K.reshape(4 ** (ORDER - k), 4 ** k * 4).sum(axis=0).reshape(4 ** k, 4)
        c = c.astype(np.float64)
        if p is None:
            p = (c + 1.0) / (c.sum(axis=1, keepdims=True) + 4.0)
        else:
            prior = np.tile(p, (4, 1))  # context a·s backs off to its suffix s
            p = (c + alpha * prior) / (c.sum(axis=1, keepdims=True) + alpha)
    return np.log(np.tile(p, (4 ** (ORDER - order), 1))).reshape(-1)


@dataclass
class CodingModel:
    """Per-codon-position log-likelihood ratio of each hexamer, coding vs background: [Q, K]."""

    llr_QK: np.ndarray

    def base_scores(self, kidx: np.ndarray, valid: np.ndarray) -> np.ndarray:
        """Score of every base under each codon position, [Q, L] (0 where the hexamer has N)."""
        s_QL = np.take(self.llr_QK, kidx, axis=1)  # a quarter the time of llr_QK[:, kidx]
        s_QL[:, np.flatnonzero(~valid)] = 0.0
        return s_QL

    def codon_scores(self, kidx_masked: np.ndarray, frame: int) -> np.ndarray:
        """``codon_sum(self.base_scores(kidx, valid), frame)`` without the [Q, L] scores: codon
        i of ``frame`` sums its bases' scores, base q under codon position q, [C] (float64).
        ``kidx_masked`` is :func:`masked_kmers` of the strand."""
        n = max((len(kidx_masked) - frame) // 3, 0)
        table = np.concatenate([self.llr_QK, np.zeros((3, 1), self.llr_QK.dtype)], axis=1)
        out = np.zeros(n, dtype=np.float64)
        for q in range(3):
            out += table[q].take(kidx_masked[frame + q: frame + q + 3 * n: 3][:n])
        return out


def masked_kmers(kidx: np.ndarray, valid: np.ndarray) -> np.ndarray:
    """Hexamer ids with ``NUM_KMERS`` (a zero-score entry) where the hexamer holds a non-ACGT
    base: what :meth:`CodingModel.codon_scores` looks up."""
    return np.where(valid, kidx, NUM_KMERS).astype(np.int32)


def background_counts(kidx: np.ndarray, valid: np.ndarray) -> np.ndarray:
    """Hexamer counts of one strand, [K]."""
    return np.bincount(kidx[valid], minlength=NUM_KMERS)


def coding_counts(kidx: np.ndarray, valid: np.ndarray, starts: np.ndarray,
                  ends: np.ndarray) -> np.ndarray:
    """Hexamer counts by codon position of the last base over the genes [starts, ends), [Q, K].

    Genes are strand intervals whose start is codon-aligned; the stop codon is left out.
    """
    phase = np.full(len(kidx), -1, dtype=np.int8)
    for s, e in zip(starts.tolist(), ends.tolist()):
        seg = phase[s:e - 3]
        seg[:] = np.arange(len(seg)) % 3
    counts = np.zeros((3, NUM_KMERS), dtype=np.int64)
    for q in range(3):
        counts[q] = np.bincount(kidx[(phase == q) & valid], minlength=NUM_KMERS)
    return counts


def model_order(num_coding_bases: int, min_per_param: float = 16.0) -> int:
    """Longest context the training genes can support: about ``min_per_param`` bases per
    parameter (3 codon positions × 4**(order + 1)), capped at ORDER. Small genomes and plasmids
    get low orders, which keeps a few training genes from being memorised."""
    order = ORDER
    while order > 0 and 3 * 4 ** (order + 1) * min_per_param > num_coding_bases:
        order -= 1
    return order


def fit_coding_model(coding_QK: np.ndarray, background_K: np.ndarray,
                     alpha: float = 16.0, clip: float = 4.0) -> CodingModel:
    """Log-likelihood ratios from coding counts per codon position and background counts."""
    order = model_order(int(coding_QK.sum()))
    bg = _conditional(background_K, alpha, order)
    llr = np.stack([_conditional(coding_QK[q], alpha, order) - bg for q in range(3)])
    return CodingModel(np.clip(llr, -clip, clip).astype(np.float32))


def stop_probability(gc: float, table: int = 11) -> float:
    """Chance that a random codon is a stop of translation ``table`` (its stops:
    :data:`genoctx.heads.orfs.TABLE_STOPS`) at genome G+C fraction ``gc``."""
    from genoctx.heads.orfs import TABLE_STOPS

    base = {"A": (1.0 - gc) / 2.0, "T": (1.0 - gc) / 2.0, "C": gc / 2.0, "G": gc / 2.0}
    return sum(base[a] * base[b] * base[c] for a, b, c in TABLE_STOPS[table])


def length_factor(num_codons: np.ndarray, gc: float, ref: float = 80.0,
                  linear_from: float = 1000.0, table: int = 11) -> np.ndarray:
    """Log-odds that an open frame this long is not chance, relative to one of ``ref`` codons.

    A random frame stays open for n codons with probability q**n (q = 1 - stop probability), so
    log((1 - q**n) / q**n) measures how surprising the length is (Prodigal's length factor).
    Beyond ``linear_from`` codons it grows linearly, so very long genes do not dominate.
    """
    q = 1.0 - max(stop_probability(gc, table), 1e-9)  # all-G+C input: no stop codon at all

    def lo(n):
        return np.log1p(-q ** n) - n * np.log(q)

    n = np.asarray(num_codons, dtype=np.float64)
    top = lo(linear_from) - lo(ref)
    out = lo(np.minimum(n, linear_from)) - lo(ref)
    return np.where(n > linear_from, top * (n - ref) / (linear_from - ref), out)


def dicodon_counts(kidx: np.ndarray, valid: np.ndarray, starts: np.ndarray,
                   ends: np.ndarray) -> np.ndarray:
    """Counts of codon-aligned hexamers (codon pairs) from each start codon to its stop codon:
    the pair that starts at every codon of the genes [starts, ends), [K]."""
    pos = [np.arange(s + ORDER, e, 3) for s, e in zip(starts.tolist(), ends.tolist())]
    pos = np.concatenate(pos) if pos else np.zeros(0, dtype=np.int64)
    pos = pos[pos < len(kidx)]
    pos = pos[valid[pos]]
    return np.bincount(kidx[pos], minlength=NUM_KMERS)


def fit_dicodon(counts_K: np.ndarray, background_K: np.ndarray, pseudo: float = 1000.0,
                clip: float = 5.0) -> np.ndarray:
    """Log-likelihood ratio of each codon pair in genes against any hexamer of the genome
    (Prodigal's dicodon score), smoothed towards 0 by ``pseudo`` counts spread as the
    background, [K]."""
    q = (background_K + 0.5) / (background_K.sum() + 0.5 * NUM_KMERS)
    p = (counts_K + pseudo * q) / (counts_K.sum() + pseudo)
    return np.clip(np.log(p / q), -clip, clip)


def dicodon_codon_scores(llr_K: np.ndarray, kidx: np.ndarray, valid: np.ndarray,
                         frame: int) -> np.ndarray:
    """Score of each codon of ``frame``: the LLR of the codon pair it begins, [C]."""
    n = max((len(kidx) - frame) // 3, 0)
    # the last base of the pair starting at codon c is frame + 3c + ORDER; pairs running past
    # the end, or holding a non-ACGT base, score 0
    out = np.zeros(n, dtype=np.result_type(llr_K.dtype, np.float64))
    last = slice(frame + ORDER, None, 3)
    scores = llr_K[kidx[last][:n]]
    scores[~valid[last][:n]] = 0.0
    out[:len(scores)] = scores
    return out
