"""Spliced gene-structure decoder: per-base class probabilities + sequence → eukaryotic genes.

```python
from genoctx.heads.spliced_decoder import decode, decode_many
from genoctx.io.writers import write_spliced_gff3

genes = decode(seq, probs_L17, contig="I")       # probs from heads.annotation.predict_probs
g = genes[0]
g.strand, g.cds, g.introns  # -1, ((s0, e0), (s1, e1), ...), ((e0, s1), ...): 0-based half-open
write_spliced_gff3("genes.gff3", genes, {"I": len(seq)})  # gene → mRNA → exon + CDS
```

One Viterbi pass over a small state machine whose emissions are the annotation head's
log-probabilities (:mod:`genoctx.heads.classes`; by default divided by their mean over the input,
see :func:`decode_many`) and whose transitions are gated by the sequence,
so every decoded gene is a valid spliced open reading frame on either strand: it begins with ATG,
ends with an in-frame stop codon, has no in-frame stop in between (also across splice junctions),
and every intron begins GT and ends AG (read along the gene's strand) and is at least
``min_intron`` bases long. Genes whose CDS is shorter than ``min_cds`` are dropped afterwards
(a length floor is not a Markov property; the drop is the one step outside the Viterbi).

The machine runs in forward time (left to right on the + strand), for both strands at once.
``q`` is the *forward codon position*, the order in which a codon's bases are met reading the +
strand: ``q = phase`` on the + strand and ``q = 2 - phase`` on the − strand, so a − strand gene
is met stop codon first. Its signals read forward are: entry codon TTA/CTA/TCA (a stop),
exit codon CAT (ATG), introns CT…AC.

=============  ======  =====================================================================
state          count   meaning (emission)
=============  ======  =====================================================================
``IG``         1       outside CDS and introns: intergenic, UTR, RNA genes
                       (log of 1 − P(CDS) − P(intron))
``N±q``        3 + 3   the first codon met: the start codon ATG (+) or the stop codon (−); kept
                       unsplit (log P(CDS± phase))
``E±q``        3 + 3   a coding base at forward codon position q (log P(CDS± phase))
``X±1, X±2``   2 + 2   positions 1 and 2 of a codon that an intron split (log P(CDS± phase))
``T±q, U±1/2`` 5 + 5   with ``min_exon``: copies of E and X for the last exon met (after an
                       intron, before the exit codon), which may be shorter than the floor
``F±k``        6 + 8   first base of an intron (log P(intron±))
``I±k``        6 + 8   later intron bases, self loop (log P(intron±))
=============  ======  =====================================================================

``k`` is the intron's phase (the forward codon position of the next coding base, 0/1/2) together
with the part of the split codon already read when that part could begin a stop codon (the + strand
remembers T, TA, TG; the − strand T, C, TT, CT, TC); so a split codon is checked against the stop
codons when its last base is read after the acceptor. Transitions (``t-1 → t``):

- ``IG → N0`` where the entry codon starts at ``t``; ``N0 → N1 → N2 → E0``;
- ``E0 → E1 → E2``; ``E2 → E0`` unless the codon just completed is a stop (split codons:
  ``X1 → X2 → E0``, checked at the acceptor);
- ``E2 → IG`` where the codon just completed is the exit codon (stop on +, CAT on −); split codons
  never end a gene, so start and stop codons are never split by an intron;
- ``E2 | X2 | N2 → F(0)``, ``E0 → F(1, prefix)``, ``E1 → F(2, prefix)`` where the intron's first two
  bases are GT (+) / CT (−), and the codon completed before a phase-0 intron is not a stop;
- ``F(k)`` at ``t0`` → ``I(k)`` at ``t0 + min_intron - 1`` (the bases between are forced intron: the
  minimum length, as a jump in the recursion rather than a chain of states); ``I(k) → I(k)``;
- ``I(0) → E0``, ``I(1, p) → X1``, ``I(2, p) → X2`` where the intron's last two bases are AG (+) /
  AC (−) and the split codon so completed is not a stop. With ``min_exon`` (internal exons at
  least that long) these become jumps: ``I(k)`` at ``t0 - 1`` → the exon state ``min_exon - 1``
  bases on, the bases between forced exon in their frame and free of in-frame stops (checked
  from cumulative counts, as the intron's stretch is scored from cumulative sums); and steps
  ``I(k) → T0 | U1 | U2``, whose cycle ``T0 → T1 → T2`` only leaves by the exit codon, so a
  last exon of any length stays possible. An exon reaches a donor only through the jump.

Transition log-probabilities come from geometric lengths (``DecoderParams``: mean intergenic,
exon and intron lengths; both strands equally likely), so mirrored paths score the same and the
reverse complement of the input gives the mirrored genes. The path starts and ends in ``IG``
at a closed end of the sequence (the default); at an open one (``DecoderParams.partial_ends``:
the sequence goes on beyond it, as a contig of a draft assembly does) it may start in an exon
or intron state (``E``, ``T``, or an intron without a remembered prefix) and end in any exon or
intron state but ``N`` and ``F``, so a gene may run off the end: it is kept cut to its whole
codons and marked ``partial``. Near the start no intron begins at the first base or ends
within ``min_intron`` bases, so a gene cut at one end scores as its mirror cut at the other.
Entering and leaving an intron also scores the splice sites' context (``splice_weight`` × the
log-odds of :mod:`genoctx.heads.splice_sites`, fitted on the train eukaryotes): the
donor ``MAG|GTRAGT`` and the acceptor ``YYYY…CAG|G`` beyond the GT / AG the gates require.
The CDS states' emissions are the head's log-scores × ``head_weight`` plus ``coding_weight`` ×
the per-base log-odds of a coding model (:func:`coding_tracks`; by default the shipped
:mod:`genoctx.heads.eukaryote_coding`, fitted on the train eukaryotes' CDS), self-trained on the
input by default (``self_train_rounds``: decode, refit on the called CDS, decode again).
Calls lying mostly in repeats (:mod:`genoctx.heads.repeats`: k-mers that recur in the input;
``max_repeat_fraction``) are dropped after each decode, as gene finders run on soft-masked
genomes.

Sequences of a batch run together (the batch is the vector dimension of every step); the loop is
over positions, each step a handful of numpy operations on a ``[B, S, K]`` array: about 10 s of
CPU per megabase for one long contig, less per base for batches of records. Back-pointers take
one byte per state and base.
Legend: L = sequence length, B = batch, S = states (45), K = predecessors per state (4),
T = positions in a block, C = emission channels (9).
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from itertools import pairwise

import numpy as np

from genoctx.errors import InputError
from genoctx.heads.classes import CDS_MINUS, CDS_PLUS, INDEX, NUM_CLASSES
from genoctx.heads.orfs import GAP_BASES, encode, gap_mask
from genoctx.io.fasta import reverse_complement

try:  # the Viterbi's position loop and traceback compiled (_native.c); where they are not
    # built, numpy and Python
    from genoctx.heads._native import traceback as _traceback_c
    from genoctx.heads._native import viterbi as _viterbi
except ImportError:
    _viterbi = _traceback_c = None

NEG = -1e30  # log(0) that stays finite under addition (no inf - inf)
# CDS emission inside an assembly gap (DecoderParams.gap_bases): a cost no path pays over 50
# bases, small enough that the exon jumps' cumulative sums keep their precision (NEG would not)
GAP_SCORE = -1e4
_BASES = "ACGT"

# Emission channels: 0 IG, 1-3 CDS+ at q, 4-6 CDS- at q, 7 intron+, 8 intron-.
_CH_IG, _CH_INTRON = 0, {1: 7, -1: 8}


def _ch_cds(strand: int, q: int) -> int:
    return 1 + q if strand > 0 else 4 + q


@dataclass(frozen=True)
class DecoderParams:
    """Length priors (geometric, generic for eukaryotes: not fitted to any genome) and floors."""

    min_intron: int = 30
    # internal exons (between two introns) are at least this long; 0: no floor. Without it a
    # fifth to a third of the decoded internal exons on the train chunks were under 20 bp (under
    # 1% annotated): two good splice sites paid for them. 40, chosen on the train chunks held out
    # by species (15, 20, 25, 30, 40, 50): exon F1 0.842 / 0.471 → 0.851 / 0.476, intron F1
    # 0.562 / 0.401 → 0.589 / 0.416 (A. thaliana / D. melanogaster; docs/results.md)
    min_exon: int = 40
    # genes with a shorter CDS (stop included) are dropped; 150 rather than 60 on the train
    # chunks (A. thaliana, D. melanogaster): 1,395 / 1,087 calls → 896 / 780 for 466 / 244
    # annotated transcripts, exon F1 +0.016 / +0.008, intron F1 +0.015 / +0.015 (docs/results.md)
    min_cds: int = 150
    mean_intergenic: float = 3000.0
    mean_exon: float = 150.0
    mean_intron: float = 150.0
    floor: float = 1e-6         # probabilities are clipped here before the log
    scaled: bool = True         # divide by the prior (hybrid HMM): see decode_many
    # × the splice-site matrices' log-odds (heads.splice_sites); 0: off. 8 rather than 1, chosen
    # on the train chunks held out by species (matrices and coding model fitted on the other
    # species): exon F1 0.799 / 0.459 → 0.828 / 0.475, intron F1 0.517 / 0.392 → 0.546 / 0.403
    # (A. thaliana / D. melanogaster; benchmarks/eukaryote_train_chunks.py --held-out). The
    # sites are scored since by logistic regressions over wider windows with base pairs
    # (splice_sites.fit_site_models): held out the same way, at × 1 / 2 / 4 / 8 exon F1
    # 0.826 / 0.838 / 0.851 / 0.862 and 0.672 / 0.682 / 0.696 / 0.712, intron F1
    # 0.546 / 0.560 / 0.577 / 0.598 and 0.515 / 0.509 / 0.511 / 0.496 (the matrices at × 8:
    # exon F1 0.853 / 0.693, intron F1 0.587 / 0.485; --splice-model pwm / lr); at × 12 / 16
    # exon F1 0.868 / 0.863 and 0.719 / 0.717, intron F1 0.617 / 0.624 and 0.512 / 0.487:
    # × 12, best on both species' exons and on D. melanogaster's introns
    splice_weight: float = 12.0
    # × the head's log-scores and × a coding model's per-base log-odds (the shipped
    # heads.eukaryote_coding model, fitted on the train chunks' CDS; 0: off). Chosen on the
    # train chunks held out by species (benchmarks/eukaryote_train_chunks.py --held-out)
    head_weight: float = 0.25
    coding_weight: float = 5.0
    # self-training of the coding model on the input (heads.eukaryote_coding.fit_on_calls):
    # rounds of decode → refit on the decoded CDS → decode again, the input's own log-odds
    # blended in at up to ``self_train_weight``; 0 rounds: the prior model alone. One round at
    # 0.5, chosen on the train chunks held out by species: exon F1 0.828 / 0.475 → 0.842 /
    # 0.471, intron F1 0.546 / 0.403 → 0.562 / 0.401 (A. thaliana / D. melanogaster; weights
    # 0.25, 0.75, 1 and two rounds no better on the mean; docs/results.md)
    self_train_rounds: int = 1
    self_train_weight: float = 0.5
    # calls with more than this share of their CDS bases in repeats are dropped, before the
    # self-training fit and at the end (heads.repeats: bases covered by a canonical k-mer of
    # ``repeat_k`` bases seen at least ``repeat_min_count`` times in the input); 1: off. 0.2 of
    # 16-mers seen 3 times, chosen on the train chunks held out by species (0.1-0.7, counts 2, 3,
    # 5): exon F1 0.851 / 0.476 → 0.853 / 0.693, intron F1 0.589 / 0.416 → 0.587 / 0.485
    # (A. thaliana / D. melanogaster); count 2 drops annotated genes (A. thaliana exon recall
    # 0.834 → 0.720-0.784); docs/results.md
    max_repeat_fraction: float = 0.2
    repeat_k: int = 16
    repeat_min_count: int = 3
    # records longer than ``window`` bases are decoded a window at a time (memory: the Viterbi
    # holds ~200 bytes per base of a batch): the next window starts ``window_overlap`` bases
    # before a window's end, or earlier at the start of a gene across that point, and the genes
    # before it are kept, so a gene near a seam is decoded whole in the next window. 0: off.
    window: int = 2_000_000
    window_overlap: int = 200_000
    # a run of at least this many unknown bases (N and other non-ACGT codes) is an assembly gap
    # of unknown size: no exon lies in it (its CDS emissions are GAP_SCORE), while introns and
    # intergenic stretches may span it, so a gene whose gap falls in an intron is still found.
    # Shorter runs are read through as in prokaryote mode (orfs.GAP_BASES). 0: off. The train
    # chunks hold 19 such runs (100-7,500 N), none in an annotated exon and one inside an
    # annotated intron: the calls there are the same with and without the rule
    # (benchmarks/eukaryote_train_chunks.py --held-out --splice-model lr --param gap_bases=0,50)
    gap_bases: int = GAP_BASES
    # genes may run off the ends of a record (the sequence goes on beyond them: a contig of a
    # draft assembly), as in prokaryote mode: such a gene is kept cut to its whole codons and
    # marked partial (GFF3 ``partial``/``start_range``/``end_range``; ``genoctx annotate
    # --open-ends``). Off by default: on the train chunks cut into 20-kb contigs it finds the
    # CDS near the cuts better (sensitivity / precision within 2 kb 0.884 / 0.897 → 0.899 /
    # 0.904 on A. thaliana, 0.922 / 0.501 → 0.971 / 0.525 on D. melanogaster), but where genes
    # lie whole within 150 bp of the ends (each annotated gene's locus) it runs them off the
    # ends instead of finding their start codons: exact CDS chains 0.234 → 0.108 and
    # 0.155 → 0.112 (benchmarks/spliced_contig_ends.py); an extra cost on the open ends brought
    # them back only slowly (A. thaliana: 0.201 at 40 nats, 0.234 at 80, no gene partial)
    partial_ends: bool = False

    def __post_init__(self):
        if self.min_intron < 5:
            raise ValueError(f"min_intron must be at least 5 (two splice signals), got "
                             f"{self.min_intron}")
        if self.gap_bases < 0:
            raise ValueError(f"gap_bases must be 0 (off) or positive, got {self.gap_bases}")
        if self.min_exon and self.min_exon < 3:
            raise ValueError(f"min_exon must be 0 (off) or at least 3, got {self.min_exon}")
        for name in ("mean_intergenic", "mean_exon", "mean_intron"):
            if getattr(self, name) <= 1:
                raise ValueError(f"{name} must be > 1, got {getattr(self, name)}")
        if not 0 <= self.max_repeat_fraction <= 1:
            raise ValueError(f"max_repeat_fraction must lie in [0, 1], got "
                             f"{self.max_repeat_fraction}")
        if self.window and not 0 < 2 * self.window_overlap < self.window:
            raise ValueError(f"window must be 0 (off) or more than twice window_overlap (> 0), "
                             f"got {self.window}, {self.window_overlap}")
        if self.self_train_rounds < 0 or not 0 <= self.self_train_weight <= 1:
            raise ValueError("self_train_rounds must be >= 0 and self_train_weight in [0, 1], "
                             f"got {self.self_train_rounds}, {self.self_train_weight}")


@dataclass(frozen=True)
class SplicedGene:
    """One decoded gene: CDS exons (forward coordinates, 0-based half-open, ascending).

    The CDS runs from the start codon through the stop codon; ``score`` is the mean head
    probability of the decoded class over the CDS bases.
    """

    contig: str
    strand: int
    cds: tuple[tuple[int, int], ...]
    score: float = float("nan")
    attrs: dict = field(default_factory=dict, compare=False)
    # (5', 3') along the strand: the gene runs off that end of its sequence (an open end,
    # DecoderParams.partial_ends); its CDS then holds whole codons only
    partial: tuple[bool, bool] = (False, False)

    @property
    def start(self) -> int:
        return self.cds[0][0]

    @property
    def end(self) -> int:
        return self.cds[-1][1]

    @property
    def introns(self) -> tuple[tuple[int, int], ...]:
        """Gaps between CDS exons, ascending."""
        return tuple((a[1], b[0]) for a, b in pairwise(self.cds))

    @property
    def cds_length(self) -> int:
        return sum(e - s for s, e in self.cds)


# ----------------------------------------------------------------------------- the machine

_STOPS = ("TAA", "TAG", "TGA")


@dataclass(frozen=True)
class _StrandSignals:
    """Forward-read signals of one strand (see the module docstring)."""

    strand: int
    entry: tuple[str, ...]
    exit: tuple[str, ...]
    stops: tuple[str, ...]
    donor: str
    acceptor: str

    @property
    def prefixes(self) -> dict[int, list[str | None]]:
        """Per intron phase, the remembered split-codon prefixes (None = any other)."""
        return {0: [""], 1: sorted({s[0] for s in self.stops}) + [None],
                2: sorted({s[:2] for s in self.stops}) + [None]}


_SIGNALS = (
    _StrandSignals(1, ("ATG",), _STOPS, _STOPS, "GT", "AG"),
    _StrandSignals(-1, tuple(reverse_complement(s) for s in _STOPS), ("CAT",),
                   tuple(reverse_complement(s) for s in _STOPS), reverse_complement("AG"), reverse_complement("GT")),
)


@dataclass
class _Rule:
    dst: int
    src: int            # index into the augmented vector [states, delayed F, NEG, delayed I]
    logp: float
    cond: tuple         # sequence test and its arguments, see _Signals.evaluate
    strand: int = 0
    delayed: bool = False
    q0: int = -1        # >= 0: a jump over the first min_exon bases after an acceptor, whose
                        # first base is at forward codon position q0 (E0, X1 or X2) ...
    fill: tuple = ()    # ... and the states of the stretch before ``dst``


class _Machine:
    """State table, predecessor lists and the rules that gate each transition."""

    def __init__(self, p: DecoderParams):
        self.names: list[str] = ["IG"]
        self.chan: list[int] = [_CH_IG]
        self.kind: list[str] = ["IG"]       # IG / exon / intron
        self.strand: list[int] = [0]
        idx: dict[str, int] = {"IG": 0}

        def add(name, chan, kind, strand):
            idx[name] = len(self.names)
            self.names.append(name)
            self.chan.append(chan)
            self.kind.append(kind)
            self.strand.append(strand)

        introns: dict[int, list[tuple[int, str | None]]] = {}
        for sig in _SIGNALS:
            sg = "+" if sig.strand > 0 else "-"
            for q in range(3):
                add(f"N{sg}{q}", _ch_cds(sig.strand, q), "exon", sig.strand)
            for q in range(3):
                add(f"E{sg}{q}", _ch_cds(sig.strand, q), "exon", sig.strand)
            for q in (1, 2):
                add(f"X{sg}{q}", _ch_cds(sig.strand, q), "exon", sig.strand)
            if p.min_exon:  # the last exon met, after an intron: any length, no donor
                for q in range(3):
                    add(f"T{sg}{q}", _ch_cds(sig.strand, q), "exon", sig.strand)
                for q in (1, 2):
                    add(f"U{sg}{q}", _ch_cds(sig.strand, q), "exon", sig.strand)
            introns[sig.strand] = [(ph, pre) for ph, pres in sig.prefixes.items() for pre in pres]
            for kind, letter in (("intron", "F"), ("intron", "I")):
                for ph, pre in introns[sig.strand]:
                    add(f"{letter}{sg}{ph}{pre if pre is not None else '*'}",
                        _CH_INTRON[sig.strand], kind, sig.strand)
        self.idx = idx
        self.S = len(self.names)
        # forward codon position of each coding state (-1: IG and intron states)
        self.q = np.asarray([int(n[2]) if n[0] in "NEXTU" else -1 for n in self.names])
        self.f_states = [i for i, n in enumerate(self.names) if n.startswith("F")]
        self.nF = len(self.f_states)
        self.neg_slot = self.S + self.nF

        ig_stay = math.log1p(-1 / p.mean_intergenic)
        ig_leave = math.log(1 / p.mean_intergenic) + math.log(0.5)
        ex_stay, ex_leave = math.log1p(-1 / p.mean_exon), math.log(1 / p.mean_exon)
        in_stay, in_leave = math.log1p(-1 / p.mean_intron), math.log(1 / p.mean_intron)
        # a gene cut by an open end of the sequence (DecoderParams.partial_ends): the path may
        # begin in a coding state or a prefix-free intron state (before the first base, at
        # the cost of entering a gene) and end in any coding or intron state after the last
        # base (at the cost of leaving that exon or intron), so that a gene cut at either end
        # of the reverse complement scores as its mirror; the first codon's own states (N)
        # stay closed
        letter = [n[0] if k != "IG" else "" for n, k in zip(self.names, self.kind)]
        self.open_start = np.asarray([i for i, (c, n) in enumerate(zip(letter, self.names))
                                      if c in ("E", "T") or (c == "I" and n[3:] in ("", "*"))],
                                     dtype=np.intp)
        self.open_end = np.asarray([i for i, c in enumerate(letter) if c and c not in "NF"],
                                   dtype=np.intp)
        # (less the stay into the first base: the state before it is no base of the sequence)
        self.open_start_logp = np.asarray([ig_leave - (in_stay if self.kind[i] == "intron"
                                                       else ex_stay) for i in self.open_start])
        self.open_end_logp = np.asarray([in_leave if self.kind[i] == "intron" else ex_leave
                                         for i in self.open_end])
        m, me = p.min_intron, p.min_exon
        self.min_exon = me
        self.exon_slot = self.neg_slot + 1  # + state: that state min_exon positions back
        # the forward successor of each exon state, for the forced stretch after an acceptor
        nxt = {}
        for sg in "+-":
            X1, X2 = idx[f"X{sg}1"], idx[f"X{sg}2"]
            E = [idx[f"E{sg}{q}"] for q in range(3)]
            nxt |= {X1: X2, X2: E[0], E[0]: E[1], E[1]: E[2], E[2]: E[0]}

        def acceptor(dst, src, cond, s):
            """The rules leaving intron state ``src`` into exon state ``dst`` (E0, X1, X2).
            With a floor on exon length: a jump to the state min_exon - 1 bases on (an exon
            that may reach a donor), and a step into the last-exon copy of ``dst`` (T0, U1, U2:
            any length, ends the gene)."""
            if not me:
                return [_Rule(dst, src, in_leave, cond, s)]
            chain = [dst]
            while len(chain) < me:
                chain.append(nxt[chain[-1]])
            last = idx[self.names[dst].replace("E", "T").replace("X", "U")]
            return [_Rule(last, src, in_leave, cond, s),
                    _Rule(chain[-1], self.exon_slot + src, in_leave + (me - 1) * ex_stay, cond,
                          s, q0=0 if self.names[dst][0] == "E" else int(self.names[dst][2]),
                          fill=tuple(chain[:-1]))]

        rules = [_Rule(0, 0, ig_stay, ("always",))]
        for sig in _SIGNALS:
            s, sg = sig.strand, "+" if sig.strand > 0 else "-"
            N = [idx[f"N{sg}{q}"] for q in range(3)]
            E = [idx[f"E{sg}{q}"] for q in range(3)]
            X1, X2 = idx[f"X{sg}1"], idx[f"X{sg}2"]
            rules += [
                _Rule(0, E[2], ex_leave, ("exit",), s),
                _Rule(N[0], 0, ig_leave, ("entry",), s),
                _Rule(N[1], N[0], ex_stay, ("always",)),
                _Rule(N[2], N[1], ex_stay, ("always",)),
                _Rule(E[0], N[2], ex_stay, ("always",)),
                _Rule(E[0], E[2], ex_stay, ("nostop",), s),
                _Rule(E[0], X2, ex_stay, ("always",)),
                _Rule(E[1], E[0], ex_stay, ("always",)),
                _Rule(E[2], E[1], ex_stay, ("always",)),
                _Rule(X2, X1, ex_stay, ("always",)),
            ]
            if me:
                T = [idx[f"T{sg}{q}"] for q in range(3)]
                U1, U2 = idx[f"U{sg}1"], idx[f"U{sg}2"]
                rules += [
                    _Rule(0, T[2], ex_leave, ("exit",), s),
                    _Rule(T[0], T[2], ex_stay, ("nostop",), s),
                    _Rule(T[0], U2, ex_stay, ("always",)),
                    _Rule(T[1], T[0], ex_stay, ("always",)),
                    _Rule(T[2], T[1], ex_stay, ("always",)),
                    _Rule(U2, U1, ex_stay, ("always",)),
                ]
            for ph, pre in introns[s]:
                key = f"{ph}{pre if pre is not None else '*'}"
                F, In = idx[f"F{sg}{key}"], idx[f"I{sg}{key}"]
                if ph == 0:
                    rules += [_Rule(F, E[2], ex_leave, ("donor_nostop",), s),
                              _Rule(F, X2, ex_leave, ("donor",), s),
                              _Rule(F, N[2], ex_leave, ("donor",), s),
                              *acceptor(E[0], In, ("acceptor",), s)]
                else:
                    src = E[0] if ph == 1 else E[1]
                    dst = X1 if ph == 1 else X2
                    rules += [_Rule(F, src, ex_leave, ("donor_prefix", ph, pre), s),
                              *acceptor(dst, In, ("acceptor_ok", ph, pre), s)]
                rules += [_Rule(In, In, in_stay, ("always",)),
                          _Rule(In, self.S + self.f_states.index(F), (m - 1) * in_stay,
                                ("always",), s, delayed=True)]
        self.rules = rules
        by_dst: dict[int, list[_Rule]] = {}
        for r in rules:
            by_dst.setdefault(r.dst, []).append(r)
        self.K = max(len(v) for v in by_dst.values())
        self.pred = np.full((self.S, self.K), self.neg_slot, dtype=np.int64)
        self.slot: list[tuple[int, _Rule]] = []  # (flat column s*K+k, rule)
        for dst, rs in by_dst.items():
            for k, r in enumerate(rs):
                self.pred[dst, k] = r.src
                self.slot.append((dst * self.K + k, r))
        self.chan_idx = np.asarray(self.chan)
        # per column of the flat [S*K] candidate row: its sequence test, log-probability and,
        # for the minimum-intron jumps, the strand whose intron scores fill the forced stretch
        self.gates = sorted({(r.cond, r.strand) for _, r in self.slot}, key=str)
        gate_index = {g: i for i, g in enumerate(self.gates)}
        X = self.S * self.K
        self.gate_of_col = np.full(X, len(self.gates), dtype=np.intp)
        self.logp_of_col = np.full(X, NEG, dtype=np.float32)
        delayed = []
        # the exon jumps' tests and splice-site scores are read min_exon - 1 bases back
        # (_block_scores); their column here only carries the log-probability
        self.jumps = [(col, r) for col, r in self.slot if r.q0 >= 0]
        self.fill_of = {(col // self.K, col % self.K): r.fill for col, r in self.jumps}
        for col, r in self.slot:
            self.gate_of_col[col] = gate_index[(("always",), 0) if r.q0 >= 0
                                               else (r.cond, r.strand)]
            self.logp_of_col[col] = r.logp
            if r.delayed:
                delayed.append((col, r.strand))
        self.delayed_cols = np.asarray([c for c, _ in delayed], dtype=np.intp)
        self.delayed_strand = [s for _, s in delayed]
        # columns entering an intron (donor-gated: its first forward base is t) and leaving it
        # (acceptor-gated: t is the next coding base), per strand: the splice-site scores go here
        self.site_cols = {(s, kind): np.asarray(
            [col for col, r in self.slot
             if r.strand == s and r.cond[0].startswith(kind) and r.q0 < 0],
            dtype=np.intp) for s in (1, -1) for kind in ("donor", "acceptor")}
        # near the start of a sequence, no intron may begin at the first base or end before
        # min_intron bases (its exon, or its minimum length, would lie before the sequence).
        # A path from IG cannot take these steps anyway; one that begins inside a gene (an
        # open end) must not, so that it holds nothing the mirrored path, cut at the other
        # end, could not: the acceptor steps (t - 1: the intron's last base) and jumps (the
        # acceptor min_exon - 1 bases back)
        self.donor_cols = np.asarray([col for col, r in self.slot if r.dst in self.f_states],
                                     dtype=np.intp)
        self.acceptor_cols = np.asarray(
            [col for col, r in self.slot if r.q0 < 0 and self.kind[r.dst] == "exon"
             and r.src < self.S and self.kind[r.src] == "intron"], dtype=np.intp)
        self.jump_cols = np.asarray([col for col, _ in self.jumps], dtype=np.intp)


# ----------------------------------------------------------------------------- signals

def _codes_padded(seqs: list[np.ndarray], length: int) -> np.ndarray:
    """[B, length + 6] base codes (0..3, 4 = other) with 3 N on the left and N padding right."""
    xp = np.full((len(seqs), length + 6), 4, dtype=np.int16)
    for b, x in enumerate(seqs):
        xp[b, 3:3 + len(x)] = x
    return xp


class _Signals:
    """Sequence tests for transitions into positions ``t`` of one block, each ``[B, T]`` bool."""

    def __init__(self, xp: np.ndarray, a: int, b: int):
        self.xp, self.a, self.b = xp, a, b
        self._cache: dict = {}

    def base(self, d: int) -> np.ndarray:
        """Base code at t + d."""
        return self.xp[:, self.a + 3 + d: self.b + 3 + d]

    def word(self, d: int, n: int) -> np.ndarray:
        """Id of the n-mer starting at t + d (4**n where a base is not ACGT)."""
        key = ("w", d, n)
        if key not in self._cache:
            w = np.zeros_like(self.base(d), dtype=np.int32)
            bad = np.zeros(w.shape, dtype=bool)
            for i in range(n):
                x = self.base(d + i)
                w = w * 4 + np.minimum(x, 3)
                bad |= x >= 4
            w[bad] = 4 ** n
            self._cache[key] = w
        return self._cache[key]

    def isin(self, d: int, words: tuple[str, ...]) -> np.ndarray:
        n = len(words[0])
        table = np.zeros(4 ** n + 1, dtype=bool)  # the last entry: a word with N
        table[[_codon_id_n(w) for w in words]] = True
        return table[self.word(d, n)]

    def evaluate(self, cond: tuple, sig: _StrandSignals | None) -> np.ndarray:
        name = cond[0]
        if name == "always":
            return np.ones(self.word(0, 1).shape, dtype=bool)
        if name == "entry":
            return self.isin(0, sig.entry)
        if name == "exit":
            return self.isin(-3, sig.exit)
        if name == "nostop":
            return ~self.isin(-3, sig.stops)
        if name == "donor":
            return self.isin(0, (sig.donor,))
        if name == "donor_nostop":
            return self.isin(0, (sig.donor,)) & ~self.isin(-3, sig.stops)
        if name == "acceptor":
            return self.isin(-2, (sig.acceptor,))
        _, ph, pre = cond
        known = sorted({s[:ph] for s in sig.stops})
        if name == "donor_prefix":  # the codon bases read before the intron: t-ph .. t-1
            seen = self.isin(-ph, tuple(known))
            match = ~seen if pre is None else self.isin(-ph, (pre,))
            return self.isin(0, (sig.donor,)) & match
        if name == "acceptor_ok":  # the rest of the split codon: t .. t + 2 - ph
            ok = self.isin(-2, (sig.acceptor,))
            if pre is not None:
                rest = tuple(s[ph:] for s in sig.stops if s.startswith(pre))
                ok &= ~self.isin(0, rest)
            return ok
        raise AssertionError(name)


def _codon_id_n(word: str) -> int:
    v = 0
    for c in word:
        v = v * 4 + _BASES.index(c)
    return v


# ----------------------------------------------------------------------------- emissions

def channel_probs(probs_LC: np.ndarray) -> np.ndarray:
    """Head probabilities ``[L, 17]`` → the decoder's 9 channels ``[L, 9]`` (float32).

    Channels: IG (everything but CDS and intron), CDS+ at forward codon position 0..2, CDS− at
    forward codon position 0..2 (= phase 2..0), intron+, intron−.
    """
    p = np.asarray(probs_LC, dtype=np.float32)
    if p.ndim != 2 or p.shape[1] != NUM_CLASSES:
        raise InputError(f"probabilities must be [L, {NUM_CLASSES}], got {p.shape}")
    if not np.isfinite(p).all() or (p < 0).any():
        raise InputError("probabilities must be finite and non-negative")
    cds_p = p[:, list(CDS_PLUS)]
    cds_m = p[:, list(CDS_MINUS)][:, ::-1]  # forward position q = phase 2 - q
    intr = p[:, [INDEX["intron+"], INDEX["intron-"]]]
    ig = p.sum(1) - cds_p.sum(1) - cds_m.sum(1) - intr.sum(1)
    return np.concatenate([ig[:, None], cds_p, cds_m, intr], axis=1)


def _channels(a: np.ndarray) -> np.ndarray:
    """The decoder's channels ``[L, 9]`` (float32) from head probabilities ``[L, 17]``, or
    checked and passed through when they are channels already."""
    a = np.asarray(a)
    if a.ndim == 2 and a.shape[1] == 9:
        if not np.isfinite(a).all() or (a < 0).any():
            raise InputError("channel probabilities must be finite and non-negative")
        return a.astype(np.float32, copy=False)
    return channel_probs(a)


def emissions(ch_LC: np.ndarray, prior_C: np.ndarray | None, floor: float) -> np.ndarray:
    """Log-scores ``[L, 9]``: log channel probability, minus log prior when one is given."""
    e = np.log(np.maximum(ch_LC, floor))
    if prior_C is not None:
        e -= np.log(np.maximum(np.asarray(prior_C, dtype=np.float64), floor))
    return e.astype(np.float32)


# ----------------------------------------------------------------------------- Viterbi

_MACHINES: dict[DecoderParams, _Machine] = {}


def _machine(p: DecoderParams) -> _Machine:
    if p not in _MACHINES:
        _MACHINES[p] = _Machine(p)
    return _MACHINES[p]


def _viterbi_batch(codes: list[np.ndarray], chans: list[np.ndarray], p: DecoderParams,
                   block: int = 4096, sites=None,
                   ends: list[tuple[bool, bool]] | None = None) -> list[np.ndarray]:
    """State path of every sequence of the batch, each int16 ``[L_b]``. ``ends`` says, per
    sequence, whether its (left, right) end is open: a gene may run off it (the path begins
    or ends inside a gene, :attr:`_Machine.open_start` / :attr:`_Machine.open_end`); closed
    ends (the default) begin and end the path in IG."""
    mc = _machine(p)
    B, S, K, m, me = len(codes), mc.S, mc.K, p.min_intron, p.min_exon
    M = max(m, me)  # positions of history kept
    lens = [len(x) for x in codes]
    Lmax = max(lens)
    ends = ends or [(False, False)] * B
    xp = _codes_padded(codes, Lmax)
    ch_BLC = np.full((B, Lmax, 9), NEG, dtype=np.float64)
    ch_BLC[:, :, _CH_IG] = 0.0
    # cumulative intron log-scores per strand for the forced minimum-length stretch
    cum = {s: np.zeros((B, Lmax + 1)) for s in (1, -1)}
    for b, c in enumerate(chans):
        ch_BLC[b, :len(c)] = c
        for s in (1, -1):
            cum[s][b, 1:len(c) + 1] = np.cumsum(c[:, _CH_INTRON[s]], dtype=np.float64)
            cum[s][b, len(c) + 1:] = cum[s][b, len(c)]
    # hist holds the scores of the last M positions (row t % M; column S is a constant NEG), so
    # one gather reads V[t-1], the first-intron-base scores F[t-m+1] and the last-intron-base
    # scores I[t-min_exon] of the exon jumps.
    hist = np.full((B, M, S + 1), NEG)
    hist[:, (-1) % M, 0] = 0.0  # before the sequence: intergenic
    for b, (left, _) in enumerate(ends):  # or, at an open end, inside a gene
        if left:
            hist[b, (-1) % M, mc.open_start] = mc.open_start_logp
    # the scores after the last base of sequences whose right end is open
    last_at: dict[int, list[int]] = {}
    for b, (_, right) in enumerate(ends):
        if right:
            last_at.setdefault(lens[b] - 1, []).append(b)
    final = {}
    flat = hist.reshape(B, M * (S + 1))
    pred_r = np.empty((M, S * K), dtype=np.intp)
    for r in range(M):
        prev, late, back = (r - 1) % M, (r - m + 1) % M, (r - me) % M
        src = mc.pred.reshape(-1)
        f_of = np.asarray(mc.f_states + [S])[np.clip(src - S, 0, mc.nF)]
        pred_r[r] = np.where(src < S, prev * (S + 1) + src,
                             np.where(src < S + mc.nF, late * (S + 1) + f_of,
                                      np.where(src < mc.exon_slot, S,
                                               back * (S + 1) + src - mc.exon_slot)))
    site = None
    if p.splice_weight:
        from genoctx.heads.splice_sites import default_site_models, transition_scores

        donor, acceptor = default_site_models() if sites is None else sites
        site = {k: np.zeros((B, Lmax + 1)) for k in mc.site_cols}
        for b, x in enumerate(codes):
            for s, (start, end) in transition_scores(x, donor, acceptor).items():
                site[(s, "donor")][b, :len(start)] = p.splice_weight * start
                site[(s, "acceptor")][b, :len(end)] = p.splice_weight * end
    jump = _jump_inputs(mc, xp, ch_BLC, site, me) if mc.jumps else None
    rows = [hist[:, r, :S] for r in range(M)]
    bp_LBS = np.zeros((Lmax, B, S), dtype=np.int8)
    cand = np.empty((B, S * K))
    c3 = cand.reshape(B, S, K)
    arg_TBS = np.empty((min(block, Lmax), B, S), dtype=np.intp)
    # the max is read back through the argmax: a reduction over the short last axis is slow
    first_BS = np.arange(B * S).reshape(B, S) * K
    where_BS = np.empty((B, S), dtype=np.intp)
    add = np.add
    for a in range(0, Lmax, block):
        e = min(a + block, Lmax)
        T = e - a
        tr_TBX, em_TBS = _block_scores(mc, xp, ch_BLC, cum, a, e, m, site, jump)
        if _viterbi is not None:  # the loop below in C (_native.c): the same sums and path
            lo = a
            for t in sorted({t for t in last_at if a <= t < e} | {e - 1}):
                _viterbi(hist, pred_r, tr_TBX[lo - a:t + 1 - a], em_TBS[lo - a:t + 1 - a],
                         bp_LBS[lo:t + 1], lo)
                for b in last_at.get(t, ()):  # before row t % M is written again
                    final[b] = hist[b, t % M, :S].copy()
                lo = t + 1
            continue
        for i in range(T):
            r = (a + i) % M
            flat.take(pred_r[r], axis=1, out=cand)
            cand += tr_TBX[i]
            arg = arg_TBS[i]
            c3.argmax(axis=2, out=arg)
            add(first_BS, arg, out=where_BS)
            v = rows[r]
            cand.take(where_BS, out=v, mode="wrap")
            add(v, em_TBS[i], out=v)
            for b in last_at.get(a + i, ()):
                final[b] = v[b].copy()
        bp_LBS[a:e] = arg_TBS[:T]
    return [_traceback(bp_LBS, b, mc, m, me, lens[b], _end_state(mc, final.get(b)),
                       ends[b][0]) for b in range(B)]


def _end_state(mc: _Machine, v: np.ndarray | None) -> int | None:
    """The best state after the last base of a sequence with an open right end (its scores
    ``v``), leaving a gene there at the cost of leaving an exon; None: a closed end."""
    if v is None:
        return None
    inside = v[mc.open_end] + mc.open_end_logp
    k = int(np.argmax(inside))
    return int(mc.open_end[k]) if inside[k] > v[0] else 0


def _jump_inputs(mc: _Machine, xp, ch_BLC, site, me: int) -> dict:
    """What the exon jumps read over a stretch [t0, t] with t0 = t - me + 1: the codes shifted
    me - 1 bases right (sequence tests at t0), per strand the cumulative CDS emissions along
    each frame (``em[s][r]``: position u scored at codon position (u + r) % 3) and the
    cumulative count of stop codons ending before u per residue class of u (``stops[s][c]``),
    and the acceptor scores shifted like the codes."""
    B, L = ch_BLC.shape[:2]
    xs = np.full((B, xp.shape[1] + me - 1), 4, dtype=xp.dtype)
    xs[:, me - 1:] = xp
    sig = _Signals(xp, 0, L + 1)
    u = np.arange(L)
    em, stops = {}, {}
    for s in (1, -1):
        em[s] = np.zeros((3, B, L + 1))
        for r in range(3):
            ch = np.asarray([_ch_cds(s, q) for q in range(3)])[(u + r) % 3]
            np.cumsum(ch_BLC[:, u, ch], axis=1, out=em[s][r, :, 1:])
        stop = sig.isin(-3, next(g for g in _SIGNALS if g.strand == s).stops)  # [B, L + 1]
        stops[s] = np.zeros((3, B, L + 2), dtype=np.int32)
        v = np.arange(L + 1)
        for c in range(3):
            np.cumsum(stop & (v % 3 == c), axis=1, out=stops[s][c, :, 1:])
    acc = None
    if site is not None:
        acc = {}
        for s in (1, -1):
            acc[s] = np.zeros((B, L + me))
            acc[s][:, me - 1:] = site[(s, "acceptor")][:, :L + 1]
    return {"xs": xs, "em": em, "stops": stops, "acc": acc}


def _block_scores(mc: _Machine, xp, ch_BLC, cum, a: int, e: int, m: int, site=None,
                  jump=None):
    """Transition scores ``[T, B, S*K]`` (float32) and emissions ``[T, B, S]`` for positions
    a..e-1: each distinct sequence test is evaluated once, then gathered into its columns;
    ``site`` adds the splice-site scores ``{(strand, donor|acceptor): [B, L + 1]}``, ``jump``
    the exon jumps' (:func:`_jump_inputs`)."""
    B, T = ch_BLC.shape[0], e - a
    sig = _Signals(xp, a, e)
    sig_of = {s.strand: s for s in _SIGNALS}
    gate_TBG = np.zeros((T, B, len(mc.gates) + 1), dtype=bool)  # last gate: never
    for g, (cond, strand) in enumerate(mc.gates):
        gate_TBG[:, :, g] = sig.evaluate(cond, sig_of.get(strand)).T
    ok_TBX = np.take(gate_TBG, mc.gate_of_col, axis=2)  # C order: so is tr_TBX
    tr_TBX = np.where(ok_TBX, mc.logp_of_col, np.float32(NEG))
    if mc.delayed_cols.size:  # forced intron bases t0+1 .. t-1 with t0 = t - m + 1
        t = np.arange(a, e)
        lo = np.maximum(t - m + 2, 0)
        extra = np.stack([cum[s][:, t] - cum[s][:, lo] for s in mc.delayed_strand], axis=-1)
        cols = mc.delayed_cols
        tr_TBX[:, :, cols] = np.where(ok_TBX[:, :, cols], tr_TBX[:, :, cols]
                                      + extra.transpose(1, 0, 2), np.float32(NEG))
    if site is not None:
        for key, cols in mc.site_cols.items():
            if cols.size:
                tr_TBX[:, :, cols] += site[key][:, a:e].T.astype(np.float32)[:, :, None]
    if jump is not None:
        _jump_scores(mc, jump, tr_TBX, a, e, sig_of)
    if a < max(m, mc.min_exon + m):
        t = np.arange(a, e)
        tr_TBX[t == 0, :, mc.donor_cols[:, None]] = NEG
        tr_TBX[t < m, :, mc.acceptor_cols[:, None]] = NEG
        if mc.jump_cols.size:
            tr_TBX[t - mc.min_exon + 1 < m, :, mc.jump_cols[:, None]] = NEG
    em_TBS = np.ascontiguousarray(ch_BLC[:, a:e][:, :, mc.chan_idx].transpose(1, 0, 2))
    return tr_TBX, em_TBS


