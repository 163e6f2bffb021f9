"""Gene-structure decoder: per-base class probabilities (optional) + sequence → bacterial genes.

An ORF-constrained dynamic programme in the manner of Prodigal. For every genome:

1. enumerate candidate genes (start codon ATG/GTG/TTG or an open contig edge → in-frame stop)
   on both strands (:mod:`genoctx.heads.orfs`);
2. self-train: a GC-frame-bias score seeds a first gene set; a three-periodic Markov coding model
   (:mod:`genoctx.heads.codon_model`) and a start model (codon type, Shine-Dalgarno class,
   composition; :mod:`genoctx.heads.start_model`) are fitted on it, the genome is decoded again,
   and the models are refitted on the new genes;
3. score each candidate with a logistic model over its features (coding log-likelihood ratio,
   plus the neural head's in-frame CDS log-odds when ``probs`` are given, start score, length,
   edge flags) whose weights were fitted on the train genomes (:mod:`genoctx.heads._fitted`);
4. pick the set of genes with the largest total log-odds under overlap rules (same strand ≤ 60 bp,
   convergent ≤ 200 bp, divergent none) by a dynamic programme over candidates sorted by end;
5. report each gene with a calibrated probability.

Coordinates are 0-based half-open on the forward strand; a gene spans its start codon through its
stop codon. Legend: L = contig length, N = candidates, F = features, C = classes (17).
"""

from __future__ import annotations

import bisect
import math
from dataclasses import dataclass, field

import numpy as np

from genoctx.errors import InputError
from genoctx.heads import _fitted
from genoctx.heads.classes import CDS_PLUS, CLASSES, NUM_CLASSES, RC_PERMUTATION
from genoctx.heads.codon_model import (
    CodingModel,
    background_counts,
    coding_counts,
    codon_sum,
    fit_coding_model,
    gc_best_position,
    kmer_index,
)
from genoctx.heads.orfs import (
    Candidates,
    encode,
    find_candidates,
    revcomp_codes,
    to_forward,
)
from genoctx.heads.start_model import (
    StartCounts,
    fit_start_model,
    pwm_bases,
    rbs_classes,
    sd_match_length,
)

# Gene-level features of a candidate, in the order of DecoderParams.gene_weights.
FEATURES = ("coding", "coding_per_codon", "start", "log_length", "partial", "neural_per_codon")
# Start-choice parts, in the order of DecoderParams.start_weights.
START_PARTS = ("coding", "type", "rbs", "composition", "neural")


@dataclass(frozen=True)
class GeneCall:
    """One predicted gene: whole CDS including the stop codon, 0-based half-open."""

    contig: str
    start: int
    end: int
    strand: int
    score: float
    start_codon: str
    partial: tuple[bool, bool] = (False, False)  # (5' end, 3' end) run off the contig
    attrs: dict = field(default_factory=dict, compare=False)

    @property
    def stop(self) -> int:
        """0-based position of the stop codon's last base (as :class:`genoctx.io.annotation.Gene`).

        For a 3'-partial call this is the last base of the call, not a stop codon.
        """
        return self.end - 1 if self.strand == 1 else self.start


@dataclass(frozen=True, kw_only=True)
class DecoderParams:
    """Decoder settings; the weights default to the values fitted on the train genomes."""

    min_len: int = 90                 # bp incl. stop, complete genes
    min_edge_len: int = 60            # bp, genes running off an open contig edge
    max_same_overlap: int = 60        # bp, consecutive genes on one strand
    max_tail_overlap: int = 200       # bp, convergent genes (3' ends overlap)
    max_head_overlap: int = 0         # bp, divergent genes (5' ends overlap)
    train_rounds: int = 2             # Markov/start refits after the GC-frame seed
    seed_min_len: int = 300           # bp, ORFs used to learn the GC frame bias
    markov_alpha: float = 16.0
    llr_clip: float = 4.0
    start_prior_strength: float = 200.0
    starts_per_orf: int = 4           # best starts of each ORF that enter the DP
    neural_clip: float = 6.0
    start_weights: tuple[float, ...] = _fitted.START_WEIGHTS      # coding, type, rbs, pwm
    gene_weights: tuple[float, ...] = _fitted.GENE_WEIGHTS        # FEATURES..., bias
    calibration: tuple[float, float] = _fitted.CALIBRATION        # a, b: p = sigmoid(a·x + b)
    start_prior: dict = field(default_factory=lambda: dict(_fitted.START_PRIOR))


