"""Translation-start signals: start codon, Shine-Dalgarno motif and spacer, composition near starts.

Each candidate start gets three log-likelihood ratios of "the real start of its ORF" against
"any candidate start of a coding ORF", learned per genome from the current training genes and
smoothed towards a universal prior fitted on the train genomes (:mod:`genoctx.heads._fitted`):

* codon type: ATG / GTG / TTG (edge starts have no signal and score 0);
* ribosome binding site: the best exact match to a piece of AGGAGG (3 to 6 bp) at a spacer of
  3 to 15 bp before the start codon, binned like Prodigal's RBS classes; the class that scores
  highest under the current weights is the one a start is given;
* composition: a position weight matrix over the 24 bases before the start codon and the nine
  after it (it sees the RBS region too; the fitted weights share the evidence out).

Legend: N = candidate starts, P = PWM positions, B = 4 bases.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from genoctx.heads.orfs import EDGE_START

SD = "AGGAGG"
SD_LENGTHS = (3, 4, 5, 6)
SPACER_BINS = ((3, 4), (5, 10), (11, 12), (13, 15))
NUM_RBS = 1 + len(SD_LENGTHS) * len(SPACER_BINS)  # class 0: no motif
NUM_TYPES = 4  # ATG GTG TTG edge
PWM_OFFSETS = np.array(list(range(-24, 0)) + list(range(3, 12)))
_MAX_SPACER = SPACER_BINS[-1][1]


def _sd_substrings() -> dict[int, set[int]]:
    out: dict[int, set[int]] = {}
    code = {"A": 0, "C": 1, "G": 2, "T": 3}
    for m in SD_LENGTHS:
        out[m] = set()
        for i in range(len(SD) - m + 1):
            v = 0
            for ch in SD[i:i + m]:
                v = v * 4 + code[ch]
            out[m].add(v)
    return out


_SD_SUBS = _sd_substrings()


def sd_match_length(x: np.ndarray) -> np.ndarray:
    """Length (0 or 3..6) of the longest piece of AGGAGG starting at each base, shape [L]."""
    n = len(x)
    best = np.zeros(n, dtype=np.int8)
    for m in SD_LENGTHS:  # increasing, so longer matches overwrite shorter ones
        if n < m:
            break
        v = np.zeros(n - m + 1, dtype=np.int32)
        bad = np.zeros(n - m + 1, dtype=bool)
        for t in range(m):
            b = x[t:n - m + 1 + t]
            v = v * 4 + np.minimum(b, 3)
            bad |= b >= 4
        hit = np.isin(v, list(_SD_SUBS[m])) & ~bad
        best[: n - m + 1][hit] = m
    return best


def _spacer_bin(spacer: np.ndarray) -> np.ndarray:
    out = np.full(spacer.shape, -1, dtype=np.int8)
    for b, (lo, hi) in enumerate(SPACER_BINS):
        out[(spacer >= lo) & (spacer <= hi)] = b
    return out


def rbs_classes(sdlen: np.ndarray, starts: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """RBS class (0..NUM_RBS-1) of each start: the present motif/spacer class of highest weight."""
    best_cls = np.zeros(len(starts), dtype=np.int8)
    best_w = np.full(len(starts), weights[0], dtype=np.float64)
    for off in range(SD_LENGTHS[0] + SPACER_BINS[0][0], _MAX_SPACER + SD_LENGTHS[-1] + 1):
        pos = starts - off
        ok = pos >= 0
        m = np.where(ok, sdlen[np.maximum(pos, 0)], 0)
        sbin = _spacer_bin(off - m.astype(np.int64))
        has = ok & (m > 0) & (sbin >= 0)
        cls = np.where(has, 1 + (np.maximum(m, 3) - 3) * len(SPACER_BINS) + sbin, 0)
        w = weights[cls]
        better = has & (w > best_w)
        best_cls[better] = cls[better]
        best_w[better] = w[better]
    return best_cls


def pwm_bases(x: np.ndarray, starts: np.ndarray) -> np.ndarray:
    """Bases at :data:`PWM_OFFSETS` around each start (4 where outside or not ACGT), [N, P]."""
    pos_NP = starts[:, None] + PWM_OFFSETS[None, :]
    inside = (pos_NP >= 0) & (pos_NP < len(x))
    return np.where(inside, x[np.clip(pos_NP, 0, len(x) - 1)], 4).astype(np.int8)


@dataclass
class StartModel:
    """Log-likelihood ratios: codon type [4], RBS class [NUM_RBS], PWM [P, 5] (column 4 is N)."""

    type_llr: np.ndarray
    rbs_llr: np.ndarray
    pwm_llr_PB: np.ndarray

    def features(self, stype: np.ndarray, rbs: np.ndarray, bases_NP: np.ndarray) -> np.ndarray:
        """Per-start [type, rbs, composition] scores, shape [N, 3]; edge starts score 0."""
        pwm = self.pwm_llr_PB[np.arange(len(PWM_OFFSETS))[None, :], bases_NP].sum(axis=1)
        out = np.stack([self.type_llr[stype], self.rbs_llr[rbs], pwm], axis=1)
        out[stype == EDGE_START] = 0.0
        return out


@dataclass
class StartCounts:
    """Counts at real starts (``pos``) and at all candidate starts (``all``) of training ORFs."""

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


def _llr(pos: np.ndarray, all_: np.ndarray, prior_pos: np.ndarray, prior_all: np.ndarray,
         strength: float) -> np.ndarray:
    p = (pos + strength * prior_pos + 0.5) / (pos.sum(-1, keepdims=True) + strength + 0.5 * pos.shape[-1])
    q = (all_ + strength * prior_all + 0.5) / (all_.sum(-1, keepdims=True) + strength + 0.5 * all_.shape[-1])
    return np.log(p / q)


def fit_start_model(counts: StartCounts | None, prior: StartCounts, strength: float) -> StartModel:
    """Start LLRs from this genome's counts, smoothed towards the universal ``prior``.

    ``prior`` holds frequencies; ``strength`` is its weight in pseudo-counts.
    """
    if counts is None:
        counts = StartCounts(*(np.zeros_like(getattr(prior, f)) for f in prior.__dataclass_fields__))
    type_llr = _llr(counts.type_pos, counts.type_all, prior.type_pos, prior.type_all, strength)
    type_llr[EDGE_START] = 0.0
    rbs_llr = _llr(counts.rbs_pos, counts.rbs_all, prior.rbs_pos, prior.rbs_all, strength)
    pwm = _llr(counts.pwm_pos, counts.pwm_all, prior.pwm_pos, prior.pwm_all, strength)
    pwm[:, 4] = 0.0
    return StartModel(type_llr, rbs_llr, pwm)