def _jump_scores(mc: _Machine, jump: dict, tr_TBX, a: int, e: int, sig_of) -> None:
    """Fill the exon jumps' columns: an intron left at t0 = t - min_exon + 1 (its acceptor test
    and score at t0), the forced exon bases t0 .. t - 1 scored in their frame, and no stop codon
    completed in frame within the stretch (the split codon of a phase 1 / 2 intron is checked
    by the acceptor test)."""
    me = mc.min_exon
    sig = _Signals(jump["xs"], a, e)  # tests at t0
    t = np.arange(a, e)
    t0 = t - me + 1
    ok0 = t0 >= 0
    t0c = np.maximum(t0, 0)
    for col, r in mc.jumps:
        s = r.strand
        ok = sig.evaluate(r.cond, sig_of[s]).T & ok0[:, None]          # [T, B]
        rr = (r.q0 - t0c) % 3
        em = jump["em"][s]
        score = em[rr, :, t] - em[rr, :, t0c]                         # [T, B]
        # stops completed at u = t0 + d + 3j, j >= 1, u <= t (d: where the first E0 falls)
        d = (0, 2, 1)[r.q0]
        c = (t0c + d) % 3
        st = jump["stops"][s]
        n_stop = st[c, :, t + 1] - st[c, :, np.minimum(t0c + d + 1, t + 1)]
        if jump["acc"] is not None:
            score = score + jump["acc"][s][:, a:e].T
        tr_TBX[:, :, col] = np.where(ok & (n_stop == 0), r.logp + score, NEG)