# --------------------------------------------------------------------------- one strand of a contig

@dataclass
class _Strand:
    """One strand of one contig with its candidates and cached per-base tables."""

    contig: str
    strand: int
    x: np.ndarray
    cand: Candidates
    kidx: np.ndarray
    valid: np.ndarray
    sdlen: np.ndarray
    bases_NP: np.ndarray
    neural_codon: list[np.ndarray] | None = None  # per frame, [C]
    cum: list[np.ndarray] = field(default_factory=list)  # per frame cumulative codon score

    @property
    def length(self) -> int:
        return len(self.x)

    def coding(self) -> np.ndarray:
        """Coding score of each candidate from the cumulative codon scores, [N]."""
        out = np.empty(len(self.cand))
        for f in range(3):
            m = self.cand.frame == f
            c = self.cum[f]
            out[m] = c[self.cand.k[m]] - c[self.cand.j[m]]
        return out

    def set_codon_scores(self, per_frame: list[np.ndarray]) -> None:
        self.cum = [np.concatenate([[0.0], np.cumsum(s)]) for s in per_frame]


def _neural_codon_scores(probs_LC: np.ndarray, clip: float) -> list[np.ndarray]:
    """Per-codon in-frame CDS log-odds of each frame of one strand.

    ``probs_LC`` is already in the strand's own orientation (reverse-complemented and
    class-permuted for the minus strand), so its CDS+0..2 columns are the in-frame classes.
    """
    p = np.clip(probs_LC[:, list(CDS_PLUS)].astype(np.float64), 1e-7, 1 - 1e-7)
    lo_QL = np.clip(np.log(p) - np.log1p(-p), -clip, clip).T
    return [codon_sum(lo_QL, f) for f in range(3)]


def _make_strand(contig: str, x: np.ndarray, strand: int, probs_LC: np.ndarray | None,
                 params: DecoderParams, closed: bool) -> _Strand:
    cand = find_candidates(x, closed=closed, min_len=params.min_len,
                           min_edge_len=params.min_edge_len)
    kidx, valid = kmer_index(x)
    s = _Strand(contig, strand, x, cand, kidx, valid, sd_match_length(x),
                pwm_bases(x, cand.start))
    if probs_LC is not None:
        s.neural_codon = _neural_codon_scores(probs_LC, params.neural_clip)
    return s


# --------------------------------------------------------------------------- dynamic programme

