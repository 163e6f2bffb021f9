"""Translation-start signals: start codon, ribosome binding site, upstream composition.

Each candidate start gets three log-likelihood ratios of "a real start" against "any candidate
start of the genome", learned per genome (Prodigal's design, Hyatt et al. 2010):

* codon type: ATG / GTG / TTG (starts running in from an open contig edge have no signal);
* ribosome binding site: a piece of the Shine-Dalgarno core AGGAGG (3 to 6 bp exact, or 5 to 6
  bp with one mismatch inside the motif) ending 3 to 15 bp before the start codon, binned by
  motif kind and spacer; among the classes present upstream of a start, the one that scores
  highest under the current weights is the start's class (class 0: no motif);
* upstream composition: one base LLR per position at -1, -2 and -15 … -44 (the RBS region in
  between is left to the motif model).

The weights are self-trained (:func:`train_start_model`): in every ORF of the training genes the
best start under the coding score plus the current start weights is taken as real, the weights
are re-estimated from those starts, and this repeats until the choice settles. Counts are
smoothed with pseudo-counts (spread as a universal prior in this layout when one is given, else as
the background), so a rare class keeps an LLR near its prior (or 0) instead of swinging to ±4.

Legend: L = strand length, N = candidate starts, R = RBS classes, P = upstream positions,
K = motif kinds, B = 4 bases (+ N).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from genoctx.heads.orfs import EDGE_START, strand_groups

SD = "AGGAGG"
MOTIF_KINDS = ((3, 0), (4, 0), (5, 0), (6, 0), (5, 1), (6, 1))  # (length, mismatches)
SPACER_BINS = ((3, 4), (5, 10), (11, 12), (13, 15))
NUM_RBS = 1 + len(MOTIF_KINDS) * len(SPACER_BINS)  # class 0: no motif
NUM_TYPES = 4  # ATG GTG TTG edge
PWM_OFFSETS = np.array([-1, -2, *range(-15, -45, -1)])  # upstream composition positions
LLR_CLIP = 4.0
ROWS = 1 << 16  # starts scored per block (memory)
_BASE = {"A": 0, "C": 1, "G": 2, "T": 3}


def _motif_tables(edge: int = 1) -> list[np.ndarray]:
    """Per motif kind, a lookup over every k-mer code (base-4, first base most significant)
    that says whether it is a motif of that kind, [4**length] each; a one-mismatch motif's
    mismatch lies at least ``edge`` bases in from either end."""
    out = []
    for length, mism in MOTIF_KINDS:
        table = np.zeros(4 ** length, dtype=bool)
        for i in range(len(SD) - length + 1):
            core = [_BASE[c] for c in SD[i:i + length]]
            variants = [core] if mism == 0 else [
                core[:p] + [b] + core[p + 1:] for p in range(edge, length - edge) for b in range(4)
                if b != core[p]]
            for v in variants:
                table[sum(b * 4 ** (length - 1 - t) for t, b in enumerate(v))] = True
        out.append(table)
    return out


_MOTIF_TABLES = _motif_tables()


def _motif_bits() -> np.ndarray:
    """Over every code of the longest motif's k-mer, bit k set where its leading bases are a
    motif of kind k: every kind from one lookup, [4**width] uint8."""
    width = max(length for length, _ in MOTIF_KINDS)
    codes = np.arange(4 ** width)
    bits = np.zeros(4 ** width, dtype=np.uint8)
    for k, (length, _) in enumerate(MOTIF_KINDS):
        bits |= _MOTIF_TABLES[k][codes >> (2 * (width - length))].astype(np.uint8) << k
    return bits


_MOTIF_BITS = _motif_bits()


def motif_hits(x: np.ndarray) -> np.ndarray:
    """Whether a motif of each kind starts at each base of the encoded strand ``x``, [K, L]."""
    n = len(x)
    hits = np.zeros((len(MOTIF_KINDS), n), dtype=bool)
    # one pass of the longest k-mer: code and the last N-like base within it at each start,
    # x padded with N so every start has a full window; shorter k-mers are its leading bases
    width = max(length for length, _ in MOTIF_KINDS)
    padded = np.concatenate([np.asarray(x), np.full(width, 4, dtype=np.asarray(x).dtype)])
    digit = np.minimum(padded, 3).astype(np.uint16)  # 2 bits a base: 12 bits fit in uint16
    unknown = padded >= 4
    code = np.zeros(n, dtype=np.uint16)
    bad_at = np.full(n, width, dtype=np.int8)  # offset of the first non-ACGT base in the window
    for t in range(width - 1, -1, -1):
        code += digit[t:t + n] << (2 * (width - 1 - t))
        bad_at[unknown[t:t + n]] = t
    bits = _MOTIF_BITS.take(code)  # every kind at once; the padding's N fails bad_at below
    for k, (length, _) in enumerate(MOTIF_KINDS):
        if n < length:
            continue
        m = n - length + 1
        found = (bits[:m] & np.uint8(1 << k)).astype(bool)
        hits[k, :m] = found & (bad_at[:m] >= length)
    return hits


def rbs_presence(hits_KL: np.ndarray, starts: np.ndarray) -> np.ndarray:
    """Which RBS classes occur upstream of each start, [N, R] (class 0 always)."""
    pres = np.zeros((len(starts), NUM_RBS), dtype=bool)
    pres[:, 0] = True
    for k, (length, _) in enumerate(MOTIF_KINDS):
        for b, (lo, hi) in enumerate(SPACER_BINS):
            col = pres[:, 1 + k * len(SPACER_BINS) + b]
            for spacer in range(lo, hi + 1):
                pos = starts - spacer - length
                ok = pos >= 0
                col[ok] |= hits_KL[k, pos[ok]]
    return pres


def rbs_presence_many(xs: list[np.ndarray], starts: list[np.ndarray]) -> list[np.ndarray]:
    """:func:`rbs_presence` of many strands, a few passes for all (the same values): the
    strands of each :func:`genoctx.heads.orfs.strand_groups` run are scanned end to end with N
    between them, far enough apart that no motif window or spacer reaches from one into
    another. Per strand, [N_i, R]."""
    return [p for g in strand_groups([len(x) for x in xs])
            for p in _rbs_presence_joined(xs[g], starts[g])]


def _rbs_presence_joined(xs: list[np.ndarray], starts: list[np.ndarray]) -> list[np.ndarray]:
    """:func:`rbs_presence_many` of one run of strands, in one pass."""
    gap = 2 * (max(length for length, _ in MOTIF_KINDS) + max(hi for _, hi in SPACER_BINS))
    sizes = np.array([len(x) for x in xs], dtype=np.int64)
    origin = np.concatenate([[gap], np.cumsum(sizes + gap)[:-1] + gap])
    joined = np.full(int(origin[-1] + sizes[-1] + gap), 4, dtype=np.asarray(xs[0]).dtype)
    for x, o in zip(xs, origin.tolist()):
        joined[o:o + len(x)] = x
    counts = [len(s) for s in starts]
    shifted = np.concatenate([np.asarray(s, dtype=np.int64) + o for s, o in zip(starts, origin)])
    pres = rbs_presence(motif_hits(joined), shifted)
    return np.split(pres, np.cumsum(counts)[:-1])


def rbs_classes(pres_NR: np.ndarray, starts: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """RBS class of each start: the present class of highest weight (ties: the later class)."""
    del starts  # unused; the argument keeps decoder_fit's call working
    # classes from the highest weight down (ties: the later class first); the first present
    # one wins (class 0 is always present)
    order = np.lexsort((-np.arange(pres_NR.shape[1]), -np.asarray(weights)))
    return order[np.argmax(pres_NR[:, order], axis=1)].astype(np.int8)


def presence_patterns(pres_NR: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The distinct rows of ``pres_NR`` and, for each start, the index of its row: a training
    loop then finds RBS classes as ``rbs_classes(rows, None, w)[index]``, the same classes
    over a few hundred rows instead of every candidate start."""
    packed = np.packbits(np.asarray(pres_NR, dtype=bool), axis=1)
    if packed.shape[1] > 8:  # more than 64 classes: rows as they are
        rows, index = np.unique(pres_NR, axis=0, return_inverse=True)
        return rows, index.ravel()
    wide = np.zeros((len(packed), 8), dtype=np.uint8)  # each row's bits as one 64-bit key
    wide[:, :packed.shape[1]] = packed
    _, first, index = np.unique(wide.view(np.uint64).ravel(), return_index=True,
                                return_inverse=True)
    return pres_NR[first], index.ravel()