def _traceback(bp_LBS: np.ndarray, b: int, mc: _Machine, m: int, me: int, length: int,
               end: int | None = None, open_left: bool = False,
               native: bool = True) -> np.ndarray:
    """The state path of sequence ``b`` of the batch from the back-pointers ``bp_LBS``
    ``[L, B, S]`` (:func:`_traceback_py`'s walk, in C where it is built; ``native=False``:
    Python)."""
    if _traceback_c is None or not native:
        return _traceback_py(bp_LBS[:, b], mc, m, me, length, end, open_left)
    step, fill = _trace_tables(mc)
    L = bp_LBS.shape[0] if end is None else length
    path = np.zeros(L, dtype=np.int16)
    t, s = (L - 1, 0) if end is None else (length - 1, end)
    first = _traceback_c(np.ascontiguousarray(bp_LBS), b, step, fill, m, me, t, s, path)
    assert first == 0 or (open_left and first in mc.open_start), "path does not start in IG"
    return path[:length]


def _trace_tables(mc: _Machine) -> tuple[np.ndarray, np.ndarray]:
    """For the C traceback, per (state, k-th predecessor): how the step goes back (0: one
    position, 1: to the first base of a minimum-length intron, 2: to the base before a
    minimum-length exon, 3: never) and the state there, ``[S*K, 2]``; and the exon's states
    before the jump's end, ``[S*K, max(min_exon - 1, 1)]``."""
    if getattr(mc, "_trace", None) is None:
        S, K, nF = mc.S, mc.K, len(mc.f_states)
        step = np.zeros((S * K, 2), dtype=np.int64)
        fill = np.zeros((S * K, max(mc.min_exon - 1, 1)), dtype=np.int16)
        for s in range(S):
            for k in range(K):
                src, row = int(mc.pred[s][k]), s * K + k
                if src >= mc.exon_slot:
                    step[row] = (2, src - mc.exon_slot)
                    fill[row, :mc.min_exon - 1] = mc.fill_of[(s, k)]
                elif src >= S + nF:
                    step[row] = (3, 0)
                elif src >= S:
                    step[row] = (1, mc.f_states[src - S])
                else:
                    step[row] = (0, src)
        mc._trace = (step, fill)
    return mc._trace


