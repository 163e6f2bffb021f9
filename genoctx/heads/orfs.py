"""Open reading frames and candidate genes on one strand (translation table 11 or 4).

Every routine here sees a single strand: the minus strand is handled as the plus strand of the
reverse complement, and :func:`to_forward` maps a strand interval back to forward coordinates.
Coordinates are 0-based half-open. A candidate gene runs from its start codon (or, when the
contig edge is open, from the first whole codon of the frame) through its stop codon (or to the
last whole codon when the frame runs off the 3' edge).

Legend: L = sequence length, N = number of candidate genes, C = codons in one frame.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

BASE_CODE = np.full(256, 4, dtype=np.uint8)
for _i, _b in enumerate(b"ACGT"):
    BASE_CODE[_b] = _i
    BASE_CODE[ord(chr(_b).lower())] = _i
BASE_CODE[ord("U")] = BASE_CODE[ord("u")] = 3
_COMPLEMENT = np.array([3, 2, 1, 0, 4], dtype=np.uint8)
INVALID_CODON = 64
# A run of at least this many bases that are not A/C/G/T (N, IUPAC codes, X-masking) is a gap,
# which no gene spans: the bases on its two sides need not be contiguous (an assembly's
# scaffold gap). Shorter runs and single ambiguity codes are read through, as Prodigal reads
# them: their codons are neither starts nor stops (and translate as X). Prodigal's -m masks
# runs of 50 N the same way.
GAP_BASES = 50


def _codon(s: str) -> int:
    return int(BASE_CODE[ord(s[0])]) * 16 + int(BASE_CODE[ord(s[1])]) * 4 + int(BASE_CODE[ord(s[2])])


# stop codons of the translation tables the decoder knows: 11 (bacteria, archaea, plastids) and
# 4 (Mycoplasma, Spiroplasma: TGA codes for tryptophan)
TABLE_STOPS = {11: ("TAA", "TAG", "TGA"), 4: ("TAA", "TAG")}
_STOP_IDS = {t: np.array([_codon(c) for c in v]) for t, v in TABLE_STOPS.items()}
START_CODONS = ("ATG", "GTG", "TTG")
START_TYPE = np.full(INVALID_CODON + 1, -1, dtype=np.int8)
for _t, _c in enumerate(START_CODONS):
    START_TYPE[_codon(_c)] = _t
EDGE_START = len(START_CODONS)  # start type of a gene running in from the 5' contig edge


def encode(seq: bytes | str) -> np.ndarray:
    """ACGT (any case, U as T) → uint8 codes 0..3; anything else (N, IUPAC) → 4."""
    if isinstance(seq, str):
        seq = seq.encode("ascii", errors="replace")
    return BASE_CODE[np.frombuffer(seq, dtype=np.uint8)]


def revcomp_codes(x: np.ndarray) -> np.ndarray:
    """Reverse complement of an encoded sequence (4 stays 4)."""
    return _COMPLEMENT[x[::-1]]


def codon_codes(x: np.ndarray, frame: int) -> np.ndarray:
    """Codon ids 0..63 of ``frame`` (``INVALID_CODON`` where a base is not ACGT), shape [C]."""
    n = max((len(x) - frame) // 3, 0)
    b0, b1, b2 = (x[frame + q: frame + 3 * n: 3] for q in range(3))
    ids = b0.astype(np.int16) * 16
    ids += b1.astype(np.int16) * 4
    ids += b2
    # (rather than an any() over a short axis, which numpy runs slowly)
    ids[np.maximum(np.maximum(b0, b1), b2) >= 4] = INVALID_CODON
    return ids


def gap_mask(x: np.ndarray, min_run: int = GAP_BASES) -> np.ndarray:
    """Bases of ``x`` (encoded) inside a run of at least ``min_run`` unknown bases (code 4)."""
    unknown = np.concatenate([[False], x >= 4, [False]])
    edges = np.flatnonzero(unknown[1:] != unknown[:-1])  # run starts and ends, alternating
    starts, ends = edges[0::2], edges[1::2]
    long = (ends - starts) >= min_run
    mask = np.zeros(len(x), dtype=bool)
    for a, b in zip(starts[long].tolist(), ends[long].tolist()):  # runs are few: one slice each
        mask[a:b] = True
    return mask


def to_forward(start: np.ndarray, end: np.ndarray, length: int, strand: int):
    """Strand interval(s) [start, end) → forward-strand interval(s)."""
    return (start, end) if strand == 1 else (length - end, length - start)


@dataclass
class Candidates:
    """Candidate genes of one strand, one entry per (start, stop) pair; arrays of shape [N].

    ``frame`` is the codon frame (start % 3), ``j``/``k`` the codon indices of the start and the
    stop within that frame (``k`` = number of codons when the frame runs off the 3' edge),
    ``start``/``end`` strand coordinates, ``stype`` 0..2 for ATG/GTG/TTG or ``EDGE_START``,
    ``orf`` a key shared by all candidates ending at the same stop (its ``end``).
    """

    frame: np.ndarray
    j: np.ndarray
    k: np.ndarray
    start: np.ndarray
    end: np.ndarray
    stype: np.ndarray
    partial5: np.ndarray
    partial3: np.ndarray

    @property
    def orf(self) -> np.ndarray:
        return self.end

    def __len__(self) -> int:
        return len(self.start)

    def take(self, idx) -> Candidates:
        return Candidates(*(getattr(self, f)[idx] for f in self.__dataclass_fields__))


def find_candidates(x: np.ndarray, *, closed: bool | tuple[bool, bool] = False,
                    min_len: int = 90, min_edge_len: int = 60, table: int = 11) -> Candidates:
    """All candidate genes of the strand ``x`` (encoded), sorted by (orf, start).

    Args:
        x: encoded strand sequence, shape [L].
        closed: when True no gene may run off either end of ``x``; a pair ``(start, end)``
            closes only the ends marked True (the others are cuts: a region's edges inside a
            longer sequence, where genes run on).
        min_len: minimum length in bp (stop codon included) of a complete gene.
        min_edge_len: minimum length of a gene that runs off a contig edge.
        table: translation table (:data:`TABLE_STOPS`): which codons stop a gene.
    """
    ends = (bool(closed[0]), bool(closed[1])) if isinstance(closed, tuple) else (bool(closed),) * 2
    return find_candidates_many([x], [ends], min_len=min_len, min_edge_len=min_edge_len,
                                table=table)[0]


# Strands scanned end to end in one pass hold at most this many bases together (a longer strand
# goes alone), so that a pass over a draft's many contigs needs no more memory than one over a
# bacterial chromosome's strand.
GROUP_BASES = 1 << 20


def strand_groups(lengths: list[int], limit: int | None = None) -> list[slice]:
    """Consecutive runs of strands with at most ``limit`` (default :data:`GROUP_BASES`) bases
    together; a longer strand goes alone."""
    limit = GROUP_BASES if limit is None else limit
    out, start, total = [], 0, 0
    for i, n in enumerate(lengths):
        if i > start and total + n > limit:
            out.append(slice(start, i))
            start, total = i, 0
        total += n
    if start < len(lengths):
        out.append(slice(start, len(lengths)))
    return out


def find_candidates_many(xs: list[np.ndarray], closed: list[tuple[bool, bool]], *,
                         min_len: int = 90, min_edge_len: int = 60,
                         table: int = 11) -> list[Candidates]:
    """:func:`find_candidates` of many strands, a few passes for all (the same candidates, in
    the same order): the strands of each :func:`strand_groups` run are scanned end to end,
    each from a multiple of 3 so that frames and codon indices carry over, with N between
    them; no ORF runs past its own strand's end.

    Args:
        xs: encoded strands.
        closed: per strand, (5' end, 3' end) closed, as :func:`find_candidates` takes it.
        min_len, min_edge_len, table: as :func:`find_candidates`.
    """
    if table not in TABLE_STOPS:
        raise ValueError(f"translation table {table} is not supported (known: "
                         f"{', '.join(map(str, TABLE_STOPS))})")
    return [c for g in strand_groups([len(x) for x in xs])
            for c in _find_candidates_joined(xs[g], closed[g], min_len, min_edge_len, table)]


def _find_candidates_joined(xs: list[np.ndarray], closed: list[tuple[bool, bool]], min_len: int,
                            min_edge_len: int, table: int) -> list[Candidates]:
    """:func:`find_candidates_many` of one run of strands, in one pass."""
    lengths = np.array([len(x) for x in xs], dtype=np.int64)
    origin = np.concatenate([[0], np.cumsum((lengths + 5) // 3 * 3)])  # ≥ 3 N between strands
    joined = np.full(int(origin[-1]), 4, dtype=np.uint8)
    gaps = np.zeros(len(joined), dtype=bool)  # each strand's own (the N between them is none)
    for x, o in zip(xs, origin[:-1].tolist()):
        joined[o:o + len(x)] = x
        gaps[o:o + len(x)] = gap_mask(x)
    closed5 = np.array([bool(c[0]) for c in closed])
    closed3 = np.array([bool(c[1]) for c in closed])
    first = origin[:-1] // 3  # each strand's first codon in the joined frames
    # most genomes have no gap: then no codon is in one and nothing below needs the counts
    in_gap = np.concatenate([[0], np.cumsum(gaps)]) if gaps.any() else None
    cols = []
    for f in range(3):
        codons = codon_codes(joined, f)
        count = np.maximum((lengths - f) // 3, 0)  # each strand's whole codons in this frame
        stop_end = first + count                   # one past each strand's last codon
        stops = np.flatnonzero(np.isin(codons, _STOP_IDS[table]))
        last_stop = max(len(stops) - 1, 0)
        stype_all = START_TYPE[codons]
        j = np.flatnonzero(stype_all >= 0)
        sid = np.searchsorted(first, j, side="right") - 1
        pos = np.searchsorted(stops, j)
        nxt = stops[np.minimum(pos, last_stop)] if len(stops) else np.zeros(len(j), np.int64)
        open3 = (pos == len(stops)) | (nxt >= stop_end[sid])
        k = np.where(open3, stop_end[sid], nxt)
        stype = stype_all[j]
        partial5 = np.zeros(len(j), dtype=bool)
        # the first ORF of each frame of an open 5' end runs in from the edge (unless its first
        # codon is a start or a stop)
        pos0 = np.searchsorted(stops, first)
        s0 = stops[np.minimum(pos0, last_stop)] if len(stops) else np.zeros(len(first), np.int64)
        no_stop = (pos0 == len(stops)) | (s0 >= stop_end)
        c0 = codons[np.minimum(first, len(codons) - 1)] if len(codons) else np.zeros(len(first), int)
        edge = (count > 0) & ~closed5 & (no_stop | (s0 > first)) & (START_TYPE[c0] < 0)
        e = np.flatnonzero(edge)
        j = np.concatenate([first[e], j])
        k = np.concatenate([np.where(no_stop[e], stop_end[e], s0[e]), k])
        open3 = np.concatenate([no_stop[e], open3])
        stype = np.concatenate([np.full(len(e), EDGE_START), stype]).astype(np.int8)
        partial5 = np.concatenate([np.ones(len(e), bool), partial5])
        sid = np.concatenate([e, sid])
        length = 3 * (k - j) + np.where(open3, 0, 3)
        keep = np.where(partial5 | open3, length >= min_edge_len, length >= min_len)
        if in_gap is not None:
            lo = f + 3 * np.arange(len(codons))
            bad = np.concatenate([[0], np.cumsum(in_gap[lo + 3] > in_gap[lo])])
            keep &= bad[k] == bad[j]  # no gene spans a gap (a long run of unknown bases)
        keep &= ~(open3 & closed3[sid])
        j, k, stype, partial5, open3, sid = (a[keep] for a in (j, k, stype, partial5, open3, sid))
        jl, kl = j - first[sid], k - first[sid]
        cols.append((sid, np.full(len(j), f, np.int8), jl, kl, f + 3 * jl,
                     f + 3 * kl + np.where(open3, 0, 3), stype, partial5, open3))
    sid, *fields = (np.concatenate(c) for c in zip(*cols))
    order = np.lexsort((fields[3], fields[4], sid))  # by strand, then (end, start)
    sid = sid[order]
    fields = [a[order] for a in fields]
    cut = np.searchsorted(sid, np.arange(len(xs) + 1))
    return [Candidates(*(a[cut[i]:cut[i + 1]] for a in fields)) for i in range(len(xs))]
