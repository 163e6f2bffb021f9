"""Would a start scorer, trained across genomes, choose starts better? Leave one species out.

For every TRAIN genome the decoder (without the ORF scorer, whose fit saw these genomes)
self-trains as usual; then every candidate start of every ORF worth scoring becomes one row
(:func:`genoctx.heads.start_scorer.start_rows`; label: the annotated start of a gene with that
stop). For each held-out genome the start scorer (gradient-boosted trees) is fitted on the
genomes of the *other* species (each species one unit of weight) and its term, at several
weights, is added to the held-out genome's start-choice scores; the genome is decoded again.

Prints, per genome, how often the highest-scoring start of an ORF with an annotated start is
that start (``top1``: the decoder's start-choice score, then the trees' log-odds), and gene-level
sensitivity / precision / F1 / start agreement of each use; then the means. Needs scikit-learn (a genoctx dependency). About 10 minutes on 2 cores for the five
development genomes. Run:
``python benchmarks/decoder_start_scorer.py [--weights 1,2,4] [--all | GENOME ...]``
(held-out genomes; default: the five of decoder_dev.py; ``--all``: every train genome).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

# Put this folder last on the path: a sibling script named like a stdlib module (tokenize.py)
# must not shadow the standard library.
_HERE = Path(__file__).resolve().parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != _HERE] + [str(_HERE)]
os.environ.setdefault("OMP_NUM_THREADS", "1")

import dataclasses

import numpy as np
from decoder_dev import GENOMES

from genoctx.eval.metrics import gene_metrics
from genoctx.heads import decoder as dec
from genoctx.heads.decoder_fit import load_train_genomes, species_key
from genoctx.heads.orf_scorer import TreeEnsemble

COLS = ("sensitivity", "precision", "f1", "start_agreement")

UPSTREAM = 20        # bases before the start codon read one by one
DOWNSTREAM = 6       # bases after the start codon read one by one
WINDOW = tuple(range(-UPSTREAM, 0)) + tuple(range(3, 3 + DOWNSTREAM))
NUM_RBS_CLASSES = 24  # the start model's RBS classes, less class 0 (no motif)
FEATURE_NAMES = (
    "coding_part", "type_llr", "rbs_llr", "composition_llr", "choice_gap", "choice_rank",
    "start_type", "log_length", "codons_from_longest", "index_from_longest", "starts_in_orf",
    "coding_to_next", "codons_to_next", "coding_from_previous", "codons_from_previous",
    "orf_log_odds", "gc",
    *(f"rbs_{i}" for i in range(1, NUM_RBS_CLASSES + 1)),
    *(f"base_{p}_{b}" for p in WINDOW for b in "ACGT"))
LIVE_MARGIN = 25.0   # nats: ORFs whose gene log-odds lies further below zero are not scored
GAP_MARGIN = 20.0    # nats: starts further below their ORF's best start are not scored


def _window_bases(d, rows: np.ndarray) -> np.ndarray:
    """One-hot bases at ``WINDOW`` around the start codon of candidates ``rows`` (rows of
    ``d.all_strands()``), [n, 4·len(WINDOW)]; off the strand or unknown: all zero."""
    a = d.all_strands()
    strand = np.searchsorted(a.off, rows, side="right") - 1
    lengths = np.asarray([s.length for s in d.strands], dtype=np.int64)
    shift = np.concatenate([[0], np.cumsum(lengths + 1)[:-1]])  # as _AllStrands.build
    own = lengths[strand]
    pos = (a.cand.start[rows] - shift[strand])[:, None] + np.asarray(WINDOW)[None, :]
    inside = (pos >= 0) & (pos < own[:, None])
    base = np.where(inside, a.x[np.clip(pos + a.origin[strand][:, None], 0, len(a.x) - 1)], 4)
    onehot = (base[:, :, None] == np.arange(4)[None, None, :])
    return onehot.reshape(len(rows), -1).astype(np.float64)


def start_rows(d, truth=None) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """Rows of a trained ``GenomeDecoder``'s candidate starts worth scoring: those of ORFs
    whose gene log-odds (at the current best start, before any start-scorer term) lies above
    −``LIVE_MARGIN`` that score less than ``GAP_MARGIN`` below their ORF's best start.

    Returns the candidates' rows of ``d.all_strands()`` [n], their features [n, F], and with
    ``truth`` (a list of ``(contig, start, end, strand)``) the labels [n]: 1 where an annotated
    gene has this start and stop, 0 where one has this stop and another start, −1 where no
    annotated gene ends at the stop (or its start is no candidate), rows to leave out of a fit.
    """
    from genoctx.heads.decoder import START_PARTS
    from genoctx.heads.orfs import to_forward

    saved, d.start_adjust = d.start_adjust, None
    try:
        a = d.all_strands()
        cand = a.cand
        _, parts = d._features_all()
        choice = d._choice(parts)
        best, logit, _ = d.orf_table_all()
    finally:
        d.start_adjust = saved
    _, grp = np.unique(cand.orf, return_inverse=True)  # candidates are sorted by ORF, start
    orf_logit = logit[grp]  # best holds one candidate per ORF, in ORF order
    n_all = len(cand)
    first = np.r_[True, grp[1:] != grp[:-1]] if n_all else np.zeros(0, bool)
    head = np.maximum.accumulate(np.where(first, np.arange(n_all), 0)) if n_all else first
    size = np.bincount(grp, minlength=grp.max() + 1 if n_all else 0)[grp] if n_all else grp
    idx = np.arange(n_all) - head
    top = choice[best][grp]
    gap = choice - top
    rows = np.flatnonzero((orf_logit > -LIVE_MARGIN) & (gap > -GAP_MARGIN))
    order = np.lexsort((-choice, grp))
    rank = np.empty(n_all, dtype=np.int64)
    rank[order] = np.arange(n_all) - head[order]  # heads of runs are the same after the sort
    cod = d._coding_all()[0]
    nxt = np.minimum(np.arange(n_all) + 1, max(n_all - 1, 0))
    has_next = (idx + 1 < size)
    prv = np.maximum(np.arange(n_all) - 1, 0)
    has_prev = idx > 0
    codons = (cand.end - cand.start) // 3
    to_next = np.where(has_next, codons - codons[nxt], 0)
    from_prev = np.where(has_prev, codons[prv] - codons, 0)
    x = np.column_stack([
        parts[:, START_PARTS.index("coding")], parts[:, START_PARTS.index("type")],
        parts[:, START_PARTS.index("rbs")], parts[:, START_PARTS.index("composition")],
        gap, rank, cand.stype.astype(np.float64), np.log(np.maximum(cand.end - cand.start, 1)),
        codons[head] - codons, idx, size,
        np.where(has_next, cod - cod[nxt], 0.0), to_next,
        np.where(has_prev, cod[prv] - cod, 0.0), from_prev,
        orf_logit, np.full(n_all, d.gc)])[rows]
    pres = a.starts.pres_NR[rows, 1:].astype(np.float64)
    x = np.column_stack([x, pres, _window_bases(d, rows)])
    if truth is None:
        return rows, x, None
    by_stop = {}
    for c, lo, hi, st in truth:
        by_stop.setdefault((c, st, (hi - 1) if st == 1 else lo), set()).add(lo if st == 1 else hi)
    y = np.full(len(rows), -1, dtype=np.int8)
    strand = np.searchsorted(a.off, rows, side="right") - 1
    for si in np.unique(strand).tolist():
        s = d.strands[si]
        m = np.flatnonzero(strand == si)
        local = rows[m] - a.off[si]
        lo, hi = to_forward(s.cand.start[local], s.cand.end[local], s.length, s.strand)
        for i, l, h in zip(m.tolist(), lo.tolist(), hi.tolist()):
            starts = by_stop.get((s.contig, s.strand, (h - 1) if s.strand == 1 else l))
            if starts is not None:
                y[i] = int((l if s.strand == 1 else h) in starts)
    # ORFs whose annotated start is none of their candidates teach nothing about the choice
    g = grp[rows]
    has_pos = np.zeros(grp.max() + 1 if n_all else 0, dtype=bool)
    has_pos[g[y == 1]] = True
    y[(y == 0) & ~has_pos[g]] = -1
    return rows, x, y


@dataclasses.dataclass(frozen=True)
class StartScorer:
    """The tree ensemble, the one-feature logistic fit on the decoder's choice gap it is
    measured against, and its use."""

    trees: TreeEnsemble
    platt: tuple[float, float]   # a, b: log-odds the decoder's choice gap alone implies
    weight: float = 2.0          # nats of start-choice score per unit of added log-odds
    clip: float = 5.0            # bound on the added log-odds

    def adjustment(self, x_NF: np.ndarray) -> np.ndarray:
        """What to add to each candidate's start-choice score (features as ``FEATURE_NAMES``)."""
        if not len(x_NF):
            return np.zeros(0)
        a, b = self.platt
        z = self.trees.decision_function(x_NF)
        gap = x_NF[:, FEATURE_NAMES.index("choice_gap")]
        return self.weight * np.clip(z - (a * gap + b), -self.clip, self.clip)