def _traceback_py(bp_LS: np.ndarray, mc: _Machine, m: int, me: int, length: int,
               end: int | None = None, open_left: bool = False) -> np.ndarray:
    """Walk the back-pointers from IG at the end of the padded batch, or from state ``end``
    at the sequence's last base (an open right end); keep the first L. The reference of
    :func:`_traceback`'s C walk, and where that is not built, the walk."""
    pred = mc.pred.tolist()
    f_states = mc.f_states
    S = mc.S
    L = bp_LS.shape[0] if end is None else length
    path = np.zeros(L, dtype=np.int16)
    t, s = (L - 1, 0) if end is None else (length - 1, end)
    while t >= 0:
        path[t] = s
        k = int(bp_LS[t, s])
        src = pred[s][k]
        if src >= mc.exon_slot:  # the forced stretch after an acceptor, back to the intron
            t0 = t - me + 1
            path[t0:t] = mc.fill_of[(s, k)]
            t, s = t0 - 1, src - mc.exon_slot
            continue
        if src >= S:  # the forced minimum-length stretch of an intron, back to its first base
            assert src < S + len(f_states), "traceback reached an impossible state"
            t0 = t - m + 1
            path[t0 + 1:t] = s
            t, s = t0, f_states[src - S]
            continue
        s, t = src, t - 1
    assert s == 0 or (open_left and s in mc.open_start), "path does not start in IG"
    return path[:length]