def pwm_bases(x: np.ndarray, starts: np.ndarray) -> np.ndarray:
    """Bases at :data:`PWM_OFFSETS` around each start (4 where outside or not ACGT), [N, P]."""
    pos_NP = starts[:, None] + PWM_OFFSETS[None, :]
    inside = (pos_NP >= 0) & (pos_NP < len(x))
    return np.where(inside, x[np.clip(pos_NP, 0, len(x) - 1)], 4).astype(np.int8)


def initial_rbs_weights() -> np.ndarray:
    """Weights before any training: longer exact motifs first (they only break ties), [R]."""
    w = np.zeros(NUM_RBS)
    for k, (length, mism) in enumerate(MOTIF_KINDS):
        w[1 + k * len(SPACER_BINS): 1 + (k + 1) * len(SPACER_BINS)] = 1e-3 * (length - 1.5 * mism)
    return w


@dataclass
class StartModel:
    """Log-likelihood ratios: codon type [4], RBS class [R], upstream composition [P, 5]."""

    type_llr: np.ndarray
    rbs_llr: np.ndarray
    pwm_llr_PB: np.ndarray

    def features(self, stype: np.ndarray, rbs: np.ndarray, bases_NP: np.ndarray) -> np.ndarray:
        """Per-start [type, rbs, composition] LLRs, shape [N, 3]; edge starts score 0."""
        cols = np.arange(len(PWM_OFFSETS))[None, :]
        pwm = np.empty(len(bases_NP))
        for i in range(0, len(bases_NP), ROWS):  # in blocks: the [N, P] gather stays small
            pwm[i:i + ROWS] = self.pwm_llr_PB[cols, bases_NP[i:i + ROWS]].sum(axis=1)
        out = np.stack([self.type_llr[stype], self.rbs_llr[rbs], pwm], axis=1)
        out[stype == EDGE_START] = 0.0
        return out