def fit_scorer(tables: list[tuple[np.ndarray, np.ndarray, float]], seed: int = 0,
               weight: float = 2.0) -> StartScorer:
    """Fit on (rows, labels, weight) per genome (labels −1 are left out); each genome's ORFs
    with an annotated start share its weight, and each such ORF's candidates share one ORF's."""
    from sklearn.ensemble import HistGradientBoostingClassifier

    from genoctx.heads.decoder_fit import fit_logistic

    xs, ys, ws = [], [], []
    gap_col = FEATURE_NAMES.index("choice_gap")
    for x, y, w in tables:
        m = y >= 0
        xs.append(x[m])
        ys.append(y[m])
        ws.append(np.full(int(m.sum()), 1e5 * w / max(int((y == 1).sum()), 1)))
    x, y, w = np.vstack(xs), np.concatenate(ys), np.concatenate(ws)
    clf = HistGradientBoostingClassifier(max_iter=300, learning_rate=0.05, max_leaf_nodes=31,
                                         min_samples_leaf=100, l2_regularization=1.0,
                                         early_stopping=False, random_state=seed)
    clf.fit(x, y, sample_weight=w)
    a, b = fit_logistic(x[:, gap_col:gap_col + 1], y.astype(float), w / w.sum(), l2=0.0)
    trees = TreeEnsemble.from_sklearn(clf)
    top = np.abs(trees.decision_function(x[:2000]) - clf.decision_function(x[:2000])).max()
    if top > 1e-6:
        raise RuntimeError(f"tree export differs from scikit-learn by {top}")
    return StartScorer(trees, (float(a), float(b)), weight)