def _genes_from_path(path: np.ndarray, ch_LC: np.ndarray, em_LC: np.ndarray, mc: _Machine,
                     contig: str, p: DecoderParams, x: np.ndarray) -> list[SplicedGene]:
    """Genes of a state path; ``score`` = mean channel probability of the decoded CDS bases,
    ``attrs["log_odds"]`` = emission gain of the gene's path over intergenic on its span.

    A gene the path holds at the sequence's first or last base runs off that end (an open
    end): it is cut to its whole codons and marked partial on that side (``partial``, along its
    strand). A gene that begins at the first base with its entry codon, or ends at the last
    with its exit codon (``x``, the base codes, tells), is complete."""
    kind = np.asarray(mc.kind)[path]
    exon = kind == "exon"
    in_gene = kind != "IG"
    edges = np.flatnonzero(np.diff(np.concatenate([[0], in_gene.astype(np.int8), [0]])))
    strand_of = np.asarray(mc.strand)
    q = mc.q[path]
    rows = np.arange(len(path))
    prob = ch_LC[rows, mc.chan_idx[path]]
    gain = em_LC[rows, mc.chan_idx[path]].astype(np.float64) - em_LC[:, _CH_IG]
    L = len(path)
    genes = []
    for gs, ge in zip(edges[::2], edges[1::2]):
        gs, ge = int(gs), int(ge)
        strand = int(strand_of[path[gs]])
        left = gs == 0 and mc.names[path[0]][0] != "N"
        right = ge == L and not _exits_at_end(mc, path, x)
        a, b = gs, ge
        if left:  # from the first base of a whole codon (forward position 0)
            first = np.flatnonzero(exon[gs:ge] & (q[gs:ge] == 0))
            if not len(first):
                continue
            a = gs + int(first[0])
        if right:  # through the last base of a whole codon (forward position 2)
            last = np.flatnonzero(exon[a:ge] & (q[a:ge] == 2))
            if not len(last):
                continue
            b = a + int(last[-1]) + 1
        ex = np.concatenate([[0], exon[a:b].astype(np.int8), [0]])
        e2 = np.flatnonzero(np.diff(ex))
        cds = tuple((int(a + s), int(a + e)) for s, e in zip(e2[::2], e2[1::2]))
        if not cds:
            continue
        five, three = (left, right) if strand > 0 else (right, left)
        g = SplicedGene(contig, strand, cds, float(np.mean(prob[a:b][exon[a:b]])),
                        {"log_odds": round(float(gain[a:b].sum()), 3)}, partial=(five, three))
        if g.cds_length >= p.min_cds and not (five and _starts_with_stop(g, x)):
            genes.append(g)
    return genes


