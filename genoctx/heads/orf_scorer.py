"""A gene scorer learned across genomes: what an ORF's protein looks like, beside the decoder.

The decoder's statistics are self-trained on each genome, so they know its codon usage but
nothing of proteins in general. This module adds a cross-genome view: a gradient-boosted tree
ensemble, fitted on the TRAIN-role genomes (each ORF at its best start is one row; label: an
annotated gene ends at its stop), reads the decoder's gene log-odds and features together with
the amino-acid composition of the ORF's translation (table 11) and its G+C and third-position
G+C against the genome's. The decoder adds ``weight`` × clip(z − platt(log-odds), ±clip) to each
ORF's log-odds: what the tree ensemble knows beyond the decoder's own score, in the decoder's
units, so strong genes stay strong and the change falls on short, uncertain ORFs.

The ensemble ships as ``genoctx/weights/orf_scorer.safetensors`` (sha256-checked) with
``orf_scorer.json`` (command, data files and their sha256). Refit with
``python -m genoctx.heads.orf_scorer [--data-root DIR] [--out DIR]`` (about 3 minutes; reads
only train-role genomes, through the role guard). Held-out quality, one species left out at a
time: ``python benchmarks/decoder_orf_classifier.py``.

Legend: N = ORFs, F = features (``FEATURE_NAMES``), T = trees, M = nodes of one tree.
"""

from __future__ import annotations

import argparse
import functools
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from genoctx.errors import InputError
from genoctx.io.digest import verify_digest_file, write_digest, write_fit_record

try:  # the trees' sum and the translation features compiled (_native.c); else numpy
    from genoctx.heads._native import translation as _translation
    from genoctx.heads._native import tree_sum as _tree_sum
except ImportError:
    _translation = _tree_sum = None

WEIGHTS_DIR = Path(__file__).resolve().parent.parent / "weights"
FILE = "orf_scorer.safetensors"
AMINO = "ACDEFGHIKLMNPQRSTVWY"
FEATURE_NAMES = ("log_odds", "coding", "coding_per_codon", "start", "log_length", "partial",
                 *(f"aa_{a}" for a in AMINO), "gc_vs_genome", "gc3_vs_genome")
SKIP_MARGIN = 10.0  # nats below −weight × clip under which an ORF is not scored


@functools.lru_cache(maxsize=4)
def _codon_table(table_id: int = 11) -> np.ndarray:
    """Amino-acid index (0..19; 20 stop; 21 a codon with N) of 25·b1 + 5·b2 + b3, codes ACGTN,
    from Biopython's translation table ``table_id`` (as heads.consequence uses its table 1)."""
    from Bio.Data.CodonTable import unambiguous_dna_by_id

    table = unambiguous_dna_by_id[table_id]
    out = np.full(125, 21, dtype=np.int64)
    for a, b, c in np.ndindex(4, 4, 4):
        codon = "ACGT"[a] + "ACGT"[b] + "ACGT"[c]
        out[25 * a + 5 * b + c] = (20 if codon in table.stop_codons
                                   else AMINO.index(table.forward_table[codon]))
    return out


CODON_AA = _codon_table()


def translation_features(x: np.ndarray, frame: np.ndarray, j: np.ndarray, k: np.ndarray,
                         gc: float, table: int = 11, native: bool = True) -> np.ndarray:
    """Amino-acid composition of codons ``j+1 .. k-1`` of each ORF (its translation after the
    start codon, in translation table ``table``), then its G+C and third-position G+C minus the
    genome's ``gc``, [N, 22].

    ``x`` is one strand's base codes (0..3 ACGT, 4 N); ``frame``/``j``/``k`` as in
    :class:`genoctx.heads.orfs.Candidates`. Where genoctx's C part is built it counts ORF by
    ORF (the same values); ``native=False`` runs numpy.
    """
    codon_aa = _codon_table(table)
    if _translation is not None and native:  # the same sums in C (_native.c), codon by codon
        out = np.zeros((len(j), 22))
        _translation(np.ascontiguousarray(x, dtype=np.uint8),
                     *(np.ascontiguousarray(a, dtype=np.int64) for a in (frame, j, k, codon_aa)),
                     float(gc), out)
        return out
    xi = x.astype(np.int16)  # 25 a + 5 b + c <= 124
    gcb = ((x == 1) | (x == 2)).astype(np.float64)
    out = np.zeros((len(j), 22))
    for f in range(3):
        n = (len(x) - f) // 3
        m = np.flatnonzero(frame == f)
        if n <= 0 or not len(m):
            continue
        codons = codon_aa[25 * xi[f:f + 3 * n:3] + 5 * xi[f + 1:f + 3 * n:3][:n]
                          + xi[f + 2:f + 3 * n:3][:n]]
        g = gcb[f:f + 3 * n].reshape(n, 3)
        lo = np.minimum(j[m] + 1, n)
        hi = np.clip(k[m], lo, n)
        size = hi - lo
        # every codon of every ORF once (ORFs of one frame are disjoint, so this is ≤ n long)
        row = np.repeat(np.arange(len(m)), size)
        pos = np.arange(size.sum()) - np.repeat(np.cumsum(size) - size - lo, size)
        counts = np.bincount(row * 22 + codons[pos], minlength=len(m) * 22).reshape(len(m), 22)
        out[m, :20] = counts[:, :20]
        for col, v in ((20, (g[:, 0] + g[:, 1] + g[:, 2]) / 3.0), (21, g[:, 2])):
            total = np.bincount(row, weights=v[pos], minlength=len(m))
            out[m, col] = total / np.maximum(size, 1) - gc
    out[:, :20] /= np.maximum(out[:, :20].sum(1, keepdims=True), 1)
    return out