@dataclasses.dataclass(frozen=True)
class _Gene:
    """An annotated gene as gene_metrics reads it."""
    contig: str
    start: int
    end: int
    strand: int


def top1(score: np.ndarray, orf: np.ndarray, y: np.ndarray) -> float:
    """Share of the ORFs with an annotated start (rows with labels 0/1, sorted by ORF) whose
    highest-``score`` start is that start."""
    from genoctx.heads.start_model import first_max_per_run

    m = y >= 0
    return float(y[m][first_max_per_run(score[m], orf[m])].mean())


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("held", nargs="*", help="held-out train genomes (default: decoder_dev's five)")
    ap.add_argument("--all", action="store_true", help="hold out every train genome in turn")
    ap.add_argument("--weights", default="1,2,4", help="weights of the scorer's term to try")
    ap.add_argument("--data-root", default=None)
    args = ap.parse_args(argv)
    ks = [float(v) for v in args.weights.split(",")]
    params = dec.DecoderParams(orf_scorer=False)
    data = {}
    for g in load_train_genomes(args.data_root):  # train-role only, through the role guard
        name = g.name.removesuffix(".gbff.gz")
        d = dec.GenomeDecoder([(c, s) for c, s in g.records if len(s)], None, params)
        d.train()
        rows, x, y = start_rows(d, g.truth)
        data[name] = (d, g.truth, x, y, g.weight, d.all_strands().cand.orf[rows])
        print(f"# {name}: {len(y)} starts scored, {int((y == 1).sum())} annotated starts",
              flush=True)
    held = list(data) if args.all else (args.held or list(GENOMES))
    for name in held:
        if name not in data:
            sys.exit(f"{name} is not a train genome")
    uses = ["decoder"] + [f"scorer{k:g}" for k in ks]
    print("genome\ttop1_decoder\ttop1_trees\t"
          + "\t".join(f"{u}_{c}" for u in uses for c in COLS) + "\tfit_s")
    sums = np.zeros((len(uses), len(COLS)))
    tops = np.zeros(2)
    for name in held:
        d, truth, x, y, _, orf = data[name]
        t0 = time.perf_counter()
        scorer = fit_scorer([v[2:5] for n, v in data.items()
                             if species_key(n) != species_key(name)])
        fit_s = time.perf_counter() - t0
        gap = x[:, FEATURE_NAMES.index("choice_gap")]
        t = np.array([top1(gap, orf, y), top1(scorer.trees.decision_function(x), orf, y)])
        tops += t
        rows, xh, _ = start_rows(d)
        m = []
        for k in [0.0, *ks]:
            d.start_adjust = None
            if k:
                adj = np.zeros(len(d.all_strands().cand))
                adj[rows] = dataclasses.replace(scorer, weight=k).adjustment(xh)
                d.start_adjust = adj
            met = gene_metrics(d.calls(d.decode()), [_Gene(*t) for t in truth]).as_dict()
            m.append([met[c] for c in COLS])
        d.start_adjust = None
        m = np.array(m)
        sums += m
        print(f"{name}\t{t[0]:.4f}\t{t[1]:.4f}\t" + "\t".join(f"{v:.4f}" for v in m.ravel())
              + f"\t{fit_s:.0f}", flush=True)
    print(f"MEAN\t{tops[0] / len(held):.4f}\t{tops[1] / len(held):.4f}\t"
          + "\t".join(f"{v:.4f}" for v in (sums / len(held)).ravel()))


if __name__ == "__main__":
    main()