def _exits_at_end(mc: _Machine, path: np.ndarray, x: np.ndarray) -> bool:
    """Whether the path's last base completes its gene's exit codon (a gene that ends with
    the sequence, complete)."""
    s = int(path[-1])
    if mc.q[s] != 2 or mc.names[s][0] not in "ET" or len(x) < 3:
        return False
    sig = next(g for g in _SIGNALS if g.strand == mc.strand[s])
    return "".join(_BASES[c] if c < 4 else "N" for c in x[-3:]) in sig.exit


def _starts_with_stop(g: SplicedGene, x: np.ndarray) -> bool:
    """Whether a 5'-partial gene's first whole codon (along its strand) is a stop codon: the
    path checks the codons it completes inside a gene, all but the − strand's last one."""
    if g.strand > 0:
        return False
    codon = np.concatenate([x[a:b] for a, b in g.cds])[-3:]  # its last codon, read forward
    return reverse_complement("".join(_BASES[c] if c < 4 else "N" for c in codon)) in _STOPS


def coding_tracks(model, x: np.ndarray) -> np.ndarray:
    """Per-base coding log-odds for the six CDS channels, ``[L, 6]``: CDS+ at forward codon
    position q (its phase), then CDS− at forward position q (phase 2 − q, read on the reverse
    complement). Each base is scored with the hexamer that ends at it along the strand."""
    from genoctx.heads import codon_model as cm

    rc = np.where(x < 4, 3 - x, 4)[::-1]
    fwd = model.base_scores(*cm.kmer_index(x))         # [3, L]: codon position × base
    rev = model.base_scores(*cm.kmer_index(rc))[:, ::-1]  # back to forward coordinates
    return np.concatenate([fwd.T, rev[::-1].T], axis=1).astype(np.float32)