@dataclass
class StartCounts:
    """Counts at real starts (``pos``) and at all candidate starts (``all``)."""

    type_pos: np.ndarray
    type_all: np.ndarray
    rbs_pos: np.ndarray
    rbs_all: np.ndarray
    pwm_pos: np.ndarray
    pwm_all: np.ndarray

    @staticmethod
    def count(stype, rbs, bases_NP, is_pos) -> StartCounts:
        def bc(v, n, mask):
            return np.bincount(v[mask].astype(np.int64), minlength=n).astype(np.float64)

        def pc(mask):
            b = bases_NP[mask].astype(np.int64)
            rows = np.broadcast_to(np.arange(b.shape[1]), b.shape)
            return np.bincount((rows * 5 + b).ravel(), minlength=b.shape[1] * 5).reshape(-1, 5)

        real = stype != EDGE_START
        return StartCounts(bc(stype, NUM_TYPES, real & is_pos), bc(stype, NUM_TYPES, real),
                           bc(rbs, NUM_RBS, real & is_pos), bc(rbs, NUM_RBS, real),
                           pc(real & is_pos).astype(np.float64), pc(real).astype(np.float64))

    def __add__(self, other: StartCounts) -> StartCounts:
        return StartCounts(*(getattr(self, f) + getattr(other, f) for f in self.__dataclass_fields__))

    def normalized(self) -> StartCounts:
        """The same counts scaled to frequencies (a prior of unit mass per table)."""
        def nz(a):
            s = a.sum(axis=-1, keepdims=True)
            return a / np.maximum(s, 1e-12)
        return StartCounts(*(nz(getattr(self, f)) for f in self.__dataclass_fields__))

    def matches_layout(self) -> bool:
        """Whether the tables have this module's shapes (a prior fitted for another layout
        — other RBS classes or composition positions — does not)."""
        return (len(self.type_pos) == NUM_TYPES and len(self.rbs_pos) == NUM_RBS
                and np.shape(self.pwm_pos) == (len(PWM_OFFSETS), 5))


