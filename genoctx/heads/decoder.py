"""Gene-structure decoder: per-base class probabilities (optional) + sequence → bacterial genes.

An ORF-constrained dynamic programme in the manner of Prodigal (Hyatt et al. 2010). For every
genome:

1. enumerate candidate genes (start codon ATG/GTG/TTG or an open contig edge → in-frame stop)
   on both strands (:mod:`genoctx.heads.orfs`);
2. self-train: a GC-frame-bias score seeds a first gene set; the coding score (a three-periodic
   Markov chain and a codon-pair score, :mod:`genoctx.heads.codon_model`) and the start model
   (codon type, Shine-Dalgarno motif and spacer, upstream composition;
   :mod:`genoctx.heads.start_model`) are fitted on it, the genome is decoded again, and the
   models are refitted on the new genes;
3. score each start of each ORF in nats: the coding part (coding score, minus what an inner
   start gives up, plus the ORF length's log-odds against chance) plus START_WEIGHT × the start
   LLRs, which count less for genes under 250 bp when they help and more when they hurt; the
   neural head's in-frame CDS log-odds are added when ``probs`` are given;
4. a gene's log-odds is the score of its ORF's best start plus a bias (DecoderParams.gene_weights
   over FEATURES), plus, after the last training round, the bounded term of a cross-genome ORF
   scorer fitted on the train genomes (:mod:`genoctx.heads.orf_scorer`) and, in a G+C-rich
   genome, a negative bias (:func:`high_gc_bias`); the dynamic programme
   picks the set of genes with the largest total under overlap rules (same strand ≤ 60 bp,
   convergent ≤ 200 bp and shorter than either gene's free part, divergent none), with a bonus
   for close same-strand neighbours (operons) and a penalty for strand switches and long gaps;
5. report each gene with a probability σ(a · log-odds + b).

Coordinates are 0-based half-open on the forward strand; a gene spans its start codon through its
stop codon. Legend: L = contig length, N = candidates, F = features, C = classes (17).
"""

from __future__ import annotations

import bisect
import dataclasses
import math
from collections.abc import Collection, Mapping
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
    dicodon_codon_scores,
    dicodon_counts,
    fit_coding_model,
    fit_dicodon,
    gc_best_position,
    gc_frame_position,
    kmer_index,
    length_factor,
    masked_kmers,
)
from genoctx.heads.orfs import (
    GAP_BASES,
    TABLE_STOPS,
    Candidates,
    encode,
    find_candidates_many,
    gap_mask,
    revcomp_codes,
    to_forward,
)
from genoctx.heads.start_model import (
    StartCounts,
    StartModel,
    StartTable,
    first_max_per_run,
    fit_start_model,
    pwm_bases,
    rbs_classes,
    rbs_presence_many,
    train_start_model,
    train_start_model_orfs,
)

try:  # the DP of select_genes compiled (_native.c); where it is not built, its Python loop
    from genoctx.heads._native import chain as _chain
except ImportError:
    _chain = None

# Gene-level features of a candidate, in the order of DecoderParams.gene_weights. "coding" is the
# coding part of the start-choice score (with the head's weighted evidence when given); "start"
# the start LLRs in units of the codon-type weight.
FEATURES = ("coding", "coding_per_codon", "start", "log_length", "partial", "neural_per_codon")
# Start-choice parts, in the order of DecoderParams.start_weights.
START_PARTS = ("coding", "type", "rbs", "composition", "neural")
# Start choice in nats, as in Prodigal: the coding part plus START_WEIGHT times the start LLRs;
# upstream composition counts UPSTREAM_SHARE of that.
START_WEIGHT = 4.35
UPSTREAM_SHARE = 0.4
START_WEIGHTS = (1.0, START_WEIGHT, START_WEIGHT, UPSTREAM_SHARE * START_WEIGHT, 0.1)
SHORT_GENE = 250        # bp; start evidence of shorter genes is shrunk (gains) or stretched (losses)
NEGATIVE_CODING = 0.5   # nats taken from a start whose coding part is negative
LENGTH_WEIGHT = 1.5     # weight of the ORF length's log-odds in the coding part
PAIR_SHARE = 0.75       # share of the codon-pair score in the coding score (the rest: Markov)
# bases in all from which the codon-pair table is the GC-frame seed's and the start model is
# trained over every ORF (Prodigal's training); below it, or with a bank model as the prior,
# both are fitted on the called genes (a short sequence's ORFs are too few and mostly not genes).
# Set on windows of 6 train genomes self-trained alone: Prodigal's training lost F1 and start
# agreement at 200 and 250 kb and gained from 300 kb (docs/decoder.md)
PRODIGAL_TRAINING_MIN_BP = 300_000
# A gene's log-odds: the start-choice score at its ORF's best start ("coding" + START_WEIGHT ×
# "start"), the head's per-codon evidence, and a bias. Hand-set on the train genomes
# (benchmarks/decoder_dev.py); decoder_fit can refit them over all FEATURES.
GENE_BIAS = 0.0
GENE_WEIGHTS = (1.0, 0.0, START_WEIGHT, 0.0, 0.0, 0.5, GENE_BIAS)
# p = sigmoid(a * log-odds + b), fitted on held-out calls (one species left out at a time, the
# ORF scorer fitted without it) of five train genomes: benchmarks/decoder_orf_classifier.py.
# Before the scorer: (0.0757, 0.5739) from decoder_dev.py --calibrate; before the fourth
# revision (seed codon-pair table, starts trained over every ORF): (0.0868, -0.0651).
CALIBRATION = (0.0973, -0.3483)
# The same without the ORF scorer (--no-orf-scorer, and archaea): its calls' log-odds lack the
# scorer's term, so they get a fit of their own, on the train genomes' calls
# (`python benchmarks/decoder_dev.py --no-scorer --calibrate`, 2026-12-07).
CALIBRATION_NO_SCORER = (0.0846, 0.4306)
# A G+C-rich genome's ORFs are long by chance (its stop codons are A+T-rich), and its weak calls
# are more often not genes: on a self-trained genome (not a bank model's prior) the final decode
# adds HIGH_GC_BIAS × clip((G+C − HIGH_GC_FROM) / (HIGH_GC_FULL − HIGH_GC_FROM), 0, 1) to every
# ORF's log-odds. Set on the train genomes (benchmarks/decoder_gene_bias.py): the ORF scorer
# fitted without the species, Paracoccus (G+C 0.68, the one G+C-rich train genome) reads its
# best F1 at −16 (+0.0095), while no bias adds more than 0.0007 to the mean of the 12 others
# (G+C ≤ 0.52); the ramp starts halfway between them and stops at Paracoccus's G+C
# (docs/decoder.md, "A G+C-rich genome's weak calls").
HIGH_GC_BIAS = -16.0
HIGH_GC_FROM = 0.60
HIGH_GC_FULL = 0.68


def high_gc_bias(gc: float, bias: float = HIGH_GC_BIAS) -> float:
    """What the final decode adds to each ORF's gene log-odds in a genome of G+C ``gc``."""
    ramp = (gc - HIGH_GC_FROM) / (HIGH_GC_FULL - HIGH_GC_FROM)
    return bias * min(max(ramp, 0.0), 1.0) + 0.0  # + 0.0: no -0.0 below the ramp


@dataclass(frozen=True)
class GeneCall:
    """One predicted gene: whole CDS including the stop codon, 0-based half-open. On a circular
    record a gene across the origin has ``end`` past the record's length (GFF3's convention)."""

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
    """Decoder settings; the weights default to the values set on the train genomes."""

    min_len: int = 90                 # bp incl. stop, complete genes
    min_edge_len: int = 60            # bp, genes running off an open contig edge
    max_same_overlap: int = 60        # bp, consecutive genes on one strand
    max_tail_overlap: int = 200       # bp, convergent genes (3' ends overlap)
    max_head_overlap: int = 0         # bp, divergent genes (5' ends overlap)
    # coding/start refits after the GC-frame seed (or the bank model). 1 rather than 2: on the
    # 13 train genomes without the ORF scorer, gene F1 / start agreement 0.9562 / 0.9333 with 2
    # and 0.9563 / 0.9334 with 1; on held-out-genus windows of 5-100 kb (meta) identical; a
    # third less time (docs/decoder.md, "One training round")
    train_rounds: int = 1
    seed_min_len: int = 300           # bp, ORFs used to learn the GC frame bias
    markov_alpha: float = 16.0
    llr_clip: float = 4.0
    start_prior_strength: float = 50.0
    # best starts of each ORF that enter the DP (by start-choice score): 32 lets in every start
    # that matters, so a gene whose best starts overlap a neighbour can still be called at a
    # shorter one, as in Prodigal's programme over all starts (4 before 2026-12-06)
    starts_per_orf: int = 32
    # "seed": codon-pair ratios counted once on the GC-frame programme's genes (Prodigal's
    # way); "calls": refitted on the called genes every training round (the second revision)
    pair_table: str = "seed"
    # "orfs": start model trained over every ORF whose best start scores >= 35 nats (Prodigal's
    # way); "calls": over the ORFs of the called genes (the second revision)
    start_training: str = "orfs"
    orf_scorer: bool = True           # add the cross-genome ORF scorer's view (heads.orf_scorer)
    high_gc_bias: float = HIGH_GC_BIAS  # final decode of a self-trained genome (high_gc_bias())
    meta_prior_bases: float = 300_000.0  # meta: coding bases the bank model weighs as
    translation_table: int = 11       # 11 or 4 (TGA = Trp: Mycoplasma); see call_genes_multi
    neural_clip: float = 6.0
    start_weights: tuple[float, ...] = START_WEIGHTS              # START_PARTS
    gene_weights: tuple[float, ...] = GENE_WEIGHTS                # FEATURES..., bias
    calibration: tuple[float, float] = CALIBRATION                # a, b: p = sigmoid(a·x + b)
    calibration_no_scorer: tuple[float, float] = CALIBRATION_NO_SCORER  # when orf_scorer is off
    start_prior: dict = field(default_factory=lambda: dict(_fitted.START_PRIOR))

    def __post_init__(self):
        for name, allowed in (("pair_table", ("seed", "calls")),
                              ("start_training", ("orfs", "calls"))):
            if getattr(self, name) not in allowed:
                raise ValueError(f"DecoderParams.{name} must be one of {allowed}, "
                                 f"got {getattr(self, name)!r}")


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
    starts: StartTable
    neural_codon: list[np.ndarray] | None = None  # per frame, [C]
    cum: list[np.ndarray] = field(default_factory=list)  # per frame cumulative codon score
    # [n], bumped whenever the codon scores change; shared by a decoder's strands, whose caches
    # key on it
    clock: list[int] = field(default_factory=lambda: [0])

    @property
    def length(self) -> int:
        return len(self.x)

    @property
    def sdlen(self) -> np.ndarray:
        """RBS classes present upstream of each candidate, [N, R] (name kept for decoder_fit)."""
        return self.starts.pres_NR

    @property
    def bases_NP(self) -> np.ndarray:
        return self.starts.bases_NP

    def coding(self) -> np.ndarray:
        """Coding score of each candidate from the cumulative codon scores, [N]."""
        out = np.empty(len(self.cand))
        for f in range(3):
            m = self.cand.frame == f
            out[m] = self.cum[f][self.cand.k[m]] - self.cum[f][self.cand.j[m]]
        return out

    def set_codon_scores(self, per_frame: list[np.ndarray]) -> None:
        self.cum = []
        for s in per_frame:
            c = np.empty(len(s) + 1)
            c[0] = 0.0
            np.cumsum(s, out=c[1:])
            self.cum.append(c)
        self.clock[0] += 1

    def neural(self) -> np.ndarray:
        """The head's in-frame evidence summed over each candidate's codons (0 without it), [N]."""
        out = np.zeros(len(self.cand))
        if self.neural_codon is not None:
            for f in range(3):
                m = self.cand.frame == f
                c = np.concatenate([[0.0], np.cumsum(self.neural_codon[f])])
                out[m] = c[self.cand.k[m]] - c[self.cand.j[m]]
        return out