# --------------------------------------------------------------------------- the tree ensemble

@dataclass(frozen=True)
class TreeEnsemble:
    """Sum of regression trees (a binary classifier's log-odds), evaluated with numpy.

    Trees are padded to M nodes: ``feature`` [T, M] (−1 at leaves), ``threshold`` [T, M] (go
    left when x ≤ threshold), ``left``/``right`` [T, M] child indices, ``value`` [T, M] leaf
    values; ``baseline`` is added once.
    """

    feature: np.ndarray
    threshold: np.ndarray
    left: np.ndarray
    right: np.ndarray
    value: np.ndarray
    baseline: float

    @classmethod
    def from_sklearn(cls, clf) -> TreeEnsemble:
        """From a fitted binary ``HistGradientBoostingClassifier`` (numeric features, no NaN)."""
        trees = [p[0].nodes for p in clf._predictors]
        m = max(len(t) for t in trees)
        shape = (len(trees), m)
        feat = np.full(shape, -1, dtype=np.int32)
        thr = np.zeros(shape)
        left = np.zeros(shape, dtype=np.int32)
        right = np.zeros(shape, dtype=np.int32)
        val = np.zeros(shape)
        for i, t in enumerate(trees):
            n = len(t)
            leaf = t["is_leaf"].astype(bool)
            feat[i, :n] = np.where(leaf, -1, t["feature_idx"])
            thr[i, :n] = t["num_threshold"]
            left[i, :n] = np.where(leaf, 0, t["left"])
            right[i, :n] = np.where(leaf, 0, t["right"])
            val[i, :n] = np.where(leaf, t["value"], 0.0)
        base = float(np.ravel(clf._baseline_prediction)[0])
        return cls(feat, thr, left, right, val, base)

    def decision_function(self, x_NF: np.ndarray, chunk: int = 512,
                          threads: int | None = None, native: bool = True) -> np.ndarray:
        """Log-odds of every row, [N].

        All trees descend together, ``chunk`` rows at a time: one numpy step per tree level
        over every (tree, row) pair not yet at a leaf, instead of one per tree and level (small
        inputs — a contig's few hundred ORFs — were all call overhead). Leaf values are summed
        tree by tree, from the baseline, in the trees' order. Chunks are independent, so
        ``threads`` of them run side by side (numpy's gathers release the GIL); None takes up
        to :data:`MAX_THREADS` of the cores available when there are at least
        :data:`THREAD_MIN_CHUNKS` chunks (a whole genome's ORFs), else one. The result does not
        depend on it.

        Where genoctx's C part is built (``genoctx.heads._native``, see setup.py) the rows go
        down the trees one by one in C instead, the leaf values added in the same order (the
        same sums), the rows split evenly among the threads; ``native=False`` runs numpy.
        """
        x = np.ascontiguousarray(x_NF, dtype=np.float64)
        out = np.empty(len(x))
        starts = range(0, len(x), chunk)
        if threads is None:
            from genoctx.model.device import available_cores

            threads = (min(MAX_THREADS, available_cores())
                       if len(starts) >= THREAD_MIN_CHUNKS else 1)
        native = native and _tree_sum is not None
        if native:  # the same loop compiled, the same sums; one slice of rows per thread
            step = -(-len(x) // max(1, threads))
            starts, chunk = range(0, len(x), max(step, 1)), max(step, 1)
            trees = tuple(np.ascontiguousarray(a, dtype=d) for a, d in (
                (self.feature, np.int32), (self.threshold, np.float64), (self.left, np.int32),
                (self.right, np.int32), (self.value, np.float64)))

            def run(lo: int) -> None:  # the C loop lets go of the GIL
                _tree_sum(x[lo:lo + chunk], *trees, float(self.baseline), out[lo:lo + chunk])
        else:
            def run(lo: int) -> None:
                out[lo:lo + chunk] = self._chunk(x[lo:lo + chunk])
        if threads <= 1 or len(starts) <= 1:
            for lo in starts:
                run(lo)
            return out
        from concurrent.futures import ThreadPoolExecutor

        with ThreadPoolExecutor(min(threads, len(starts))) as pool:
            list(pool.map(run, starts))
        return out

    def _chunk(self, x_NF: np.ndarray) -> np.ndarray:
        t, m = self.feature.shape
        n = len(x_NF)
        flat = np.ascontiguousarray(x_NF.T).ravel()          # [F·N], feature-major
        feat, thr = self.feature.ravel(), self.threshold.ravel()
        left, right = self.left.ravel(), self.right.ravel()
        root = np.repeat(np.arange(t, dtype=np.int64) * m, n)  # each pair's tree offset, [T·N]
        row = np.tile(np.arange(n, dtype=np.int64), t)
        node = root.copy()                                   # flat node index of each pair
        live = np.arange(t * n)                              # pairs not yet at a leaf
        while live.size:
            at = node[live]
            f = feat[at]
            inner = f >= 0
            live, at, f = live[inner], at[inner], f[inner]
            go_left = flat[f * n + row[live]] <= thr[at]
            node[live] = root[live] + np.where(go_left, left[at], right[at])
        leaf = self.value.ravel()[node].reshape(t, n)
        out = np.full(n, self.baseline)
        for v in leaf:
            out += v
        return out

    def tensors(self) -> dict:
        return {"feature": self.feature, "threshold": self.threshold, "left": self.left,
                "right": self.right, "value": self.value,
                "baseline": np.array([self.baseline])}


# Threads of TreeEnsemble.decision_function on a whole genome's ORFs, and the chunks from which
# it uses them (2 threads halved its time on E. coli's ~16,000 ORFs on 2 cores).
MAX_THREADS = 8
THREAD_MIN_CHUNKS = 4


@dataclass(frozen=True)
class OrfScorer:
    """The tree ensemble, the one-feature logistic fit it is measured against, and its use."""

    trees: TreeEnsemble
    platt: tuple[float, float]   # a, b: log-odds the decoder's score alone implies, a·x + b
    weight: float = 3.0          # nats of decoder log-odds per unit of added log-odds
    clip: float = 5.0            # bound on the added log-odds

    def adjustment(self, x_NF: np.ndarray) -> np.ndarray:
        """What to add to each ORF's decoder log-odds (features as ``FEATURE_NAMES``), [N]."""
        out = np.zeros(len(x_NF))
        # the term is at most weight × clip: ORFs further below zero than that (and a margin for
        # the programme's neighbour links) stay out of any gene set either way, so skip them
        live = np.flatnonzero(x_NF[:, 0] > -(self.weight * self.clip + SKIP_MARGIN))
        if not len(live):
            return out
        a, b = self.platt
        x = x_NF[live]
        z = self.trees.decision_function(x)
        out[live] = self.weight * np.clip(z - (a * x[:, 0] + b), -self.clip, self.clip)
        return out

    def save(self, folder: Path) -> Path:
        from safetensors.numpy import save_file

        folder.mkdir(parents=True, exist_ok=True)
        path = folder / FILE
        t = self.trees.tensors()
        t["platt"] = np.array(self.platt, dtype=np.float64)
        t["use"] = np.array([self.weight, self.clip], dtype=np.float64)
        save_file(t, str(path), metadata={"features": ",".join(FEATURE_NAMES)})
        write_digest(path)
        return path


def load(folder: Path = WEIGHTS_DIR) -> OrfScorer:
    """Load the scorer in ``folder``, checking the file against its ``.sha256``."""
    from safetensors import safe_open

    path = folder / FILE
    verify_digest_file(path, "ORF scorer", "refit with `python -m genoctx.heads.orf_scorer`")
    with safe_open(str(path), framework="numpy") as f:
        names = (f.metadata() or {}).get("features", "")
        if names != ",".join(FEATURE_NAMES):
            raise InputError(f"{path}: fitted on features {names!r}, this code computes "
                             f"{','.join(FEATURE_NAMES)!r}; refit it")
        t = {k: f.get_tensor(k) for k in f.keys()}  # noqa: SIM118 (safe_open has no items())
    trees = TreeEnsemble(t["feature"], t["threshold"], t["left"], t["right"], t["value"],
                         float(t["baseline"][0]))
    return OrfScorer(trees, (float(t["platt"][0]), float(t["platt"][1])),
                     float(t["use"][0]), float(t["use"][1]))


@functools.lru_cache(maxsize=1)
def default_scorer() -> OrfScorer:
    """The shipped scorer (loaded once)."""
    return load(WEIGHTS_DIR)


# --------------------------------------------------------------------------- fitting

def decoder_rows(d, truth=None) -> tuple[np.ndarray, np.ndarray | None, list[np.ndarray]]:
    """One row per ORF (at its best start) of a trained ``GenomeDecoder``: features [N, F], the
    labels (an annotated gene ends at its stop; None without ``truth``, a list of
    ``(contig, start, end, strand)``) and each strand's best-start candidate indices (rows
    follow strands, then those indices)."""
    from genoctx.heads.orfs import strand_groups, to_forward

    true = None if truth is None else {
        (t[0], t[3], (t[2] - 1) if t[3] == 1 else t[1]) for t in truth}
    if not d.strands:
        return np.zeros((0, len(FEATURE_NAMES))), (np.zeros(0, bool) if true is not None else None), []
    # all strands at once (a draft assembly has thousands): rows of d.all_strands()
    al = d.all_strands()
    best, logit, gene = d.orf_table_all()
    c, tr = al.cand, []
    for g in strand_groups([s.length for s in d.strands]):  # memory as for one long strand
        lo, hi = al.origin[g.start], al.origin[g.stop]
        b = best[(best >= al.off[g.start]) & (best < al.off[g.stop])]
        shift = al.codon_shift[b] - lo // 3
        tr.append(translation_features(al.x[lo:hi], c.frame[b], c.j[b] + shift, c.k[b] + shift,
                                       d.gc, d.params.translation_table))
    x = np.column_stack([logit, gene[:, :5], np.vstack(tr)])
    where = al.split(best)
    labels = []
    if true is not None:
        for s, w in zip(d.strands, where):
            lo, hi = to_forward(s.cand.start[w], s.cand.end[w], s.length, s.strand)
            labels.append(np.array([(s.contig, s.strand, (b - 1) if s.strand == 1 else a) in true
                                    for a, b in zip(lo.tolist(), hi.tolist())], dtype=bool))
    return x, (np.concatenate(labels) if true is not None else None), where


def fit_scorer(tables: list[tuple[np.ndarray, np.ndarray, float]], seed: int = 0) -> OrfScorer:
    """Fit on (rows, labels, weight) per genome; each genome's rows share its weight."""
    from sklearn.ensemble import HistGradientBoostingClassifier

    from genoctx.heads.decoder_fit import fit_logistic

    x = np.vstack([t[0] for t in tables])
    y = np.concatenate([t[1] for t in tables])
    w = np.concatenate([np.full(len(t[1]), 1e5 * t[2] / max(len(t[1]), 1)) for t in tables])
    clf = HistGradientBoostingClassifier(max_iter=300, learning_rate=0.05, max_leaf_nodes=31,
                                         min_samples_leaf=100, l2_regularization=1.0,
                                         early_stopping=False, random_state=seed)
    clf.fit(x, y, sample_weight=w)
    a, b = fit_logistic(x[:, :1], y.astype(float), w / w.sum(), l2=0.0)
    trees = TreeEnsemble.from_sklearn(clf)
    top = np.abs(trees.decision_function(x[:2000]) - clf.decision_function(x[:2000])).max()
    if top > 1e-6:
        raise RuntimeError(f"tree export differs from scikit-learn by {top}")
    return OrfScorer(trees, (float(a), float(b)))


def main(argv: list[str] | None = None) -> None:
    from genoctx.heads.decoder import DecoderParams, GenomeDecoder
    from genoctx.heads.decoder_fit import load_train_genomes
    from genoctx.io.dataroot import load_manifest, resolve_data_root

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data-root", default=None, help="shared data folder (default: auto)")
    ap.add_argument("--out", default=str(WEIGHTS_DIR), help="folder to write (default: weights)")
    args = ap.parse_args(argv)
    genomes = load_train_genomes(args.data_root)  # train-role only, through the role guard
    params = DecoderParams(orf_scorer=False)  # the decoder's own scores are the input
    tables = []
    for g in genomes:
        d = GenomeDecoder([(c, s) for c, s in g.records if len(s)], None, params)
        d.train()
        x, y, _ = decoder_rows(d, g.truth)
        tables.append((x, y, g.weight))
        print(f"{g.name}: {len(y)} ORFs, {int(y.sum())} annotated", flush=True)
    scorer = fit_scorer(tables)
    out = Path(args.out)
    path = scorer.save(out)
    root = resolve_data_root(args.data_root)
    manifest = load_manifest(root)
    files = {e.path: e.sha256 for e in manifest.values()
             if Path(e.path).name in {g.name for g in genomes}}
    write_fit_record(out / "orf_scorer.json", "genoctx.heads.orf_scorer", args.data_root,
                     out / FILE, trees=len(scorer.trees.feature), platt=list(scorer.platt),
                     weight=scorer.weight, clip=scorer.clip, features=list(FEATURE_NAMES),
                     train_files=files,
                     held_out_check="python benchmarks/decoder_orf_classifier.py")
    print(f"wrote {path} ({path.stat().st_size} bytes)")


if __name__ == "__main__":
    main(sys.argv[1:])