def _llr(pos, all_, prior_pos, prior_all, strength: float) -> np.ndarray:
    """log P(x | real) / P(x | any start), both smoothed with ``strength`` pseudo-counts spread
    as the prior's frequencies; without a prior (None) the real-start side is smoothed towards
    the background, so an empty or rare cell's LLR shrinks towards 0."""
    k = all_.shape[-1]
    pa = np.zeros_like(all_) if prior_all is None else prior_all
    q = (all_ + strength * pa + 0.5) / (all_.sum(-1, keepdims=True)
                                        + strength * pa.sum(-1, keepdims=True) + 0.5 * k)
    pp = q if prior_pos is None else prior_pos
    p = (pos + strength * pp) / (pos.sum(-1, keepdims=True) + strength * pp.sum(-1, keepdims=True))
    return np.clip(np.log(np.maximum(p, 1e-12) / q), -LLR_CLIP, LLR_CLIP)


def fit_start_model(counts: StartCounts | None, prior: StartCounts | None,
                    strength: float) -> StartModel:
    """Start LLRs from this genome's counts, smoothed with ``strength`` pseudo-counts.

    ``prior`` holds frequencies of a universal start model in this module's layout; without one
    (or with one of another layout) the smoothing pulls every LLR towards 0 and the RBS weights
    start from :func:`initial_rbs_weights`.
    """
    use_prior = prior is not None and prior.matches_layout()
    if counts is None:
        if not use_prior:
            return StartModel(np.zeros(NUM_TYPES), initial_rbs_weights(),
                              np.zeros((len(PWM_OFFSETS), 5)))
        counts = StartCounts(*(np.zeros_like(np.asarray(getattr(prior, f), dtype=np.float64))
                               for f in StartCounts.__dataclass_fields__))
    tables = []
    for name in ("type", "rbs", "pwm"):
        pos, all_ = getattr(counts, name + "_pos"), getattr(counts, name + "_all")
        if name == "pwm":  # the N column carries no signal
            pos, all_ = pos[:, :4], all_[:, :4]
        pp = pa = None
        if use_prior:
            pp = np.asarray(getattr(prior, name + "_pos"), dtype=np.float64)
            pa = np.asarray(getattr(prior, name + "_all"), dtype=np.float64)
            if name == "pwm":
                pp, pa = pp[:, :4], pa[:, :4]
        tables.append(_llr(pos, all_, pp, pa, strength))
    type_llr, rbs_llr, pwm4 = tables
    type_llr[EDGE_START] = 0.0
    pwm = np.concatenate([pwm4, np.zeros((len(PWM_OFFSETS), 1))], axis=1)
    return StartModel(type_llr, rbs_llr, pwm)


# --------------------------------------------------------------------------- self-training

@dataclass
class StartTable:
    """Start features of all candidates of one strand: codon type [N], RBS classes present
    [N, R], upstream bases [N, P], and the key of the ORF each belongs to [N]."""

    stype: np.ndarray
    pres_NR: np.ndarray
    bases_NP: np.ndarray
    orf: np.ndarray