@dataclass
class _AllStrands:
    """Every strand's candidates end to end, so that per-candidate scoring runs once per genome
    rather than once per strand (a draft assembly has thousands of strands).

    Strand ``i`` owns rows ``off[i]:off[i + 1]``. Its start and end coordinates are shifted by
    the lengths of the strands before it (plus one each), so ORF keys (ends) stay distinct and
    sorted across strands while every length stays as it was.
    """

    off: np.ndarray          # [S + 1] row offsets
    cand: Candidates         # [N] all candidates, coordinates shifted
    starts: StartTable       # [N] start features, ORF keys shifted
    partial: np.ndarray      # [N] bool, either end runs off an open edge
    neural: np.ndarray       # [N] the head's summed evidence (0 without it)
    x: np.ndarray            # every strand's bases end to end, N between, each from a codon
    origin: np.ndarray       # [S + 1] where each strand starts in ``x`` (a multiple of 3)
    codon_shift: np.ndarray  # [N] codon index of the candidate's strand's first base in ``x``

    @staticmethod
    def build(strands: list[_Strand]) -> _AllStrands:
        sizes = [len(s.cand) for s in strands]
        off = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
        shift = np.concatenate([[0], np.cumsum([s.length + 1 for s in strands])[:-1]])
        shift_N = np.repeat(shift.astype(np.int64), sizes)
        fields = {f: np.concatenate([getattr(s.cand, f) for s in strands])
                  for f in Candidates.__dataclass_fields__}
        fields["start"] = fields["start"] + shift_N
        fields["end"] = fields["end"] + shift_N
        cand = Candidates(**fields)
        starts = StartTable(cand.stype, np.concatenate([s.starts.pres_NR for s in strands]),
                            np.concatenate([s.starts.bases_NP for s in strands]), cand.orf)
        neural = np.concatenate([s.neural() for s in strands])
        # strands in x start at multiples of 3 (so frames and codon indices carry over),
        # 3 N apart
        origin = np.concatenate([[0], np.cumsum([(s.length + 5) // 3 * 3 for s in strands])])
        x = np.full(int(origin[-1]), 4, dtype=np.uint8)
        for s, o in zip(strands, origin[:-1].tolist()):
            x[o:o + s.length] = s.x
        codon_shift = np.repeat(origin[:-1] // 3, sizes)
        return _AllStrands(off, cand, starts, cand.partial5 | cand.partial3, neural, x,
                           origin.astype(np.int64), codon_shift)

    def split(self, idx: np.ndarray) -> list[np.ndarray]:
        """Sorted row indices of all strands → each strand's own candidate indices."""
        cut = np.searchsorted(idx, self.off)
        return [idx[a:b] - o for a, b, o in zip(cut[:-1], cut[1:], self.off[:-1])]


def _neural_codon_scores(probs_LC: np.ndarray, clip: float) -> list[np.ndarray]:
    """Per-codon in-frame CDS log-odds of each frame of one strand.

    ``probs_LC`` is already in the strand's own orientation (reverse-complemented and
    class-permuted for the minus strand), so its CDS+0..2 columns are the in-frame classes.
    """
    p = np.clip(probs_LC[:, list(CDS_PLUS)].astype(np.float64), 1e-7, 1 - 1e-7)
    lo_QL = np.clip(np.log(p) - np.log1p(-p), -clip, clip).T
    return [codon_sum(lo_QL, f) for f in range(3)]


def closed_ends(closed: bool | Mapping[str, tuple[bool, bool]], contig: str) -> tuple[bool, bool]:
    """Whether ``contig``'s first and last bases (forward strand) are ends no gene may run off.

    ``closed`` is True or False for every contig alike, or ``{contig: (first, last)}`` (contigs it
    does not name are open): a region cut from a longer sequence is closed only where it
    reaches that sequence's own ends.
    """
    if isinstance(closed, Mapping):
        first, last = closed.get(contig, (False, False))
        return bool(first), bool(last)
    return bool(closed), bool(closed)


def _make_strand(contig: str, x: np.ndarray, strand: int, probs_LC: np.ndarray | None,
                 params: DecoderParams, cand: Candidates, pres_NR: np.ndarray,
                 clock: list[int]) -> _Strand:
    """One strand from its candidates and the RBS classes present upstream of them (found for
    all strands at once: :func:`genoctx.heads.orfs.find_candidates_many`,
    :func:`genoctx.heads.start_model.rbs_presence_many`); ``clock`` is the decoder's."""
    kidx, valid = kmer_index(x)
    table = StartTable(cand.stype, pres_NR, pwm_bases(x, cand.start), cand.orf)
    s = _Strand(contig, strand, x, cand, kidx, valid, table, clock=clock)
    if probs_LC is not None:
        s.neural_codon = _neural_codon_scores(probs_LC, params.neural_clip)
    return s


# --------------------------------------------------------------------------- dynamic programme

OPERON_NEAR = 60     # bp between a stop and the next start on the same strand: operon-like
OPERON_FAR = 180     # bp; same-strand neighbours further apart are unrelated
LINK_WEIGHT = 0.15 * START_WEIGHT  # nats; scale of the neighbour links (Prodigal's)


def link_value(gap: int, same_strand: bool, weight: float) -> float:
    """Score of two consecutive genes: a bonus for close same-strand neighbours (operons), a
    penalty for a strand switch or a long gap. ``gap`` is the distance from the first gene's
    stop codon to the second gene's start codon on a same-strand pair (negative: overlap)."""
    dist = abs(gap + 3)  # from the stop codon's first base, as in Prodigal
    if not same_strand or dist > OPERON_FAR:
        return -weight
    if (dist <= OPERON_NEAR and gap >= 0) or dist < OPERON_NEAR / 4:
        return (2.0 - dist / OPERON_NEAR) * weight
    return 0.0


def _short_overlap(lo1: int, hi1: int, lo2: int, hi2: int) -> bool:
    """Whether two overlapping genes (the first starting first) each keep more of themselves
    outside the overlap than inside it (Prodigal's rule for opposite-strand overlaps)."""
    ovl = hi1 - lo2
    return ovl < lo2 - lo1 and ovl < hi2 - hi1


def _link_slack(left, right, strand, credit, link_weight: float) -> np.ndarray:
    """How much the links around each gene can add at most, [N].

    Dropping a gene from a chain replaces its two links by one: that loses at most two operon
    bonuses (2 × 2w) plus a strand-switch penalty (w), its own credit and the credit of an operon
    partner whose start sits on its stop codon. A gene whose score is below minus this can
    never raise the total (so leaving it out keeps the programme exact).
    """
    if link_weight == 0 or not len(left):
        return np.zeros(len(left))
    plus = (strand == 1).astype(np.int64)
    five = np.where(strand == 1, left, right).astype(np.int64)  # 5' end of each gene
    # the largest positive credit of a gene on each (5' end, strand)
    keys, inverse = np.unique(2 * five + plus, return_inverse=True)
    partner = np.zeros(len(keys))
    np.maximum.at(partner, inverse, credit)
    near = np.zeros(len(left))
    for d in (1, 4):  # an operon partner starting inside this gene's stop codon
        end = np.where(strand == 1, right - d, left + d).astype(np.int64)
        q = 2 * end + plus
        at = np.minimum(np.searchsorted(keys, q), len(keys) - 1)
        near = np.maximum(near, np.where(keys[at] == q, partner[at], 0.0))
    return 5.0 * link_weight + credit + near


def select_genes(left: np.ndarray, right: np.ndarray, strand: np.ndarray, score: np.ndarray,
                 params: DecoderParams, link_weight: float = 0.0,
                 credit: np.ndarray | None = None) -> np.ndarray:
    """Indices of the highest-scoring set of genes that respects the overlap rules.

    Genes are forward intervals [left, right). In a chosen set ordered by position, each gene
    starts and ends after the one before it, overlapping it by at most ``max_same_overlap`` on
    the same strand, ``max_tail_overlap`` when a plus gene meets a minus gene (3' ends facing)
    and ``max_head_overlap`` when a minus gene meets a plus gene (5' ends facing); genes on
    opposite strands must each keep more of themselves outside an overlap than inside it. The
    rules are mirror-symmetric, so decoding the reverse complement gives the mirrored set.

    The total is the genes' scores plus, with ``link_weight`` > 0, :func:`link_value` of every
    consecutive pair; when the second gene of a same-strand pair (in transcription order) starts
    inside the first one's stop codon (ATGA, TGATG), it also gets back ``credit`` (the RBS and
    upstream evidence an operon partner does not need). Genes that cannot raise the total are
    skipped.
    """
    n = len(score)
    credit = np.zeros(n) if credit is None else np.asarray(credit, dtype=np.float64)
    idx = np.flatnonzero(score > -_link_slack(left, right, strand, credit, link_weight))
    order = idx[np.lexsort((strand[idx], left[idx], right[idx]))]
    prev = np.full(n, -1, dtype=np.int64)
    # overlap allowed [predecessor strand][this gene's strand is minus]
    ovl = (params.max_same_overlap, params.max_tail_overlap,
           params.max_head_overlap, params.max_same_overlap)
    args = (order.astype(np.int64), *(np.ascontiguousarray(a, dtype=np.int64)
                                      for a in (left, right, strand)),
            np.ascontiguousarray(score, dtype=np.float64), np.ascontiguousarray(credit), prev,
            tuple(int(v) for v in ovl), link_weight > 0, float(link_weight), OPERON_NEAR,
            OPERON_FAR)
    tails = [t for t in (_chain(*args) if _chain is not None else _chain_py(*args)) if t]
    if not tails or max(tails)[0] <= 0:
        return np.zeros(0, dtype=np.int64)
    i = max(tails)[1]
    chosen = []
    prev = prev.tolist()
    while i >= 0:
        chosen.append(i)
        i = prev[i]
    return np.array(chosen[::-1], dtype=np.int64)


def _chain_py(order, left, right, strand, score, credit, prev, ovl, linked, w, near_bp, far_bp):
    """The DP of :func:`select_genes` over the genes of ``order`` (sorted by end, start, strand):
    fills ``prev`` (each gene's best predecessor, -1: none) and returns per predecessor strand
    (plus, minus) the best chain's (value, last gene), or None where that strand has no gene.
    ``ovl``: the overlaps allowed, [predecessor strand][this gene is minus] flattened.

    The reference of the compiled ``genoctx.heads._native.chain``, which decodes the same way
    bit for bit (the tests compare them); this one runs where that is not built.
    """
    # plain Python lists: the loop below is per gene, where numpy scalars cost more than they
    # save. Per strand of the predecessor (0: plus, 1: minus), genes by end: their ends,
    # starts, DP values and indices, and the prefix maxima of the values (and their indices).
    lo_l, hi_l, st_l = left.tolist(), right.tolist(), strand.tolist()
    score_l, credit_l = score.tolist(), credit.tolist()
    ends, starts, vals, ids, best_v, best_i = ([[], []] for _ in range(6))
    far = -w
    ovl = ((ovl[0], ovl[1]), (ovl[2], ovl[3]))
    bisect_left, bisect_right = bisect.bisect_left, bisect.bisect_right
    back = prev.tolist()
    for i in order.tolist():
        lo, hi, st = lo_l[i], hi_l[i], st_l[i]
        me = 0 if st == 1 else 1
        b_val, b_arg = 0.0, -1
        for ps in (0, 1):
            e, sts, vs = ends[ps], starts[ps], vals[ps]
            same = ps == me
            # predecessors ending before ``near`` are disjoint and, on the same strand, far away
            near = lo - (far_bp - 3) if same and linked else lo + 1
            c = bisect_left(e, near)
            if c and best_v[ps][c - 1] + far > b_val:
                b_val, b_arg = best_v[ps][c - 1] + far, best_i[ps][c - 1]
            reach = min(lo + ovl[ps][me], hi - 1)
            for t in range(c, bisect_right(e, reach)):
                et = e[t]
                if et > lo and (sts[t] >= lo or (
                        not same and not _short_overlap(sts[t], et, lo, hi))):
                    continue
                v = vs[t]
                if linked:  # link_value, written out
                    if not same:
                        v += far
                    else:
                        gap = lo - et
                        dist = abs(gap + 3)
                        if dist > far_bp:
                            v += far
                        elif (dist <= near_bp and gap >= 0) or dist < near_bp / 4:
                            v += (2.0 - dist / near_bp) * w
                        if gap == -1 or gap == -4:
                            v += credit_l[i] if me == 0 else credit_l[ids[ps][t]]
                if v > b_val:
                    b_val, b_arg = v, ids[ps][t]
        value = score_l[i] + b_val
        back[i] = b_arg
        ends[me].append(hi)
        starts[me].append(lo)
        vals[me].append(value)
        ids[me].append(i)
        bv = best_v[me]
        if bv and bv[-1] >= value:
            bv.append(bv[-1])
            best_i[me].append(best_i[me][-1])
        else:
            bv.append(value)
            best_i[me].append(i)
    prev[:] = back
    return tuple((bv[-1], bi[-1]) if bv else None for bv, bi in zip(best_v, best_i))


# --------------------------------------------------------------------------- genome-level training

def _group_cummax(v: np.ndarray, group: np.ndarray) -> np.ndarray:
    """Running maximum of ``v`` within runs of equal, non-decreasing ``group`` keys (exact)."""
    if len(v) == 0:
        return v.copy()
    order = np.argsort(v, kind="stable")
    rank = np.empty(len(v), dtype=np.int64)
    rank[order] = np.arange(len(v))
    _, gid = np.unique(group, return_inverse=True)
    key = gid.astype(np.int64) * len(v) + rank  # later groups always rank above earlier ones
    top = np.maximum.accumulate(key) - gid.astype(np.int64) * len(v)
    return v[order[top]]


def coding_part(cand: Candidates, coding: np.ndarray, gc: float, table: int = 11) -> np.ndarray:
    """Coding part of the start-choice score of every candidate (nats), [N].

    Prodigal's shape: the coding score, minus the coding an inner start gives up relative to
    the best longer start of its ORF (so a start inside strong coding loses twice what it
    skips), plus the length factor of the ORF from this start (an inner start loses up to twice
    its deficit to the longest one); a long open frame keeps at least half its length factor
    as coding, and a negative total costs ``NEGATIVE_CODING``. Candidates are sorted by (ORF,
    start), so the longest start of each ORF comes first.
    """
    c = coding - (_group_cummax(coding, cand.orf) - coding)
    lf = LENGTH_WEIGHT * length_factor((cand.end - cand.start) / 3.0, gc, table=table)
    lf_best = _group_cummax(lf, cand.orf)
    lf = lf - np.clip(np.minimum(lf_best - lf, lf), 0.0, None)
    c = np.where((lf > 3.0) & (c < 0.5 * lf), 0.5 * lf, c) + lf
    return np.where(c < 0, c - NEGATIVE_CODING, c)


def short_gene_scale(llr_NK: np.ndarray, length: np.ndarray) -> np.ndarray:
    """Start evidence of genes under ``SHORT_GENE`` bp: gains × L/250, losses × 250/L."""
    f = np.clip(length / SHORT_GENE, 1e-3, 1.0)[:, None]
    return np.where(llr_NK > 0, llr_NK * f, llr_NK / f)


def _best_per_orf(cand: Candidates, key: np.ndarray, k: int) -> np.ndarray:
    """Indices of the ``k`` highest-``key`` candidates of each ORF (candidates sorted by ORF;
    ties: the earlier candidate)."""
    if k == 1:  # no sort: the first candidate at its ORF's maximum
        return first_max_per_run(key, cand.orf)
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
                 params: DecoderParams, closed: bool | Mapping[str, tuple[bool, bool]] = False):
        self.params = params
        todo = []  # (contig, bases, strand, probabilities, closed ends) of each strand
        for contig, seq in records:
            x = encode(seq)
            p = _check_probs(probs.get(contig) if probs else None, len(x), contig)
            first, last = closed_ends(closed, contig)
            todo.append((contig, x, 1, p, (first, last)))
            p_rc = None if p is None else p[::-1][:, list(RC_PERMUTATION)]
            todo.append((contig, revcomp_codes(x), -1, p_rc, (last, first)))
        # candidates and RBS motifs of all strands in one pass each (a draft has thousands)
        xs = [t[1] for t in todo]
        cands = find_candidates_many(xs, [t[4] for t in todo], table=params.translation_table,
                                     min_len=params.min_len, min_edge_len=params.min_edge_len)
        pres = rbs_presence_many(xs, [c.start for c in cands])
        self._clock = [0]  # codon-score changes of any strand (see _Strand.clock)
        self.strands: list[_Strand] = [_make_strand(*t[:4], params, c, p_NR, self._clock)
                                       for t, c, p_NR in zip(todo, cands, pres)]
        self.background = sum(background_counts(s.kidx, s.valid) for s in self.strands)
        counts = sum(np.bincount(s.x, minlength=5)[:4] for s in self.strands[::2])
        self.gc = float(counts[1:3].sum() / max(counts.sum(), 1))
        self.start_model = fit_start_model(None, self._prior(), params.start_prior_strength)
        self.coding_model: CodingModel | None = None
        self.pair_llr: np.ndarray | None = None
        self.orf_adjust: list[np.ndarray] | None = None  # per strand, [N]: the ORF scorer's term
        self.start_adjust: np.ndarray | None = None  # all strands' rows, [N]: the start scorer's
        self.prior_model = None  # meta: the bank model self-trained statistics shrink towards
        self.final_bias: float | None = None  # see _final_bias
        self._seed_pairs: np.ndarray | None = None  # see seed_pair_llr
        self._gc_pos: list[list[np.ndarray]] | None = None  # see gc_positions
        self._all: _AllStrands | None = None  # built on first use
        self._cache: dict[str, tuple] = {}    # name → (key, values); see _cached

    def _prior(self) -> StartCounts | None:
        """The universal start prior, or None when there is none in this start-model layout."""
        pr = self.params.start_prior
        if not pr or any(f not in pr for f in StartCounts.__dataclass_fields__):
            return None
        prior = StartCounts(*(np.asarray(pr[f], dtype=np.float64)
                              for f in StartCounts.__dataclass_fields__))
        return prior if prior.matches_layout() else None

    # -- seed -----------------------------------------------------------------------------
    def gc_positions(self) -> list[list[np.ndarray]]:
        """Per strand, per frame: :func:`gc_best_position` of every codon (cached)."""
        if self._gc_pos is None:
            self._gc_pos = []
            for s in self.strands:
                tot = gc_frame_position(s.x)
                self._gc_pos.append([gc_best_position(s.x, f, tot) for f in range(3)])
        return self._gc_pos

    def seed(self) -> list[np.ndarray]:
        """First training genes from the GC frame bias: chosen candidate indices per strand."""
        gcpos = self.gc_positions()
        counts = np.zeros(3)
        longest = []
        for s, gp in zip(self.strands, gcpos):
            li = _best_per_orf(s.cand, -s.cand.start.astype(np.float64), 1)
            longest.append(li)
            c = s.cand.take(li)
            keep = (c.end - c.start) >= self.params.seed_min_len
            for f in range(3):
                m = keep & (c.frame == f)
                # how many of the kept ORFs cover each codon, then its G+C position's count
                n = len(gp[f])
                cover = np.cumsum(np.bincount(c.j[m], minlength=n + 1)
                                  - np.bincount(c.k[m], minlength=n + 1))[:n]
                counts += np.bincount(gp[f], weights=cover, minlength=3)
        w = np.log((counts + 1.0) / (counts.sum() / 3.0 + 1.0))
        for s, gp in zip(self.strands, gcpos):
            s.set_codon_scores([w[g] for g in gp])
        per_strand = []
        for s, li in zip(self.strands, longest):
            li = li[(s.cand.end[li] - s.cand.start[li]) >= self.params.seed_min_len]
            per_strand.append((li, s.coding()[li]))
        return self._decode(per_strand)

    def _genome_scale(self) -> bool:
        """Whether the statistics are trained as Prodigal trains them (see
        ``PRODIGAL_TRAINING_MIN_BP``): no bank model as the prior, and enough bases."""
        return (self.prior_model is None
                and sum(s.length for s in self.strands[::2]) >= PRODIGAL_TRAINING_MIN_BP)

    def seed_pair_llr(self) -> np.ndarray:
        """Codon-pair ratios counted once, as Prodigal counts its own, [K] (cached).

        The genes are those of one programme over the GC-frame plot: the longest start of every
        ORF of at least ``params.min_len`` bp, scored by its length times the genome-weighted
        share of its codons whose most-G+C position (:func:`gc_best_position`) is each codon
        position. Every ORF scores above zero, so the programme tiles the genome with its best
        non-overlapping set, genes and shadows alike (Prodigal's first ``dprog``). The ratios
        are :func:`fit_dicodon`'s (as Prodigal's estimate on a genome's counts, smoothed where
        counts are few), with the pair that ends in the stop codon left out.
        """
        if self._seed_pairs is None:
            per, bias = [], np.zeros(3)
            for s, gp in zip(self.strands, self.gc_positions()):
                li = _best_per_orf(s.cand, -s.cand.start.astype(np.float64), 1)
                li = li[(s.cand.end[li] - s.cand.start[li]) >= self.params.min_len]
                c = s.cand.take(li)
                share = np.zeros((len(li), 3))  # of each ORF's codons: most G+C at position q
                for f in range(3):
                    m = np.flatnonzero(c.frame == f)
                    if not len(m):
                        continue
                    g = gp[f]
                    j, k = c.j[m], np.minimum(c.k[m], len(g))
                    span = np.maximum(k - j, 1)
                    cum = np.zeros(len(g) + 1, dtype=np.int32)
                    for q in range(3):  # codons of [j, k) whose most-G+C position is q
                        np.cumsum(g == q, dtype=np.int32, out=cum[1:])
                        share[m, q] = (cum[k] - cum[j]) / span
                length = (c.end - c.start).astype(np.float64)
                bias += (share * length[:, None]).sum(axis=0)
                per.append((li, share, length))
            bias *= 3.0 / max(bias.sum(), 1e-12)
            chosen = self._decode([(li, length * (share @ bias)) for li, share, length in per])
            pairs = sum(dicodon_counts(s.kidx, s.valid, s.cand.start[c], s.cand.end[c] - 3)
                        for s, c in zip(self.strands, chosen))
            self._seed_pairs = fit_dicodon(pairs, self.background)
        return self._seed_pairs

    # -- training rounds ------------------------------------------------------------------
    def fit_coding(self, chosen: list[np.ndarray]) -> None:
        """Refit the coding models on the chosen genes and rescore every codon.

        A codon's score blends (``PAIR_SHARE``) the Markov chain's log-likelihood ratio of its
        bases with the codon-pair ratio of the pair it begins (Prodigal's dicodon score). The
        Markov chain is refitted on the chosen genes; the codon-pair ratios are the seed's
        (:meth:`seed_pair_llr`, ``params.pair_table == "seed"``) or refitted on the chosen
        genes too: with ``"calls"``, and always below ``PRODIGAL_TRAINING_MIN_BP`` in all or
        when a bank model is the prior (a short sequence's tiling of ORFs is mostly not genes,
        too small a sample to outweigh that, and where a circle was cut changes it). On the 13 train genomes the seed table with the start model
        trained over every ORF, at a 0.75 share, gave higher F1 and start agreement than the
        second revision's refitted table at 0.5 (benchmarks/decoder_variants.py, docs/decoder.md).
        """
        counts = sum(coding_counts(s.kidx, s.valid, s.cand.start[c], s.cand.end[c])
                     for s, c in zip(self.strands, chosen))
        self.coding_model = fit_coding_model(counts, self.background, self.params.markov_alpha,
                                             self.params.llr_clip)
        if self.params.pair_table == "seed" and self._genome_scale():
            self.pair_llr = self.seed_pair_llr()
        else:
            pairs = sum(dicodon_counts(s.kidx, s.valid, s.cand.start[c], s.cand.end[c])
                        for s, c in zip(self.strands, chosen))
            self.pair_llr = fit_dicodon(pairs, self.background)
        if self.prior_model is not None:
            w, m = self._prior_share(chosen), self.prior_model
            self.coding_model = CodingModel(
                (w * self.coding_model.llr_QK + (1.0 - w) * m.llr_QK).astype(np.float32))
            self.pair_llr = w * self.pair_llr + (1.0 - w) * m.pair_llr
        self._score_codons()

    def _prior_share(self, chosen: list[np.ndarray]) -> float:
        """Weight of the self-trained statistics against the bank model's: n / (n + n0), with n
        the coding bases of the chosen genes and n0 ``params.meta_prior_bases``."""
        n = sum(int((s.cand.end[c] - s.cand.start[c]).sum()) for s, c in zip(self.strands, chosen))
        return n / (n + self.params.meta_prior_bases)

    def _score_codons(self) -> None:
        """Every codon's score under the current coding model and codon-pair ratios."""
        for s in self.strands:
            km = masked_kmers(s.kidx, s.valid)
            s.set_codon_scores([
                (1.0 - PAIR_SHARE) * self.coding_model.codon_scores(km, f)
                + PAIR_SHARE * dicodon_codon_scores(self.pair_llr, s.kidx, s.valid, f)
                for f in range(3)])

    def use_model(self, model) -> None:
        """Take coding and start statistics from a pre-trained
        :class:`genoctx.heads.meta_models.MetaModel` instead of self-training them."""
        self.coding_model = CodingModel(model.llr_QK)
        self.pair_llr = model.pair_llr
        self.start_model = StartModel(model.type_llr, model.rbs_llr, model.pwm_llr_PB)
        self.orf_adjust = self.start_adjust = None
        self._score_codons()

    def fit_starts(self, chosen: list[np.ndarray]) -> None:
        """Self-train the start model: over every ORF of the genome whose best start scores
        well (``params.start_training == "orfs"``, :func:`train_start_model_orfs`, on genomes
        of at least ``PRODIGAL_TRAINING_MIN_BP`` without a bank model), or over the ORFs of the
        chosen genes (``"calls"``, and always otherwise; their starts may move)."""
        a = self.all_strands()
        sw = self.params.start_weights
        if self.params.start_training == "orfs" and self._genome_scale():
            self.start_model = train_start_model_orfs(
                a.starts, self._coding_part_all(), sw[START_PARTS.index("type")], self.gc,
                strength=self.params.start_prior_strength, prior=self._prior())
        else:
            rows = np.concatenate([c + o for c, o in zip(chosen, a.off[:-1].tolist())])
            train = np.isin(a.cand.orf, a.cand.orf[rows])
            self.start_model = train_start_model([a.starts], [self._coding_part_all()], [train],
                                                 sw[START_PARTS.index("type")],
                                                 strength=self.params.start_prior_strength,
                                                 prior=self._prior())
        if self.prior_model is not None:
            w, m, sm = self._prior_share(chosen), self.prior_model, self.start_model
            self.start_model = StartModel(*(w * getattr(sm, f) + (1.0 - w) * getattr(m, f)
                                            for f in ("type_llr", "rbs_llr", "pwm_llr_PB")))

    def coding_part(self, si: int) -> np.ndarray:
        """Coding part of the start-choice score of strand ``si``'s candidates, [N]."""
        s = self.strands[si]
        return coding_part(s.cand, s.coding(), self.gc, self.params.translation_table)

    # -- per-candidate scores, computed for all strands at once and cached -------------------
    def all_strands(self) -> _AllStrands:
        """All strands' candidates end to end (built once)."""
        if self._all is None:
            self._all = _AllStrands.build(self.strands)
        return self._all

    def _cached(self, name: str, key: tuple, compute):
        """``compute()``, reused while ``key`` holds the same versions and objects. The values
        are made read-only: callers get views into them."""
        hit = self._cache.get(name)
        if hit is not None and len(hit[0]) == len(key) and all(
                a is b or (isinstance(a, int) and a == b) for a, b in zip(hit[0], key)):
            return hit[1]
        values = compute()
        for v in values:
            v.setflags(write=False)
        self._cache[name] = (key, values)
        return values

    def _coding_key(self) -> tuple:
        return (self._clock[0], self.params)

    def _coding_all(self) -> tuple[np.ndarray]:
        return self._cached("coding", self._coding_key(), lambda: (
            np.concatenate([s.coding() for s in self.strands]),))

    def _coding_part_all(self) -> np.ndarray:
        a = self.all_strands()
        return self._cached("coding_part", self._coding_key(), lambda: (coding_part(
            a.cand, self._coding_all()[0], self.gc, self.params.translation_table),))[0]

    def _features_all(self) -> tuple[np.ndarray, np.ndarray]:
        """:meth:`features` of every candidate of every strand, [N, F] and [N, P]."""
        return self._cached("features", (*self._coding_key(), self.start_model),
                            self._compute_features)

    def _compute_features(self) -> tuple[np.ndarray, np.ndarray]:
        a = self.all_strands()
        cand = a.cand
        cod = self._coding_all()[0]
        length = cand.end - cand.start
        ncod = np.maximum(length // 3, 1)
        rbs = rbs_classes(a.starts.pres_NR, cand.start, self.start_model.rbs_llr)
        st_N3 = self.start_model.features(cand.stype, rbs, a.starts.bases_NP)
        st_N3 = np.where(a.partial[:, None], st_N3, short_gene_scale(st_N3, length))
        neural = a.neural
        cpart = self._coding_part_all()
        parts = np.column_stack([cpart, st_N3, neural])
        sw = np.asarray(self.params.start_weights)
        start = st_N3 @ sw[1:4] / sw[START_PARTS.index("type")]  # in units of codon-type LLR
        partial = a.partial.astype(np.float64)
        # the head's evidence counts wherever the coding part does (weighted as in start choice)
        coding = cpart + sw[START_PARTS.index("neural")] * neural
        gene = np.column_stack([coding, cod / ncod, start, np.log(ncod * 3.0), partial,
                                neural / ncod])
        return gene, parts

    def _choice(self, parts: np.ndarray, rows: slice = slice(None)) -> np.ndarray:
        """Start-choice score of the candidates of ``parts`` (rows ``rows`` of
        :meth:`all_strands`): the weighted parts, plus the start scorer's term when set."""
        choice = parts @ np.asarray(self.params.start_weights)
        return choice if self.start_adjust is None else choice + self.start_adjust[rows]

    def _scores_all(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """:meth:`scores` of every candidate of every strand, [N] each."""
        return self._cached("scores", (*self._coding_key(), self.start_model, self.orf_adjust,
                                       self.start_adjust), self._compute_scores)

    def _compute_scores(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        gene, parts = self._features_all()
        wg = np.asarray(self.params.gene_weights)
        sw = np.asarray(self.params.start_weights)
        choice = self._choice(parts)
        logit = gene @ wg[:-1] + wg[-1]
        if self.orf_adjust is not None:
            logit = logit + np.concatenate(self.orf_adjust)
        cand = self.all_strands().cand
        best = _best_per_orf(cand, choice, 1)
        _, grp = np.unique(cand.orf, return_inverse=True)  # candidates are sorted by ORF
        b = best[grp]
        cols = [START_PARTS.index("rbs"), START_PARTS.index("composition")]
        credit = -np.minimum(parts[:, cols] * sw[cols], 0.0).sum(axis=1)
        return choice, logit[b] + (choice - choice[b]), credit

    def _rows(self, si: int) -> slice:
        off = self.all_strands().off
        return slice(int(off[si]), int(off[si + 1]))

    def features(self, si: int) -> tuple[np.ndarray, np.ndarray]:
        """Gene features [N, len(FEATURES)] and start-choice parts [N, len(START_PARTS)] of
        strand ``si``'s candidates (read-only)."""
        r = self._rows(si)
        return tuple(v[r] for v in self._features_all())

    def scores(self, si: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Start-choice score, DP score and operon credit of every candidate of strand ``si``
        (read-only).

        The DP score is the gene log-odds of the candidate's ORF (features at the ORF's best
        start) plus the log-probability ratio of this start to the best one. The credit is what
        a start gets back when it overlaps its operon partner's stop codon: its negative RBS
        and upstream-composition evidence, weighted as in start choice.
        """
        r = self._rows(si)
        return tuple(v[r] for v in self._scores_all())

    def orf_table_all(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """:meth:`orf_table` of all strands at once; candidate indices are rows of
        :meth:`all_strands` (sorted: strand by strand)."""
        gene, parts = self._features_all()
        wg = np.asarray(self.params.gene_weights)
        best = _best_per_orf(self.all_strands().cand, self._choice(parts), 1)
        return best, gene[best] @ wg[:-1] + wg[-1], gene[best]

    def orf_table(self, si: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Each ORF of strand ``si`` at its best start: candidate indices [O], gene log-odds
        before the ORF scorer's term [O], and gene features [O, len(FEATURES)]."""
        gene, parts = self.features(si)
        wg = np.asarray(self.params.gene_weights)
        best = _best_per_orf(self.strands[si].cand, self._choice(parts, self._rows(si)), 1)
        return best, gene[best] @ wg[:-1] + wg[-1], gene[best]

    def set_orf_adjust(self, scorer) -> None:
        """Add ``scorer``'s term (:class:`genoctx.heads.orf_scorer.OrfScorer`) to every ORF's
        gene log-odds, computed at the current models' best starts."""
        from genoctx.heads.orf_scorer import decoder_rows

        self.orf_adjust = None
        x, _, where = decoder_rows(self)
        a = self.all_strands()
        best = np.concatenate([w + o for w, o in zip(where, a.off[:-1].tolist())])
        _, grp = np.unique(a.cand.orf, return_inverse=True)  # candidates sorted by ORF
        per_orf = np.zeros(len(best))
        per_orf[grp[best]] = scorer.adjustment(x)
        adj = per_orf[grp]
        self.orf_adjust = [adj[o:e] for o, e in zip(a.off[:-1].tolist(), a.off[1:].tolist())]

    def dp_scores(self, si: int) -> np.ndarray:
        """Score of each candidate of strand ``si`` in the DP (see :meth:`scores`), [N]."""
        return self.scores(si)[1]

    def decode(self) -> list[np.ndarray]:
        """Decode every contig with the current models: chosen candidate indices per strand."""
        return self._decode_scored()[0]

    def _decode_scored(self) -> tuple[list[np.ndarray], float]:
        """:meth:`decode`, and the sum of the DP scores of the genes it chose (how well the
        current models explain the sequence), from the same scores."""
        per_strand, dps = [], []
        choice, _, _ = self._scores_all()
        keeps = self.all_strands().split(
            _best_per_orf(self.all_strands().cand, choice, self.params.starts_per_orf))
        for si, keep in enumerate(keeps):
            _, dp, credit = self.scores(si)
            per_strand.append((keep, dp[keep], credit[keep]))
            dps.append(dp)
        chosen = self._decode(per_strand, LINK_WEIGHT)
        return chosen, float(sum(dps[si][c].sum() for si, c in enumerate(chosen)))

    def _decode(self, per_strand: list[tuple], link_weight: float = 0.0) -> list[np.ndarray]:
        """Run the DP on each contig; ``per_strand`` holds (candidates, scores[, credits])."""
        chosen = [np.zeros(0, dtype=np.int64) for _ in self.strands]
        for i in range(0, len(self.strands), 2):  # the two strands of one contig
            cols = {k: [] for k in ("lo", "hi", "strand", "score", "credit", "owner")}
            for j in (i, i + 1):
                s = self.strands[j]
                keep, sc = per_strand[j][:2]
                lo, hi = to_forward(s.cand.start[keep], s.cand.end[keep], s.length, s.strand)
                credit = per_strand[j][2] if len(per_strand[j]) > 2 else np.zeros(len(keep))
                for k, v in (("lo", lo), ("hi", hi), ("strand", np.full(len(keep), s.strand)),
                             ("score", sc), ("credit", credit), ("owner", np.full(len(keep), j))):
                    cols[k].append(v)
            cat = {k: np.concatenate(v) for k, v in cols.items()}
            local = np.concatenate([per_strand[i][0], per_strand[i + 1][0]])
            sel = select_genes(cat["lo"], cat["hi"], cat["strand"], cat["score"], self.params,
                               link_weight, cat["credit"])
            for j in (i, i + 1):
                chosen[j] = np.sort(local[sel[cat["owner"][sel] == j]])
        return chosen

    def train(self) -> list[np.ndarray]:
        """Seed, then alternate model fitting and decoding; returns the final choice."""
        self.orf_adjust = self.start_adjust = None
        self.prior_model = self.final_bias = None
        return self._self_train(self.seed())

    def _self_train(self, chosen: list[np.ndarray]) -> list[np.ndarray]:
        """Alternate model fitting and decoding from a first choice; the final decode."""
        for _ in range(self.params.train_rounds):
            self.fit_coding(chosen)
            self.fit_starts(chosen)
            chosen = self.decode()
        self.fit_starts(chosen)
        return self._finish()

    def _final_bias(self) -> float:
        """What the final decode adds to every ORF's log-odds: :func:`high_gc_bias` of the
        genome's G+C when its statistics are self-trained at genome scale
        (:meth:`_genome_scale`), else 0 (short sequences and bank models: not measured there).
        A decoder made by :meth:`like` takes its trainer's."""
        if self.final_bias is None:
            self.final_bias = (high_gc_bias(self.gc, self.params.high_gc_bias)
                               if self._genome_scale() else 0.0)
        return self.final_bias

    def _finish(self) -> list[np.ndarray]:
        """The final decode, with the ORF scorer's term when the params ask for it and the
        G+C-rich genome's bias (:meth:`_final_bias`)."""
        self.orf_adjust = None
        if self.params.orf_scorer:
            from genoctx.heads.orf_scorer import default_scorer

            self.set_orf_adjust(default_scorer())
        bias = self._final_bias()
        if bias:
            if self.orf_adjust is None:
                self.orf_adjust = [np.full(len(s.cand), bias) for s in self.strands]
            else:
                self.orf_adjust = [a + bias for a in self.orf_adjust]
        return self.decode()

    def train_meta(self, bank) -> tuple[list[np.ndarray], str]:
        """Self-train from a pre-trained model instead of the GC-frame seed (short sequences).

        Each model of ``bank`` whose G+C suits this sequence decodes it, and the one whose gene
        set scores highest is kept, as Prodigal's metagenomic mode chooses. Its genes seed the
        usual training rounds, whose statistics are shrunk towards the model's: the model weighs
        as ``params.meta_prior_bases`` coding bases, so a few kb of sequence keeps it nearly as
        it is and a genome-sized one mostly learns its own. Returns the final choice and the
        model's name.
        """
        from genoctx.heads.meta_models import candidates

        self.orf_adjust = self.start_adjust = None
        self.prior_model = self.final_bias = None
        best, best_score, best_chosen = None, -math.inf, None
        tried = candidates(bank, self.gc)
        for m in tried:
            self.use_model(m)
            chosen, score = self._decode_scored()
            if score > best_score:
                best, best_score, best_chosen = m, score, chosen
        if best is not tried[-1]:  # the codon scores hold the last model's statistics
            self.use_model(best)
        self.prior_model = best
        return self._self_train(best_chosen), best.name

    def like(self, records: list[tuple[str, bytes]], probs: dict | None,
             closed: bool | Mapping[str, tuple[bool, bool]] = False) -> GenomeDecoder:
        """A decoder of other ``records`` that scores with this one's trained statistics
        (coding and codon-pair ratios, start model, G+C) instead of training its own; its
        :meth:`_finish` decode adds the ORF scorer's term and the G+C bias as this one's did."""
        d = GenomeDecoder(records, probs, self.params, closed)
        d.gc = self.gc
        d.final_bias = self._final_bias()
        d.coding_model, d.pair_llr, d.start_model = self.coding_model, self.pair_llr, self.start_model
        d._score_codons()
        return d

    def calls(self, chosen: list[np.ndarray]) -> list[GeneCall]:
        """GeneCalls of the chosen candidates, sorted by contig order then position."""
        a, b = (self.params.calibration if self.params.orf_scorer
                else self.params.calibration_no_scorer)
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


PROCEDURES = ("auto", "single", "meta", "groups")
# auto: inputs shorter than this (all records together) start from the bank. Held out by genus on
# train genomes (benchmarks/genecall_regions.py --held-out), bank-seeded training gains on
# windows up to 100 kb and self-training alone is as good from 200 kb.
META_MAX_BP = 150_000
# auto: records whose G+C falls in two groups this far apart, the smaller holding at least this
# share of the bases, are a mixture of organisms (a metagenome): each G+C group is decoded on
# its own (procedure "groups"). Set on train genomes (benchmarks/genecall_mixtures.py,
# docs/decoder.md): cut into 10-kb and 2-kb contigs, no genome's contigs split wider than 0.087
# (N. meningitidis MC58, 2 kb); of 15 pairs of genomes mixed, all 7 that split 0.13-0.29 apart
# lost F1 self-trained together.
MIXTURE_GC_GAP = 0.11
MIXTURE_MIN_SHARE = 0.10
MIXTURE_MIN_RECORD = 1_000  # bp; shorter records' G+C is too noisy to count
# groups: records whose tetranucleotide profiles fall in two clusters this far apart (their
# centroids' distance over the pooled spread along the line joining them; a unimodal cloud cut
# in two gives about 2.7) are of different organisms too, however close their G+C. Set on train
# genomes (benchmarks/genecall_mixtures.py, docs/decoder.md): one genome's 10-, 5- and 2-kb
# contigs (13 train genomes, 4 pretrain-only Klebsiella) 2.1-3.2; two development genomes'
# contigs mixed 4.4-16.7, except E. coli + Y. pestis (same order) at 2.8-4.0. Few records
# inflate it (one genome's 40 contigs reached 4.1, 80 reached 3.8): the rule needs
# MIXTURE_TNF_MIN_RECORDS records of MIXTURE_MIN_RECORD bases or more.
MIXTURE_TNF_SEPARATION = 4.5
MIXTURE_TNF_MIN_RECORDS = 100


def _record_gc(records: list[tuple[str, bytes]]) -> tuple[np.ndarray, np.ndarray]:
    """G+C fraction and A/C/G/T count of every record, [R] each (G+C NaN without such bases)."""
    gc, n = np.full(len(records), np.nan), np.zeros(len(records))
    for r, (_, seq) in enumerate(records):
        at = seq.count(b"A") + seq.count(b"T") + seq.count(b"a") + seq.count(b"t")
        g = seq.count(b"G") + seq.count(b"C") + seq.count(b"g") + seq.count(b"c")
        if at + g:
            gc[r], n[r] = g / (at + g), at + g
    return gc, n


def _gc_split(gc: np.ndarray, n: np.ndarray):
    """The least-squares split of records (G+C ``gc``, weights ``n``) into two by G+C:
    ``(G+C of the lower group, of the higher, share of the smaller, sort order, i)`` with the
    lower group ``order[:i + 1]``; None for fewer than two records."""
    if len(gc) < 2:
        return None
    order = np.argsort(gc, kind="stable")
    x, w = gc[order], n[order].astype(np.float64)
    cw, cx, cxx = np.cumsum(w), np.cumsum(w * x), np.cumsum(w * x * x)
    lw, lx, lxx = cw[:-1], cx[:-1], cxx[:-1]  # split after position i
    rw, rx, rxx = cw[-1] - lw, cx[-1] - lx, cxx[-1] - lxx
    sse = (lxx - lx * lx / lw) + (rxx - rx * rx / rw)
    i = int(np.argmin(sse))
    return (float(lx[i] / lw[i]), float(rx[i] / rw[i]), float(min(lw[i], rw[i]) / cw[-1]),
            order, i)


def gc_groups(records: list[tuple[str, bytes]]) -> tuple[float, float, float] | None:
    """The best split of the records into two groups by G+C: (G+C of the lower group, of the
    higher, share of the bases in the smaller), weighted by length (least squares, as
    one-dimensional 2-means); None for fewer than two records of at least
    ``MIXTURE_MIN_RECORD`` bases."""
    gc, n = _record_gc(records)
    keep = n >= MIXTURE_MIN_RECORD
    split = _gc_split(gc[keep], n[keep])
    return None if split is None else split[:3]


def _is_split(split) -> bool:
    return (split is not None and split[1] - split[0] >= MIXTURE_GC_GAP
            and split[2] >= MIXTURE_MIN_SHARE)


def is_mixture(records: list[tuple[str, bytes]]) -> tuple[float, float, float] | None:
    """:func:`gc_groups` when they say the records are of different organisms (groups at
    least ``MIXTURE_GC_GAP`` apart, the smaller at least ``MIXTURE_MIN_SHARE`` of the bases),
    else None."""
    groups = gc_groups(records)
    return groups if _is_split(groups) else None


def _canonical_4mers() -> np.ndarray:
    """Index (0..135) of the canonical form (the lesser of a 4-mer and its reverse complement)
    of each 4-mer code 0..255 (2 bits per base, ACGT)."""
    code = np.arange(256)
    rc = sum((3 - ((code >> (2 * j)) & 3)) << (2 * (3 - j)) for j in range(4))
    _, index = np.unique(np.minimum(code, rc), return_inverse=True)
    return index


_CANONICAL_4MERS = _canonical_4mers()


def tetranucleotide_profiles(records: list[tuple[str, bytes]]) -> np.ndarray:
    """Log frequencies of the 136 canonical tetranucleotides of each record (a pseudocount of
    one each; 4-mers with a base other than A/C/G/T skipped), [R, 136]: the composition
    metagenomic binners read, alike on both strands."""
    out = np.zeros((len(records), 136))
    for r, (_, seq) in enumerate(records):
        x = encode(seq).astype(np.int64)
        c = np.ones(136)
        if len(x) >= 4:
            code = (x[:-3] << 6) | (x[1:-2] << 4) | (x[2:-1] << 2) | x[3:]
            ok = np.maximum(np.maximum(x[:-3], x[1:-2]), np.maximum(x[2:-1], x[3:])) < 4
            c += np.bincount(_CANONICAL_4MERS[code[ok]], minlength=136)
        out[r] = np.log(c / c.sum())
    return out


def _tnf_split(x: np.ndarray, w: np.ndarray) -> tuple[float, float, np.ndarray] | None:
    """Two clusters of profiles ``x`` [R, F] weighted by ``w`` [R] (2-means from the split of
    the first principal component at its median): ``(separation, share of the smaller,
    members of the second)``; the separation is the centroids' distance over the pooled spread
    of the profiles along the line joining them. None when no split is found."""
    if len(x) < 3:
        return None
    x = x - np.average(x, axis=0, weights=w)
    _, _, vt = np.linalg.svd(x * np.sqrt(w / w.sum())[:, None], full_matrices=False)
    p = x @ vt[0]
    label = p > np.median(p)
    for _ in range(50):
        if label.all() or not label.any():
            return None
        c0 = np.average(x[~label], axis=0, weights=w[~label])
        c1 = np.average(x[label], axis=0, weights=w[label])
        new = ((x - c1) ** 2).sum(1) < ((x - c0) ** 2).sum(1)
        if (new == label).all():
            break
        label = new
    if label.all() or not label.any():
        return None
    c0 = np.average(x[~label], axis=0, weights=w[~label])
    c1 = np.average(x[label], axis=0, weights=w[label])
    gap = np.linalg.norm(c1 - c0)
    if gap == 0:
        return None
    q = x @ ((c1 - c0) / gap)
    spread = np.sqrt((((q[label] - q[label].mean()) ** 2).sum()
                      + ((q[~label] - q[~label].mean()) ** 2).sum()) / (len(q) - 2))
    share = min(w[label].sum(), w[~label].sum()) / w.sum()
    return (float(gap / spread) if spread > 0 else math.inf), float(share), label


def tetranucleotide_separation(records: list[tuple[str, bytes]]) -> tuple[float, float] | None:
    """(separation, share of the smaller) of the best split in two of the records of at least
    ``MIXTURE_MIN_RECORD`` A/C/G/T bases by their tetranucleotide profiles, as :func:`mixture_groups`
    reads it (whatever the number of records); None for fewer than three such records."""
    _, n = _record_gc(records)
    keep = np.flatnonzero(n >= MIXTURE_MIN_RECORD)
    if len(keep) < 3:
        return None
    t = _tnf_split(tetranucleotide_profiles([records[i] for i in keep.tolist()]), n[keep])
    return None if t is None else t[:2]


def mixture_groups(records: list[tuple[str, bytes]]) -> list[list[int]]:
    """The records' indices by organism as far as their composition tells them apart: split in
    two as :func:`is_mixture` does by G+C, or, where G+C does not, where their tetranucleotide
    profiles (:func:`tetranucleotide_profiles`, from ``MIXTURE_TNF_MIN_RECORDS`` records) form
    two clusters at least ``MIXTURE_TNF_SEPARATION`` apart, the smaller holding at least
    ``MIXTURE_MIN_SHARE`` of the bases; then each part again while either rule splits it
    (three organisms give three groups). Only records of ``MIXTURE_MIN_RECORD`` bases or more
    count; shorter ones join the group of nearest G+C (the largest when they hold no A/C/G/T).
    One group when the records are not a mixture. Groups are ordered by their first record;
    each lists its records in input order."""
    gc, n = _record_gc(records)
    counted = np.flatnonzero(n >= MIXTURE_MIN_RECORD)
    tnf = tetranucleotide_profiles([records[i] for i in counted.tolist()]) \
        if len(counted) >= MIXTURE_TNF_MIN_RECORDS else None
    row = {r: k for k, r in enumerate(counted.tolist())}

    def split(idx: np.ndarray) -> list[np.ndarray]:
        s = _gc_split(gc[idx], n[idx])
        if _is_split(s):
            order, i = s[3], s[4]
            return split(idx[order[:i + 1]]) + split(idx[order[i + 1:]])
        if tnf is not None and len(idx) >= MIXTURE_TNF_MIN_RECORDS:
            t = _tnf_split(tnf[[row[r] for r in idx.tolist()]], n[idx])
            if t is not None and t[0] >= MIXTURE_TNF_SEPARATION and t[1] >= MIXTURE_MIN_SHARE:
                return split(idx[~t[2]]) + split(idx[t[2]])
        return [idx]

    parts = split(counted) if len(counted) else []
    if len(parts) < 2:
        return [list(range(len(records)))]
    groups = [set(p.tolist()) for p in parts]
    mean = np.array([np.average(gc[p], weights=n[p]) for p in parts])
    largest = int(np.argmax([n[p].sum() for p in parts]))
    for r in np.flatnonzero(n < MIXTURE_MIN_RECORD).tolist():
        groups[largest if np.isnan(gc[r]) else int(np.argmin(np.abs(mean - gc[r])))].add(r)
    return sorted(sorted(g) for g in groups)


def group_composition(records: list[tuple[str, bytes]],
                      groups: list[list[int]]) -> list[tuple[float, float]]:
    """(G+C, share of the A/C/G/T bases) of each group of records (:func:`mixture_groups`)."""
    gc, n = _record_gc(records)
    total = max(n.sum(), 1.0)
    out = []
    for g in groups:
        w = n[g]
        out.append((float(np.average(gc[g][w > 0], weights=w[w > 0])) if (w > 0).any() else 0.0,
                    float(w.sum() / total)))
    return out


def group_names(records: list[tuple[str, bytes]], groups: list[list[int]]) -> list[list[str]]:
    """The record names of each group of :func:`mixture_groups` (record indices)."""
    return [[records[i][0] for i in g] for g in groups]


def auto_choice(records: list[tuple[str, bytes]]) -> tuple[str, list[list[int]] | None]:
    """What ``procedure="auto"`` decodes ``records`` with, and why: (``meta``, None) under
    ``META_MAX_BP`` bases in all, (``groups``, the groups of :func:`mixture_groups`) for a
    mixture of organisms, else (``single``, None)."""
    if sum(len(s) for _, s in records) < META_MAX_BP:
        return "meta", None
    groups = mixture_groups(records)
    return ("groups", groups) if len(groups) > 1 else ("single", None)


def auto_procedure(records: list[tuple[str, bytes]]) -> str:
    """The procedure of :func:`auto_choice`."""
    return auto_choice(records)[0]


def check_options(procedure: str, translation_table: int) -> None:
    """Refuse a procedure or translation table the decoder does not know (InputError)."""
    if procedure not in PROCEDURES:
        raise InputError(f"procedure must be one of {', '.join(PROCEDURES)}, got {procedure!r}")
    if translation_table not in TABLE_STOPS:
        raise InputError(f"translation table must be one of "
                         f"{', '.join(map(str, TABLE_STOPS))}, got {translation_table!r}")


def call_genes_multi(records: list[tuple[str, bytes]], probs: dict | None = None, *,
                     params: DecoderParams | None = None,
                     closed: bool | Mapping[str, tuple[bool, bool]] = False,
                     circular: bool | Collection[str] = False,
                     procedure: str = "auto", bank=None, progress=None,
                     workers: int = 1,
                     groups: list[list[str]] | None = None) -> list[GeneCall]:
    """Call genes on all contigs of one genome with statistics trained across them.

    Args:
        records: (contig name, sequence) pairs of one genome; a plasmid alone is too short to
            train on, so give the chromosome(s) too.
        probs: optional {contig: float32 [L, 17]} per-base class probabilities (classes.py).
        params: decoder settings (default: fitted on the train genomes).
        closed: when True, genes may not run off contig ends (complete, closed replicons);
            ``{contig: (first, last)}`` closes only the ends marked True (a region of a longer
            sequence: only where it reaches the sequence's own ends; :func:`closed_ends`).
        circular: records that are whole circular replicons (True: all of them). They are
            closed, and genes may span their origin: such a call's ``end`` lies past the
            record's length (the base after its stop is ``end - length``), as GFF3 writes
            features across the origin (:func:`circular_calls`).
        procedure: ``single`` self-trains the statistics on all records together, from the
            GC-frame seed; ``meta`` treats each record on its own, starting from the
            best-scoring pre-trained model of the bank (:mod:`genoctx.heads.meta_models`,
            :meth:`GenomeDecoder.train_meta`; each call's ``attrs["model"]`` names it);
            ``groups`` splits the records by organism as far as their composition (G+C,
            tetranucleotide profiles) tells (:func:`mixture_groups`) and decodes each group
            on its own: ``single`` from ``META_MAX_BP`` bases, else ``meta``; ``auto``
            (default) is ``meta`` when the records hold under ``META_MAX_BP`` bases in all,
            ``groups`` when their composition says they are of different organisms, else
            ``single`` (:func:`auto_choice`).
        bank: pre-trained models for ``meta`` (default: the shipped bank).
        progress: optional callable given the bases of each record (of each group, under
            ``groups``) as it is decoded.
        workers: processes that decode records side by side under ``meta`` (each record is
            decoded on its own, so the calls are the same for any number); 1 decodes here.
        groups: under ``groups``, the names of the records of each group when the caller
            already has them (:func:`auto_choice`, :func:`group_names`); None works them out.

    The translation table is ``params.translation_table``: 11 by default, 4 for genomes that
    read TGA as tryptophan (Mycoplasma, Spiroplasma, Ureaplasma); calls then carry
    ``attrs["transl_table"]``. It is not detected: give it, as Prodigal's ``-g 4``.

    Returns:
        Genes sorted by contig (input order) and start.
    """
    params = params or DecoderParams()
    check_options(procedure, params.translation_table)
    names = [c for c, _ in records]
    if len(set(names)) != len(names):
        raise InputError("contig names must be unique within a genome")
    records = [(c, s) for c, s in records if len(s) > 0]
    if not records:
        return []
    idx = None  # the groups' record indices, once known
    if procedure == "auto":
        procedure, idx = auto_choice(records)
    if workers < 1:
        raise InputError(f"workers must be at least 1, got {workers}")
    if procedure == "groups":
        if idx is None and groups is not None:
            where = {c: i for i, (c, _) in enumerate(records)}
            idx = [k for k in ([where[c] for c in g if c in where] for g in groups) if k]
        return _decode_groups(records, idx if idx is not None else mixture_groups(records),
                              probs, params, closed, circular, bank, progress, workers)
    ring = circular_names([c for c, _ in records], circular)
    if ring:  # a circle has no ends for a gene to run off
        closed = {c: (True, True) if c in ring else closed_ends(closed, c) for c, _ in records}
    groups, probs, closed, where = split_at_gaps(records, probs, closed, ring)
    out = _decode_records(groups, probs, params, closed, procedure, bank, progress, workers,
                          ring)
    if where:  # calls of a scaffold's pieces back on the scaffold, in order
        size = {c: len(seq) for c, seq in records}
        out = [_on_record(g, *where[g.contig], size[where[g.contig][0]]) if g.contig in where
               else g for g in out]
        rank = {c: k for k, c in enumerate(names)}
        out.sort(key=lambda g: (rank[g.contig], g.start, g.end))
    if params.translation_table != 11:
        for g in out:
            g.attrs["transl_table"] = params.translation_table
    return out


def _decode_groups(records, groups, probs, params, closed, circular, bank, progress,
                   workers) -> list[GeneCall]:
    """``call_genes_multi(procedure="groups")``: each group (record indices, as
    :func:`mixture_groups` gives them) decoded on its own, self-trained from ``META_MAX_BP``
    bases, else record by record from the bank; the calls in the records' order. With two
    groups or more, each call's ``attrs["composition_group"]`` numbers its group by G+C, 1 the
    lowest (GFF3 ``composition_group=``)."""
    mean = [gc for gc, _ in group_composition(records, groups)]
    rank = {k: r + 1 for r, k in enumerate(np.argsort(mean, kind="stable").tolist())}
    out = []
    for k, idx in enumerate(groups):
        part = [records[i] for i in idx]
        bases = sum(len(s) for _, s in part)
        single = bases >= META_MAX_BP
        calls = call_genes_multi(part, {c: probs[c] for c, _ in part if c in probs} if probs
                                 else None, params=params, closed=closed, circular=circular,
                                 procedure="single" if single else "meta", bank=bank,
                                 progress=None if single else progress, workers=workers)
        if len(groups) > 1:
            for g in calls:
                g.attrs["composition_group"] = rank[k]
        out += calls
        if single and progress is not None:
            progress(bases)
    where = {c: i for i, (c, _) in enumerate(records)}
    return sorted(out, key=lambda g: where[g.contig])  # stable: each record keeps its order


def split_at_gaps(records, probs, closed, circular=frozenset()):
    """Each record as the pieces between its gaps (runs of at least ``orfs.GAP_BASES`` bases that
    are not A/C/G/T, a scaffold's joins), as a draft assembler's contigs: a gene may run off a
    piece's end at a gap (a partial gene) but never across it, since the bases on the gap's two
    sides need not be contiguous. A circular record is cut at its gaps too; its own ends are no
    ends, so the piece across its origin (when no gap lies there) is one piece.

    Returns ``(groups, probs, closed, where)``: per record the list of its pieces' ``(name,
    bases)`` (the record itself when it has no gap; a piece's name is the record's with
    ``\\x00k`` added), the probabilities and closed ends of every piece (the sides of a gap are
    open), and ``{piece name: (record, offset)}`` for the pieces. A circle's piece across its
    origin starts at its offset and runs on past the record's end into its start.
    """
    groups, where = [], {}
    new_probs = dict(probs) if probs else probs
    new_closed = {} if not isinstance(closed, Mapping) else dict(closed)
    for contig, seq in records:
        new_closed.setdefault(contig, closed_ends(closed, contig))
        x = encode(seq)
        gap = gap_mask(x) if len(x) >= GAP_BASES else None
        if gap is None or not gap.any() or gap.all():
            groups.append([(contig, seq)])
            continue
        edges = np.flatnonzero(np.diff(np.concatenate([[1], gap.view(np.int8), [1]])))
        pieces = list(zip(edges[0::2].tolist(), edges[1::2].tolist()))
        first, last = closed_ends(closed, contig)
        if contig in circular:  # a circle's own ends are no ends: only its gaps are
            first = last = False
            if len(pieces) > 1 and pieces[0][0] == 0 and pieces[-1][1] == len(seq):
                pieces = pieces[1:-1] + [(pieces[-1][0], len(seq) + pieces[0][1])]
        group = []
        for k, (lo, hi) in enumerate(pieces):
            name = f"{contig}\x00{k}"
            wraps = hi > len(seq)  # the piece across a circle's origin
            group.append((name, seq[lo:] + seq[:hi - len(seq)] if wraps else seq[lo:hi]))
            where[name] = (contig, lo)
            new_closed[name] = (first and lo == 0, last and hi == len(seq))
            if probs and probs.get(contig) is not None:
                pc = probs[contig]
                new_probs[name] = (np.concatenate([pc[lo:], pc[:hi - len(seq)]]) if wraps
                                   else pc[lo:hi])
        groups.append(group)
    return groups, new_probs, new_closed, where


def _on_record(g: GeneCall, contig: str, offset: int, length: int) -> GeneCall:
    """A piece's call back on its record; a call of a circle's piece across the origin that
    lies wholly after it starts among the record's first bases."""
    start, end = g.start + offset, g.end + offset
    if start >= length:
        start, end = start - length, end - length
    return dataclasses.replace(g, contig=contig, start=start, end=end)


def _decode_records(groups, probs, params, closed, procedure, bank, progress,
                    workers=1, circular=frozenset()) -> list[GeneCall]:
    """The calls of ``call_genes_multi`` once its arguments are checked and resolved; each
    group is one record's pieces (:func:`split_at_gaps`), decoded together under ``meta``."""
    records = [r for g in groups for r in g]
    if procedure == "single":
        dec = GenomeDecoder(records, probs, params, closed)
        return circular_calls(dec, dec.train(), records, probs, circular)
    jobs = ((list(g), {c: probs.get(c) for c, _ in g} if probs else None, params,
             {c: closed_ends(closed, c) for c, _ in g}, g[0][0] in circular) for g in groups)
    workers = min(workers, len(groups))
    if workers > 1:
        from genoctx.pools import spawn_pool

        # map keeps the records' order; without a pool (None) they are decoded in turn
        pool = spawn_pool(workers, initializer=_set_worker_bank, initargs=(bank,))
        if pool is not None:
            with pool:
                return _collect(groups, pool.map(_decode_meta_job, jobs), progress)
    return _collect(groups, (_decode_meta(job, bank) for job in jobs), progress)


def _collect(groups, results, progress) -> list[GeneCall]:
    out = []
    for group, calls in zip(groups, results):
        out += calls
        if progress is not None:
            progress(sum(len(seq) for _, seq in group))
    return out


_WORKER_BANK = None  # in a worker process: the bank its jobs use (None: the shipped one)


def _set_worker_bank(bank) -> None:
    global _WORKER_BANK
    _WORKER_BANK = bank


def _decode_meta_job(job) -> list[GeneCall]:
    """:func:`_decode_meta` in a worker process, with the bank its initializer set."""
    return _decode_meta(job, _WORKER_BANK)


def _decode_meta(job, bank) -> list[GeneCall]:
    """One record (its pieces between gaps) decoded from the best model of ``bank`` (None: the
    shipped one)."""
    pieces, probs, params, closed, circular = job
    if bank is None:
        from genoctx.heads.meta_models import default_bank

        bank = default_bank()
    if probs is not None and all(p is None for p in probs.values()):
        probs = None
    dec = GenomeDecoder(pieces, probs, params, closed)
    chosen, model = dec.train_meta(bank)
    calls = circular_calls(dec, chosen, pieces, probs,
                           {pieces[0][0]} if circular else frozenset())
    for g in calls:
        g.attrs["model"] = model
    return calls


CIRCLE_WINDOW = 50_000  # bp on each side of a circle's origin that are decoded again


def circular_names(names: list[str], circular: bool | Collection[str]) -> frozenset[str]:
    """The records of ``names`` that ``circular`` marks: all of them for True, else those it
    names."""
    return frozenset(names) if circular is True else frozenset(circular or ()) & set(names)


def gap_middle(spans, lo: int, hi: int) -> int | None:
    """The middle of the widest stretch of ``[lo, hi)`` that no ``(start, end)`` span covers;
    None when the spans cover all of it."""
    best, at, reach = 0, None, lo
    for s, e in sorted(spans):
        if e <= reach:
            continue
        if s > reach and min(s, hi) - reach > best:
            best, at = min(s, hi) - reach, (reach + min(s, hi)) // 2
        reach = e
        if reach >= hi:
            return at
    if hi - reach > best:
        at = (reach + hi) // 2
    return at


def circular_calls(dec: GenomeDecoder, chosen: list[np.ndarray], records, probs,
                   circular: Collection[str]) -> list[GeneCall]:
    """``dec``'s calls of ``chosen``, with each record named in ``circular`` decoded as a circle.

    The trained decoder decoded each record as a line from its origin (closed ends), which
    loses a gene across the origin and the upstream sequence of a gene just after it. For a
    circular record the stretch of up to ``CIRCLE_WINDOW`` bases on each side of the origin is
    decoded again, joined across it, with the same statistics (open ends, far from what is
    kept): between two points near the middle of each side that no gene of either decode
    covers, its genes replace the first decode's. A gene across the origin has ``end`` > the
    record's length.
    """
    calls = dec.calls(chosen)
    seqs = dict(records)
    ring = [c for c, _ in records if c in circular and len(seqs[c]) >= 2]
    if not ring:
        return calls
    by_contig: dict[str, list[GeneCall]] = {}
    for g in calls:
        by_contig.setdefault(g.contig, []).append(g)
    half = {c: min(CIRCLE_WINDOW, len(seqs[c]) // 2) for c in ring}
    # the window of a circle of n bases: positions n - w .. n - 1, then 0 .. w - 1
    windows = [(c, seqs[c][len(seqs[c]) - half[c]:] + seqs[c][:half[c]]) for c in ring]
    wprobs = None
    if probs:
        wprobs = {c: np.concatenate([probs[c][len(probs[c]) - half[c]:], probs[c][:half[c]]])
                  for c in ring if probs.get(c) is not None}
    win = dec.like(windows, wprobs)  # open: the window's edges are no ends of the circle
    found: dict[str, list[GeneCall]] = {}
    for g in win.calls(win._finish()):
        found.setdefault(g.contig, []).append(g)
    for c in ring:
        n, w = len(seqs[c]), half[c]
        shift = n - w  # window position q is position (q + shift) % n of the circle
        line = [((g.start - shift) % n, g) for g in by_contig.get(c, [])]
        spans = [(g.start, g.end) for g in found.get(c, [])]
        for q, g in line:  # the first decode's genes in window positions (also wrapped)
            spans += [(q, q + g.end - g.start), (q - n, q + g.end - g.start - n)]
        left, right = gap_middle(spans, w // 4, 3 * w // 4), gap_middle(spans, 5 * w // 4, 7 * w // 4)
        if left is None or right is None:
            continue
        drop = {id(g) for q, g in line if left <= q and q + g.end - g.start <= right}
        new = [g for g in found.get(c, []) if left <= g.start and g.end <= right]
        by_contig[c] = [g for g in by_contig.get(c, []) if id(g) not in drop] + [
            dataclasses.replace(g, start=(g.start + shift) % n,
                                end=(g.start + shift) % n + g.end - g.start) for g in new]
    order = {c: i for i, (c, _) in enumerate(records)}
    return sorted((g for v in by_contig.values() for g in v),
                  key=lambda g: (order[g.contig], g.start, g.end, g.strand))


def call_genes(seq: bytes, probs: np.ndarray | None = None, *, contig: str = "",
               params: DecoderParams | None = None, closed: bool = False,
               circular: bool = False, procedure: str = "auto") -> list[GeneCall]:
    """Call genes on one sequence: ``seq`` (+ optional probs [L, 17]) → list of GeneCall.
    ``circular``: a whole circular replicon, genes may cross its origin (see
    :func:`call_genes_multi`).

    Example:
        >>> from genoctx.io.fasta import iter_records
        >>> name, seq = next(iter_records("genome.fna"))
        >>> genes = call_genes(seq, contig=name)   # sequence only; add probs [L, 17] if you have them
    """
    return call_genes_multi([(contig, seq)], None if probs is None else {contig: probs},
                            params=params, closed=closed, circular=circular,
                            procedure=procedure)


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