def select_genes(left: np.ndarray, right: np.ndarray, strand: np.ndarray, score: np.ndarray,
                 params: DecoderParams) -> np.ndarray:
    """Indices of the highest-scoring set of genes that respects the overlap rules.

    Genes are forward intervals [left, right). In a chosen set ordered by position, each gene
    starts and ends after the one before it, overlapping it by at most ``max_same_overlap`` on
    the same strand, ``max_tail_overlap`` when a plus gene meets a minus gene (3' ends facing)
    and ``max_head_overlap`` when a minus gene meets a plus gene (5' ends facing). The rules are
    mirror-symmetric, so decoding the reverse complement gives the mirrored set. Only genes of
    positive score can help, so others are skipped.
    """
    idx = np.flatnonzero(score > 0)
    order = idx[np.lexsort((strand[idx], left[idx], right[idx]))]
    ends = {1: [], -1: []}
    starts = {1: [], -1: []}
    vals = {1: [], -1: []}
    best = {1: [], -1: []}  # prefix maxima of (dp value, index) over genes by end
    ids = {1: [], -1: []}
    dp = np.zeros(len(score))
    prev = np.full(len(score), -1, dtype=np.int64)
    ovl = {(1, 1): params.max_same_overlap, (-1, -1): params.max_same_overlap,
           (1, -1): params.max_tail_overlap, (-1, 1): params.max_head_overlap}
    for i in order.tolist():
        lo, hi, st = int(left[i]), int(right[i]), int(strand[i])
        b_val, b_arg = 0.0, -1
        for ps in (1, -1):
            e = ends[ps]
            c = bisect.bisect_right(e, lo)  # disjoint predecessors: a prefix maximum
            if c and best[ps][c - 1][0] > b_val:
                b_val, b_arg = best[ps][c - 1]
            # overlapping predecessors: must end before this gene ends and start before it
            reach = min(lo + ovl[(ps, st)], hi - 1)
            for t in range(c, bisect.bisect_right(e, reach)):
                if starts[ps][t] < lo and vals[ps][t] > b_val:
                    b_val, b_arg = vals[ps][t], ids[ps][t]
        dp[i] = score[i] + b_val
        prev[i] = b_arg
        ends[st].append(hi)
        starts[st].append(lo)
        vals[st].append(dp[i])
        ids[st].append(i)
        top = best[st][-1] if best[st] else (0.0, -1)
        best[st].append((dp[i], i) if dp[i] > top[0] else top)
    tails = [b[-1] for b in best.values() if b]
    if not tails:
        return np.zeros(0, dtype=np.int64)
    i = max(tails)[1]
    chosen = []
    while i >= 0:
        chosen.append(i)
        i = prev[i]
    return np.array(chosen[::-1], dtype=np.int64)


# --------------------------------------------------------------------------- genome-level training

def _best_per_orf(cand: Candidates, key: np.ndarray, k: int) -> np.ndarray:
    """Indices of the ``k`` highest-``key`` candidates of each ORF (candidates sorted by ORF)."""
    order = np.lexsort((-key, cand.orf))
    orf_sorted = cand.orf[order]
    first = np.r_[True, orf_sorted[1:] != orf_sorted[:-1]]
    group_start = np.maximum.accumulate(np.where(first, np.arange(len(order)), 0))
    rank = np.arange(len(order)) - group_start
    return np.sort(order[rank < k])