def decode_many(records: list[tuple[str, bytes | str]], probs: dict[str, np.ndarray], *,
                params: DecoderParams | None = None, prior: np.ndarray | None = None,
                batch_size: int = 64, max_batch_bases: int = 2_000_000,
                coding=None, sites=None, workers: int = 1,
                open_ends: Mapping[str, tuple[bool, bool]] | None = None) -> list[SplicedGene]:
    """Decode every record; records of similar length run as one batch.

    Emissions are log P(channel | sequence) from the head; with ``params.scaled`` (the default)
    they are divided by a prior, as in hybrid neural-network/HMM decoders, so that a state
    scores by how much the head's evidence moves it away from its base rate (a head that
    always outputs its average says nothing and leaves the length priors in charge). The prior
    is ``prior`` (9 channel probabilities, see :func:`channel_probs`) or, by default, the mean
    channel probability over all bases of ``records``: no labels are used, and the result
    depends on which records are decoded together (so do the repeat masks, counted over all of
    ``records``).

    Args:
        records: ``(contig, sequence)`` pairs.
        probs: contig → head probabilities ``[L, 17]`` (rows sum to 1), or their channels
            ``[L, 9]`` from :func:`channel_probs` (the same genes; a caller holding many
            records keeps those, at half the memory).
        params: decoder settings; defaults to :class:`DecoderParams`.
        prior: channel prior ``[9]`` overriding the mean over the input.
        coding: the coding model (:class:`genoctx.heads.codon_model.CodingModel`) whose per-base
            log-odds, × ``params.coding_weight``, join the CDS emissions (the head's, ×
            ``params.head_weight``); default: the shipped one
            (:mod:`genoctx.heads.eukaryote_coding`).
        sites: ``(donor, acceptor)`` splice-site models or matrices (:mod:`genoctx.heads.splice_sites`),
            × ``params.splice_weight``; default: the shipped ones.
        batch_size: most records per batch.
        max_batch_bases: most ``records × padded length`` per batch (bounds the back-pointer
            memory: one byte per state and base).
        open_ends: record → whether its (left, right) end is open, the sequence going on
            beyond it (a contig of a draft assembly): a gene may run off it, cut to whole
            codons and marked ``partial``. Records not listed: both ends open when
            ``params.partial_ends``, else (the default) closed.
        workers: processes decoding batches and long records side by side (each holds one
            batch's working memory, about 300 bytes per base); the same genes as 1.

    Returns:
        genes in record order, then by start.
    """
    p = params or DecoderParams()
    if workers < 1:
        raise InputError(f"workers must be at least 1, got {workers}")
    mc = _machine(p)
    items = []
    for i, (name, seq) in enumerate(records):
        if name not in probs:
            raise InputError(f"no probabilities for record {name!r}")
        x = encode(seq)
        ch = _channels(probs[name])
        if len(ch) != len(x):
            raise InputError(f"{name}: {len(ch)} rows of probabilities for {len(x)} bases")
        if len(x):
            items.append((i, name, x, ch, _ends_of(name, open_ends, p)))
    if not items:
        return []
    if p.scaled and prior is None:
        total = sum(it[3].sum(0, dtype=np.float64) for it in items)
        prior = total / sum(len(it[2]) for it in items)
    prior = prior if p.scaled else None
    items.sort(key=lambda it: (len(it[2]), it[0]))
    extra = None
    if p.coding_weight:
        if coding is None:
            from genoctx.heads.eukaryote_coding import default_model

            coding = default_model()
        extra = _CodingExtra(coding, p.coding_weight)
    masks = None
    if p.max_repeat_fraction < 1:
        from genoctx.heads.repeats import repeat_masks

        masks = dict(zip([it[0] for it in items],
                         repeat_masks([it[2] for it in items], p.repeat_k, p.repeat_min_count)))
    with _pool(min(workers, len(items))) as pool:
        return _decode_rounds(items, prior, p, mc, batch_size, max_batch_bases, extra, sites,
                              masks, coding, pool)


def _ends_of(name: str, open_ends, p: DecoderParams) -> tuple[bool, bool]:
    """Whether record ``name``'s (left, right) ends are open (see :func:`decode_many`)."""
    if open_ends is not None and name in open_ends:
        left, right = open_ends[name]
        return bool(left), bool(right)
    return p.partial_ends, p.partial_ends