def first_max_per_run(key: np.ndarray, group: np.ndarray) -> np.ndarray:
    """Position of the first maximum of ``key`` in each run of equal ``group`` values, in order
    (no sort: what a stable sort by (group, −key) would put first in each run)."""
    if not len(key):
        return np.zeros(0, dtype=np.int64)
    if np.isnan(key).any():  # as the sort has it: a NaN only where its run holds nothing else
        key = np.where(np.isnan(key), -np.inf, key)
    new = np.r_[True, group[1:] != group[:-1]]
    run = np.cumsum(new) - 1
    top = np.maximum.reduceat(key, np.flatnonzero(new))
    at = np.flatnonzero(key == top[run])
    return at[np.r_[True, run[at][1:] != run[at][:-1]]]


def best_in_group(score: np.ndarray, group: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """Index of the highest-``score`` entry of every ``group`` among entries in ``mask`` (ties:
    the first), in group order."""
    idx = np.flatnonzero(mask)
    g = group[idx]
    if np.all(g[1:] >= g[:-1]):  # groups in runs already (candidates sorted by ORF)
        return idx[first_max_per_run(score[idx], g)]
    order = idx[np.lexsort((-score[idx], group[idx]))]
    if len(order) == 0:
        return order
    return order[np.r_[True, group[order][1:] != group[order][:-1]]]


def train_start_model(tables: list[StartTable], coding: list[np.ndarray],
                      train_orfs: list[np.ndarray], weight: float, *, iters: int = 8,
                      strength: float = 50.0, prior: StartCounts | None = None) -> StartModel:
    """Self-train the start model (hard EM over the starts of the training ORFs).

    Args:
        tables: start features of each strand's candidates (or one table for all strands,
            ORF keys kept distinct, as the decoder passes them: one pass per round).
        coding: each candidate's coding part of the start-choice score (nats).
        train_orfs: per strand, a boolean [N] mask of candidates whose ORF is a training gene.
        weight: weight of the start LLRs against the coding part.
        iters: rounds of choose-best-start / re-estimate for codon type and RBS; the upstream
            composition is estimated once from the final choice.
        strength: pseudo-counts of the smoothing.
        prior: universal start frequencies in this module's layout, if any.

    The background ("any start") is every candidate start of the genome that is not an edge.
    """
    model = fit_start_model(None, prior, strength)
    real = [t.stype != EDGE_START for t in tables]
    if not any(r.any() for r in real):
        return model
    type_all = sum(np.bincount(t.stype[r], minlength=NUM_TYPES) for t, r in zip(tables, real))
    pwm_all = sum(_base_counts(t.bases_NP[r]) for t, r in zip(tables, real))
    best: list[np.ndarray] = []
    patterns = [presence_patterns(t.pres_NR) for t in tables]
    for it in range(iters + 1):
        rbs = [rbs_classes(rows, None, model.rbs_llr)[index] for rows, index in patterns]
        best = []
        for t, c, m, r, ok in zip(tables, coding, train_orfs, rbs, real):
            score = c + weight * (model.type_llr[t.stype] + model.rbs_llr[r])
            best.append(best_in_group(score, t.orf, m & ok))
        if it == iters:
            break
        counts = StartCounts(
            sum(np.bincount(t.stype[b], minlength=NUM_TYPES) for t, b in zip(tables, best)),
            type_all,
            sum(np.bincount(r[b], minlength=NUM_RBS) for r, b in zip(rbs, best)),
            sum(np.bincount(r[ok], minlength=NUM_RBS) for r, ok in zip(rbs, real)),
            pwm_all, pwm_all)
        new = fit_start_model(_as_float(counts), prior, strength)
        model = StartModel(new.type_llr, new.rbs_llr, model.pwm_llr_PB)
    # composition from the settled choice
    pwm_pos = sum(_base_counts(t.bases_NP[b]) for t, b in zip(tables, best))
    counts = StartCounts(type_all, type_all, np.ones(NUM_RBS), np.ones(NUM_RBS), pwm_pos, pwm_all)
    pwm = fit_start_model(_as_float(counts), prior, strength).pwm_llr_PB
    return StartModel(model.type_llr, model.rbs_llr, pwm)


ORF_START_THRESHOLD = 35.0  # nats: an ORF's best start trains the start model from this score


def train_start_model_orfs(table: StartTable, coding: np.ndarray, weight: float, gc: float, *,
                           rounds: int = 10, threshold: float = ORF_START_THRESHOLD,
                           strength: float = 50.0, prior: StartCounts | None = None
                           ) -> StartModel:
    """Self-train the start model over every ORF of the genome, as Prodigal trains its starts
    (its ``train_starts_sd``, read for the rule and written anew).

    In every ORF the best start under ``coding`` + ``weight`` × (codon type + RBS) is taken as
    real where it scores at least ``threshold`` nats (halved, as Prodigal does, while at most
    one in 2,000 candidates passes); codon type and RBS are re-estimated from those starts
    against every candidate start, ``rounds`` times (smoothed as :func:`fit_start_model`).
    The upstream composition is then counted once at the final starts against the genome's
    G+C (A and T (1 − G+C) / 2 each, C and G G+C / 2), with one pseudo-count spread the same
    way at each position, so a genome's upstream bases are scored against its composition and
    not against the bases upstream of every candidate (most of them inside genes).

    Args:
        table: start features of every candidate (all strands, ORF keys distinct).
        coding: each candidate's coding part of the start-choice score (nats), [N].
        weight: weight of the type and RBS LLRs against the coding part.
        gc: the genome's G+C (clipped to 0.1 … 0.9, as Prodigal's background).
    """
    model = fit_start_model(None, prior, strength)
    real = table.stype != EDGE_START
    if not real.any():
        return model
    type_all = np.bincount(table.stype[real], minlength=NUM_TYPES).astype(np.float64)
    pwm_all = _base_counts(table.bases_NP[real]).astype(np.float64)
    best = np.zeros(0, dtype=np.int64)
    rows, index = presence_patterns(table.pres_NR)
    for _ in range(rounds):
        rbs = rbs_classes(rows, None, model.rbs_llr)[index]
        score = coding + weight * (model.type_llr[table.stype] + model.rbs_llr[rbs])
        best = best_in_group(score, table.orf, real)
        best = best[score[best] >= threshold]
        if len(best) * 2000 <= len(table.stype):
            threshold /= 2.0
        counts = StartCounts(
            np.bincount(table.stype[best], minlength=NUM_TYPES).astype(np.float64), type_all,
            np.bincount(rbs[best], minlength=NUM_RBS).astype(np.float64),
            np.bincount(rbs[real], minlength=NUM_RBS).astype(np.float64), pwm_all, pwm_all)
        new = fit_start_model(counts, prior, strength)
        model = StartModel(new.type_llr, new.rbs_llr, model.pwm_llr_PB)
    g = min(max(gc, 0.1), 0.9)
    background = np.array([(1.0 - g) / 2.0, g / 2.0, g / 2.0, (1.0 - g) / 2.0])
    pos = _base_counts(table.bases_NP[best])[:, :4].astype(np.float64)
    freq = (pos + background) / (pos.sum(axis=1, keepdims=True) + 1.0)
    pwm = np.clip(np.log(freq / background), -LLR_CLIP, LLR_CLIP)
    return StartModel(model.type_llr, model.rbs_llr,
                      np.concatenate([pwm, np.zeros((len(pwm), 1))], axis=1))


def _base_counts(bases_NP: np.ndarray) -> np.ndarray:
    """Counts of each base (and N) at each position, [P, 5] (one position at a time, so no
    [N, P] temporary)."""
    return np.array([np.bincount(bases_NP[:, p], minlength=5)[:5]
                     for p in range(bases_NP.shape[1])], dtype=np.int64).reshape(-1, 5)


def _as_float(c: StartCounts) -> StartCounts:
    return StartCounts(*(np.asarray(getattr(c, f), dtype=np.float64)
                         for f in StartCounts.__dataclass_fields__))