class GenomeDecoder:
    """Self-trained decoding of all contigs of one genome (statistics shared across contigs).

    ``features()`` and ``truth`` matching are used by :mod:`genoctx.heads.decoder_fit`; users call
    :func:`call_genes` / :func:`call_genes_multi`.
    """

    def __init__(self, records: list[tuple[str, bytes]], probs: dict | None,
                 params: DecoderParams, closed: bool = False):
        self.params = params
        self.strands: list[_Strand] = []
        for contig, seq in records:
            x = encode(seq)
            p = _check_probs(probs.get(contig) if probs else None, len(x), contig)
            self.strands.append(_make_strand(contig, x, 1, p, params, closed))
            p_rc = None if p is None else p[::-1][:, list(RC_PERMUTATION)]
            self.strands.append(_make_strand(contig, revcomp_codes(x), -1, p_rc, params, closed))
        self.background = sum(background_counts(s.kidx, s.valid) for s in self.strands)
        self.start_model = fit_start_model(None, self._prior(), params.start_prior_strength)
        self.coding_model: CodingModel | None = None

    def _prior(self) -> StartCounts:
        pr = self.params.start_prior
        return StartCounts(*(np.asarray(pr[f], dtype=np.float64) for f in StartCounts.__dataclass_fields__))

    # -- seed -----------------------------------------------------------------------------
    def seed(self) -> list[np.ndarray]:
        """First training genes from the GC frame bias: chosen candidate indices per strand."""
        gcpos = [[gc_best_position(s.x, f) for f in range(3)] for s in self.strands]
        counts = np.zeros(3)
        longest = []
        for s, gp in zip(self.strands, gcpos):
            li = _best_per_orf(s.cand, -s.cand.start.astype(np.float64), 1)
            longest.append(li)
            c = s.cand.take(li)
            keep = (c.end - c.start) >= self.params.seed_min_len
            for f in range(3):
                m = keep & (c.frame == f)
                cum = np.vstack([np.zeros((1, 3)), np.cumsum(np.eye(3)[gp[f]], axis=0)])
                counts += (cum[c.k[m]] - cum[c.j[m]]).sum(axis=0)
        w = np.log((counts + 1.0) / (counts.sum() / 3.0 + 1.0))
        for s, gp in zip(self.strands, gcpos):
            s.set_codon_scores([w[g] for g in gp])
        per_strand = []
        for s, li in zip(self.strands, longest):
            li = li[(s.cand.end[li] - s.cand.start[li]) >= self.params.seed_min_len]
            per_strand.append((li, s.coding()[li]))
        return self._decode(per_strand)

    # -- training rounds ------------------------------------------------------------------
    def fit_coding(self, chosen: list[np.ndarray]) -> None:
        """Refit the Markov coding model on the chosen genes and rescore every codon."""
        counts = sum(coding_counts(s.kidx, s.valid, s.cand.start[c], s.cand.end[c])
                     for s, c in zip(self.strands, chosen))
        self.coding_model = fit_coding_model(counts, self.background, self.params.markov_alpha,
                                             self.params.llr_clip)
        for s in self.strands:
            b_QL = self.coding_model.base_scores(s.kidx, s.valid)
            s.set_codon_scores([codon_sum(b_QL, f) for f in range(3)])

    def fit_starts(self, chosen: list[np.ndarray]) -> None:
        """Refit the start model: chosen starts against all starts of the chosen ORFs."""
        total = None
        for s, c in zip(self.strands, chosen):
            in_orf = np.isin(s.cand.orf, s.cand.orf[c])
            is_pos = np.zeros(len(s.cand), dtype=bool)
            is_pos[c] = True
            rbs = rbs_classes(s.sdlen, s.cand.start, self.start_model.rbs_llr)
            sc = StartCounts.count(s.cand.stype[in_orf], rbs[in_orf], s.bases_NP[in_orf],
                                   is_pos[in_orf])
            total = sc if total is None else total + sc
        self.start_model = fit_start_model(total, self._prior(), self.params.start_prior_strength)

    def features(self, si: int) -> tuple[np.ndarray, np.ndarray]:
        """Gene features [N, len(FEATURES)] and start-choice parts [N, len(START_PARTS)]."""
        s = self.strands[si]
        cod = s.coding()
        ncod = np.maximum((s.cand.end - s.cand.start) // 3, 1)
        rbs = rbs_classes(s.sdlen, s.cand.start, self.start_model.rbs_llr)
        st_N3 = self.start_model.features(s.cand.stype, rbs, s.bases_NP)
        neural = np.zeros(len(s.cand))
        if s.neural_codon is not None:
            for f in range(3):
                m = s.cand.frame == f
                c = np.concatenate([[0.0], np.cumsum(s.neural_codon[f])])
                neural[m] = c[s.cand.k[m]] - c[s.cand.j[m]]
        parts = np.column_stack([cod, st_N3, neural])
        start = st_N3 @ np.asarray(self.params.start_weights[1:4])
        partial = (s.cand.partial5 | s.cand.partial3).astype(np.float64)
        gene = np.column_stack([cod, cod / ncod, start, np.log(ncod * 3.0), partial, neural / ncod])
        return gene, parts

    def _scores(self, si: int) -> tuple[np.ndarray, np.ndarray]:
        """(start-choice score, gene log-odds) of every candidate of strand ``si``."""
        gene, parts = self.features(si)
        wg = np.asarray(self.params.gene_weights)
        choice = parts @ np.asarray(self.params.start_weights)
        return choice, gene @ wg[:-1] + wg[-1]

    def dp_scores(self, si: int) -> np.ndarray:
        """Score of each candidate in the DP: the gene log-odds of its ORF (features at the
        ORF's best start) plus the log-probability ratio of this start to the best one, [N]."""
        choice, logit = self._scores(si)
        orf = self.strands[si].cand.orf
        best = _best_per_orf(self.strands[si].cand, choice, 1)
        _, grp = np.unique(orf, return_inverse=True)  # candidates are sorted by ORF
        b = best[grp]
        return logit[b] + (choice - choice[b])

    def decode(self) -> list[np.ndarray]:
        """Decode every contig with the current models: chosen candidate indices per strand."""
        per_strand = []
        for si, s in enumerate(self.strands):
            choice, _ = self._scores(si)
            keep = _best_per_orf(s.cand, choice, self.params.starts_per_orf)
            per_strand.append((keep, self.dp_scores(si)[keep]))
        return self._decode(per_strand)

    def _decode(self, per_strand: list[tuple[np.ndarray, np.ndarray]]) -> list[np.ndarray]:
        chosen = [np.zeros(0, dtype=np.int64) for _ in self.strands]
        for i in range(0, len(self.strands), 2):  # the two strands of one contig
            lefts, rights, strands, scores, owner = [], [], [], [], []
            for j in (i, i + 1):
                s = self.strands[j]
                keep, sc = per_strand[j]
                lo, hi = to_forward(s.cand.start[keep], s.cand.end[keep], s.length, s.strand)
                lefts.append(lo), rights.append(hi), scores.append(sc)
                strands.append(np.full(len(keep), s.strand)), owner.append(np.full(len(keep), j))
            cat = [np.concatenate(a) for a in (lefts, rights, strands, scores, owner)]
            local = np.concatenate([per_strand[i][0], per_strand[i + 1][0]])
            sel = select_genes(cat[0], cat[1], cat[2], cat[3], self.params)
            for j in (i, i + 1):
                chosen[j] = np.sort(local[sel[cat[4][sel] == j]])
        return chosen

    def train(self) -> list[np.ndarray]:
        """Seed, then alternate model fitting and decoding; returns the final choice."""
        chosen = self.seed()
        for r in range(self.params.train_rounds):
            self.fit_coding(chosen)
            if r > 0:
                self.fit_starts(chosen)
            chosen = self.decode()
        self.fit_starts(chosen)
        return self.decode()

    def calls(self, chosen: list[np.ndarray]) -> list[GeneCall]:
        """GeneCalls of the chosen candidates, sorted by contig order then position."""
        a, b = self.params.calibration
        out = []
        for si, (s, c) in enumerate(zip(self.strands, chosen)):
            logit = self.dp_scores(si)
            cand = s.cand
            lo, hi = to_forward(cand.start[c], cand.end[c], s.length, s.strand)
            for i, l, h in zip(c.tolist(), lo.tolist(), hi.tolist()):
                codon = bytes(b"ACGTN"[v] for v in s.x[cand.start[i]:cand.start[i] + 3]).decode()
                p = 1.0 / (1.0 + math.exp(-(a * logit[i] + b)))
                out.append(GeneCall(s.contig, l, h, s.strand, round(p, 6), codon,
                                    (bool(cand.partial5[i]), bool(cand.partial3[i])),
                                    {"logit": round(float(logit[i]), 4)}))
        order = {s.contig: n for n, s in enumerate(self.strands)}
        return sorted(out, key=lambda g: (order[g.contig], g.start, g.end, g.strand))


def _check_probs(p, length: int, contig: str) -> np.ndarray | None:
    if p is None:
        return None
    p = np.asarray(p, dtype=np.float32)
    if p.shape != (length, NUM_CLASSES):
        raise InputError(f"probs for contig '{contig}' have shape {p.shape}; expected "
                         f"({length}, {NUM_CLASSES}) — one row per base, columns as in classes.py")
    if not np.isfinite(p).all():
        raise InputError(f"probs for contig '{contig}' contain NaN or infinite values")
    return p


def call_genes_multi(records: list[tuple[str, bytes]], probs: dict | None = None, *,
                     params: DecoderParams | None = None, closed: bool = False) -> list[GeneCall]:
    """Call genes on all contigs of one genome with statistics trained across them.

    Args:
        records: (contig name, sequence) pairs of one genome; a plasmid alone is too short to
            train on, so give the chromosome(s) too.
        probs: optional {contig: float32 [L, 17]} per-base class probabilities (classes.py).
        params: decoder settings (default: fitted on the train genomes).
        closed: when True, genes may not run off contig ends (complete, closed replicons).

    Returns:
        Genes sorted by contig (input order) and start.
    """
    params = params or DecoderParams()
    names = [c for c, _ in records]
    if len(set(names)) != len(names):
        raise InputError("contig names must be unique within a genome")
    records = [(c, s) for c, s in records if len(s) > 0]
    if not records:
        return []
    dec = GenomeDecoder(records, probs, params, closed)
    return dec.calls(dec.train())


def call_genes(seq: bytes, probs: np.ndarray | None = None, *, contig: str = "",
               params: DecoderParams | None = None, closed: bool = False) -> list[GeneCall]:
    """Call genes on one sequence: ``seq`` (+ optional probs [L, 17]) → list of GeneCall.

    Example:
        >>> from genoctx.io.fasta import iter_records
        >>> name, seq = next(iter_records("genome.fna"))
        >>> genes = call_genes(seq, contig=name)   # sequence only; add probs [L, 17] if you have them
    """
    return call_genes_multi([(contig, seq)], None if probs is None else {contig: probs},
                            params=params, closed=closed)


# --------------------------------------------------------------------------- RNA features

RNA_KINDS = ("tRNA", "rRNA", "ncRNA")
RNA_MIN_LEN = {"tRNA": 50, "rRNA": 90, "ncRNA": 40}


@dataclass(frozen=True)
class RNACall:
    """One RNA feature decoded from the head's probabilities, 0-based half-open."""

    contig: str
    start: int
    end: int
    strand: int
    kind: str        # tRNA, rRNA or ncRNA
    score: float     # mean class probability over the feature
    attrs: dict = field(default_factory=dict, compare=False)


def hysteresis_segments(p: np.ndarray, high: float, low: float, min_len: int) -> list[tuple[int, int]]:
    """Maximal runs with ``p >= low`` that reach ``p >= high`` somewhere and are ``min_len`` long."""
    above = np.r_[False, p >= low, False]
    edges = np.flatnonzero(above[1:] != above[:-1])
    out = []
    for a, b in zip(edges[::2].tolist(), edges[1::2].tolist()):
        if b - a >= min_len and float(p[a:b].max()) >= high:
            out.append((a, b))
    return out


def call_rnas(probs: np.ndarray, *, contig: str = "", high: float = 0.5, low: float = 0.3,
              min_len: dict | None = None) -> list[RNACall]:
    """tRNA / rRNA / ncRNA features per strand by hysteresis thresholding: [L, 17] → RNACalls.

    A feature is a maximal run of bases whose class probability stays ≥ ``low``, peaks ≥
    ``high`` and is at least ``min_len[kind]`` long (tRNA 50, rRNA 90, ncRNA 40 by default).
    """
    probs = _check_probs(probs, len(probs), contig)
    min_len = {**RNA_MIN_LEN, **(min_len or {})}
    out = []
    for kind in RNA_KINDS:
        for strand, sign in ((1, "+"), (-1, "-")):
            p = probs[:, CLASSES.index(kind + sign)]
            for a, b in hysteresis_segments(p, high, low, min_len[kind]):
                out.append(RNACall(contig, a, b, strand, kind, round(float(p[a:b].mean()), 6)))
    return sorted(out, key=lambda r: (r.start, r.end, r.strand, r.kind))