@contextlib.contextmanager
def _pool(workers: int):
    """A process pool of ``workers`` (spawned: the workers import numpy and the decoder only,
    whatever threads this process, torch's for one, has started), or None for one."""
    from genoctx.pools import spawn_pool

    pool = spawn_pool(workers) if workers > 1 else None  # None: decode in turn
    if pool is None:
        yield None
        return
    with pool:
        yield pool


def _decode_rounds(items, prior, p: DecoderParams, mc: _Machine, batch_size: int,
                   max_batch_bases: int, extra, sites, masks, coding, pool) -> list[SplicedGene]:
    """decode_many's decode, then its self-training rounds."""
    out = _drop_repeats(_decode_items(items, prior, p, mc, batch_size, max_batch_bases, extra,
                                      sites, pool), masks, p.max_repeat_fraction)
    if p.coding_weight:
        from genoctx.heads.eukaryote_coding import fit_on_calls

        codes = {name: x for _, name, x, *_ in items}
        base = coding
        for _ in range(p.self_train_rounds):
            coding, w = fit_on_calls(codes, [g for genes in out.values() for g in genes],
                                     base, p.self_train_weight)
            if not w:
                break
            extra = _CodingExtra(coding, p.coding_weight)
            out = _drop_repeats(_decode_items(items, prior, p, mc, batch_size, max_batch_bases,
                                              extra, sites, pool), masks, p.max_repeat_fraction)
    return [g for i in sorted(out) for g in out[i]]


def _drop_repeats(out: dict[int, list], masks: dict[int, np.ndarray] | None,
                  most: float) -> dict[int, list]:
    """``out`` without the genes whose share of CDS bases in the record's repeat mask exceeds
    ``most``."""
    if masks is None:
        return out
    kept = {}
    for i, genes in out.items():
        m = masks[i]
        kept[i] = [g for g in genes
                   if sum(int(m[a:b].sum()) for a, b in g.cds) <= most * g.cds_length]
    return kept


def _decode_items(items, prior, p: DecoderParams, mc: _Machine, batch_size: int,
                  max_batch_bases: int, extra=None, sites=None, pool=None) -> dict[int, list]:
    """Genes of each item ``(index, name, codes, channels)``, in batches of similar length;
    ``extra(codes)`` gives per-base scores ``[L, 6]`` added to the six CDS channels' emissions,
    computed a batch at a time (they are not held for the whole input). Items longer than
    ``p.window`` are decoded a window at a time (:func:`_decode_windowed`). With ``pool`` (a
    process pool) the batches and long items are decoded side by side, with the same genes."""
    jobs = [("window", [it]) for it in items if p.window and len(it[2]) > p.window]
    short = [it for it in items if not (p.window and len(it[2]) > p.window)]
    j = 0
    while j < len(short):
        k = j + 1
        while (k < len(short) and k - j < batch_size
               and (k - j + 1) * len(short[k][2]) <= max_batch_bases):
            k += 1
        jobs.append(("batch", short[j:k]))
        j = k
    shared = (prior, p, extra, sites)
    if pool is None or len(jobs) < 2:
        results = (_run_job(job, *shared) for job in jobs)
    else:
        results = pool.map(_run_job_packed, ((job, shared) for job in jobs))
    out: dict[int, list[SplicedGene]] = {}
    for r in results:
        out.update(r)
    return out


def _run_job(job, prior, p: DecoderParams, extra, sites) -> dict[int, list]:
    """One batch (decoded together) or one long item (in windows): index → genes."""
    kind, its = job
    mc = _machine(p)
    if kind == "window":
        return {its[0][0]: _decode_windowed(its[0], prior, p, mc, extra, sites)}
    return _decode_batch(its, prior, p, mc, extra, sites)


def _run_job_packed(args) -> dict[int, list]:
    """:func:`_run_job` in a worker process."""
    job, shared = args
    return _run_job(job, *shared)


def _decode_windowed(item, prior, p: DecoderParams, mc: _Machine, extra,
                     sites) -> list[SplicedGene]:
    """Genes of one long item, decoded in windows of ``p.window`` bases (see DecoderParams)."""
    i, name, x, ch, (left, right) = item
    full = None if extra is None else extra(x)  # scored on the whole record: no seams
    genes, pos = [], 0
    while True:
        end = min(len(x), pos + p.window)
        part = (i, name, x[pos:end], ch[pos:end], (left and pos == 0, right and end == len(x)))
        more = None if full is None else _Slice(full, pos, end)
        found = _decode_batch([part], prior, p, mc, more, sites)[i]
        found = [replace(g, cds=tuple((a + pos, b + pos) for a, b in g.cds)) for g in found]
        if end == len(x):
            return genes + found
        # the next window starts at the seam ``window_overlap`` before this one's end, moved
        # back to the start of any gene across it (intergenic in this window's path); genes
        # before it are kept. A seam pushed back to the window's start (genes across all of
        # it) stays where it was, and the gene across it is cut.
        cut = q = end - p.window_overlap
        while across := [g.start for g in found if g.start < q < g.end]:
            q = min(across)
        if q <= pos:
            q = cut
        genes += [g for g in found if g.end <= q]
        pos = q


class _CodingExtra:
    """``codes → weight × coding_tracks(coding, codes)``: the coding model's CDS scores (a
    class, not a closure, so that worker processes can receive it)."""

    def __init__(self, coding, weight: float):
        self.coding, self.weight = coding, weight

    def __call__(self, x: np.ndarray) -> np.ndarray:
        return self.weight * coding_tracks(self.coding, x)


class _Slice:
    """Scores of a window: ``full[a:b]``, whatever codes it is called with."""

    def __init__(self, full: np.ndarray, a: int, b: int):
        self.full, self.a, self.b = full, a, b

    def __call__(self, _x) -> np.ndarray:
        return self.full[self.a:self.b]


def _decode_batch(batch, prior, p: DecoderParams, mc: _Machine, extra=None,
                  sites=None) -> dict[int, list]:
    """Genes of the items of one batch, decoded whole and together."""
    ems = [emissions(it[3], prior, p.floor) for it in batch]
    if p.head_weight != 1.0:
        for em in ems:
            em *= p.head_weight
    if extra is not None:
        for (_, _, x, *_), em in zip(batch, ems):
            em[:, 1:7] += extra(x)
    if p.gap_bases:
        for (_, _, x, *_), em in zip(batch, ems):
            em[gap_mask(x, p.gap_bases), 1:7] = GAP_SCORE
    paths = _viterbi_batch([it[2] for it in batch], ems, p, sites=sites,
                           ends=[it[4] for it in batch])
    return {i: _genes_from_path(path, ch, em, mc, name, p, x)
            for (i, name, x, ch, _), em, path in zip(batch, ems, paths)}


def decode(seq: bytes | str, probs_LC: np.ndarray, *, contig: str = "seq",
           params: DecoderParams | None = None, prior: np.ndarray | None = None
           ) -> list[SplicedGene]:
    """Genes of one sequence from its head probabilities ``[L, 17]`` (see :func:`decode_many`)."""
    return decode_many([(contig, seq)], {contig: probs_LC}, params=params, prior=prior)


def oracle_probs(labels_L: np.ndarray, confidence: float = 0.9) -> np.ndarray:
    """Smoothed one-hot probabilities ``[L, 17]`` from class ids, for tests and for the
    decoder's ceiling on annotated data. Unknown bases (``-100``) get the mean of the known
    rows, which the default prior scaling turns into no evidence either way."""
    y = np.asarray(labels_L)
    if not 1 / NUM_CLASSES < confidence <= 1:
        raise ValueError(f"confidence must lie in (1/{NUM_CLASSES}, 1], got {confidence}")
    p = np.full((len(y), NUM_CLASSES), (1 - confidence) / (NUM_CLASSES - 1), dtype=np.float32)
    known = y >= 0
    p[np.flatnonzero(known), y[known]] = confidence
    p[~known] = p[known].mean(0) if known.any() else 1 / NUM_CLASSES
    return p


# ----------------------------------------------------------------------------- outputs

def gene_masks(genes: list[SplicedGene], contig: str, length: int,
               strand: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Boolean ``[L]`` CDS and intron masks of the genes on ``contig`` (CDS wins overlaps)."""
    cds = np.zeros(length, dtype=bool)
    intron = np.zeros(length, dtype=bool)
    for g in genes:
        if g.contig != contig or (strand is not None and g.strand != strand):
            continue
        for s, e in g.cds:
            cds[s:e] = True
        for s, e in g.introns:
            intron[s:e] = True
    return cds, intron & ~cds
