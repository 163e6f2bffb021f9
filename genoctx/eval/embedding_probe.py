"""Linear probes for sequence classification: model embeddings vs k-mer counts, same CV folds.

Shared by the ``promoters`` and ``dnabert-promoter`` benchmarks. For one binary task
(sequences + 0/1 labels) :func:`probe_task` scores two methods on identical stratified folds:

- ``genoctx embeddings``: :meth:`GenoCtxModel.embed` gives ``[h_fwd, h_rc]`` per base
  (``[B, T, 2D]``); the mean over positions of both halves (``[B, 2D]``, i.e. the forward and
  the reverse-complement pass pooled separately and concatenated) → standardise → L2 logistic
  regression;
- ``k-mer LR``: counts of every k-mer for k = 1..6 (5,460 features; a k-mer that overlaps an
  N or any other non-ACGT byte is not counted) → scaled to unit variance → L2 logistic
  regression. Hexamers are the size of the bacterial -10/-35 boxes and of the TATA box core.

The regularisation strength C of both is chosen inside each training fold by a 3-fold
stratified search on AUROC over its grid in ``C_GRIDS`` (:class:`TunedLogistic`), so scaling,
C and the weights all see the training fold only. MCC thresholds ``decision_function`` at 0
(probability 0.5). Everything is seeded by ``ctx.seed`` and the model runs on fixed batches,
so the metrics are repeatable.

Legend: N sequences, L length, F features, D d_model.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from genoctx.errors import InputError

KMER_K: tuple[int, ...] = (1, 2, 3, 4, 5, 6)
N_SPLITS = 5
INNER_SPLITS = 3
EMBED_METHOD = "genoctx embeddings"
KMER_METHOD = "k-mer LR"
# 2·D dense features want little shrinkage; 5,460 sparse k-mer counts want much more.
C_GRIDS: dict[str, tuple[float, ...]] = {
    EMBED_METHOD: (1e-3, 1e-2, 1e-1, 1.0, 10.0, 100.0),
    KMER_METHOD: (1e-5, 1e-4, 1e-3, 1e-2, 1e-1, 1.0),
}
_MAX_BATCH_TOKENS = 32_768  # sequences per embed batch = this // length (2× for the rc pass)

_BASE_CODE = np.full(256, -1, dtype=np.int64)
for _i, _b in enumerate(b"ACGT"):
    _BASE_CODE[_b] = _BASE_CODE[_b | 0x20] = _i


# --------------------------------------------------------------------------- input

def read_fasta_seqs(path: Path) -> list[bytes]:
    """Sequences of a small multi-record FASTA, uppercased, in file order.

    Headers are ignored (these sets reuse names and carry free text), so names may repeat.
    """
    from genoctx.io.fasta import iter_records

    if Path(path).stat().st_size == 0:
        raise InputError(f"{path}: no FASTA records")
    seqs = []
    for i, (_, seq) in enumerate(iter_records(path, unique=False)):
        seq = seq.upper()
        if not seq:
            raise InputError(f"{path}: record {i + 1} has no sequence")
        if not seq.isalpha():
            raise InputError(f"{path}: record {i + 1} holds bytes that are not sequence letters")
        seqs.append(seq)
    if not seqs:
        raise InputError(f"{path}: no FASTA records")
    return seqs


def dedupe(seqs: Sequence[bytes], y: np.ndarray) -> tuple[list[bytes], np.ndarray, int]:
    """Drop repeated sequences (keep the first) and any sequence that carries both labels.

    Identical sequences in a training and a test fold would leak; returns the number dropped.
    """
    labels: dict[bytes, set] = {}
    for s, lab in zip(seqs, y, strict=True):
        labels.setdefault(s, set()).add(int(lab))
    seen: set[bytes] = set()
    keep = []
    for i, s in enumerate(seqs):
        if s not in seen and len(labels[s]) == 1:
            keep.append(i)
        seen.add(s)
    keep_a = np.asarray(keep, dtype=np.int64)
    return [seqs[i] for i in keep], np.asarray(y)[keep_a], len(seqs) - len(keep)


def cap_per_class(y: np.ndarray, cap: int | None, seed: int) -> np.ndarray:
    """Sorted indices keeping at most ``cap`` of each class, chosen at random (seeded per class).

    The choice within a class depends only on ``seed``, the class label and that class's
    sequences, so two tasks sharing a negative set draw the same negatives.
    """
    y = np.asarray(y)
    out = []
    for c in np.unique(y):
        idx = np.flatnonzero(y == c)
        if cap is not None and len(idx) > cap:
            rng = np.random.default_rng([seed, int(c)])
            idx = np.sort(rng.choice(idx, size=cap, replace=False))
        out.append(idx)
    return np.sort(np.concatenate(out))


# --------------------------------------------------------------------------- features

def kmer_names(ks: Sequence[int] = KMER_K) -> list[str]:
    """Feature names in column order: k ascending, then lexicographic over ACGT."""
    names = []
    for k in ks:
        idx = np.arange(4**k)
        digits = (idx[:, None] // 4 ** np.arange(k - 1, -1, -1)) % 4
        names += ["".join("ACGT"[d] for d in row) for row in digits]
    return names


def kmer_counts(seqs: Sequence[bytes], ks: Sequence[int] = KMER_K):
    """Sparse ``[N, Σ 4^k]`` float32 counts of every k-mer (k in ``ks``) of each sequence.

    Columns follow :func:`kmer_names`. A window containing any non-ACGT byte (N, IUPAC codes)
    is skipped, so it adds to no column. Sequences may differ in length.
    """
    import scipy.sparse as sp

    if not seqs:
        raise InputError("kmer_counts needs at least one sequence")
    blocks = []
    for k in ks:
        rows, cols = [], []
        for length, members in _by_length(seqs).items():
            if length < k:
                continue
            codes_NL = _BASE_CODE[np.frombuffer(b"".join(seqs[i] for i in members),
                                                np.uint8)].reshape(len(members), length)
            win = np.lib.stride_tricks.sliding_window_view(codes_NL, k, axis=1)  # [n, L-k+1, k]
            code = (win * 4 ** np.arange(k - 1, -1, -1)).sum(-1)
            valid = (win >= 0).all(-1)
            r = np.broadcast_to(np.asarray(members)[:, None], code.shape)
            rows.append(r[valid])
            cols.append(code[valid])
        r = np.concatenate(rows) if rows else np.zeros(0, np.int64)
        c = np.concatenate(cols) if cols else np.zeros(0, np.int64)
        blocks.append(sp.csr_matrix((np.ones(len(r), np.float32), (r, c)),
                                    shape=(len(seqs), 4**k)))  # duplicates are summed
    return sp.hstack(blocks, format="csr")


def _by_length(seqs: Sequence[bytes]) -> dict[int, list[int]]:
    groups: dict[int, list[int]] = {}
    for i, s in enumerate(seqs):
        groups.setdefault(len(s), []).append(i)
    return groups


def pooled_embeddings(model, seqs: Sequence[bytes], *,
                      progress: Callable[[int], None] | None = None,
                      cache: dict[bytes, np.ndarray] | None = None) -> np.ndarray:
    """``[N, 2D]`` float32: mean over positions of ``model.embed`` (forward ‖ reverse-complement).

    Sequences of equal length are batched together in input order (fixed batches, so the
    result is repeatable); ``cache`` (sequence → vector) skips sequences embedded before.
    """
    import torch

    from genoctx.tokenize.nucleotide import encode

    cache = {} if cache is None else cache
    todo = list(dict.fromkeys(s for s in seqs if s not in cache))
    for length, members in _by_length(todo).items():
        bs = max(1, _MAX_BATCH_TOKENS // length)
        for lo in range(0, len(members), bs):
            batch = [todo[i] for i in members[lo:lo + bs]]
            tokens = torch.from_numpy(encode(b"".join(batch)).reshape(len(batch), length))
            pooled = model.embed(tokens.to(model.device)).mean(1).float().cpu().numpy()
            for s, v in zip(batch, pooled, strict=True):
                cache[s] = v
            if progress:
                progress(len(batch))
    return np.stack([cache[s] for s in seqs]).astype(np.float32)


# --------------------------------------------------------------------------- cross-validation

def stratified_folds(y: np.ndarray, seed: int, n_splits: int = N_SPLITS) -> list[tuple]:
    """``[(train_idx, test_idx)] × n_splits`` of a shuffled stratified K-fold seeded by ``seed``."""
    from sklearn.model_selection import StratifiedKFold

    y = np.asarray(y)
    counts = np.bincount(y.astype(np.int64), minlength=2)
    if len(counts) != 2 or counts.min() < n_splits:
        raise InputError(f"need binary labels with >= {n_splits} of each class; got counts "
                         f"{counts.tolist()}")
    skf = StratifiedKFold(n_splits, shuffle=True, random_state=seed)
    return list(skf.split(np.zeros(len(y)), y))


class TunedLogistic:
    """Scaler + L2 logistic regression whose C is picked inside the data given to :meth:`fit`.

    ``fit`` scores every C of ``c_grid`` by AUROC over an inner stratified ``INNER_SPLITS``-fold
    split (scaler refitted per inner fold; C ascending with warm starts, which is cheap), keeps
    the best (the smallest on ties), then refits scaler and model on all of the data.
    ``sparse`` inputs are scaled to unit variance without centring (centring would densify).
    """

    def __init__(self, seed: int, *, sparse: bool, c_grid: Sequence[float]):
        self.seed, self.sparse, self.c_grid = seed, sparse, tuple(sorted(c_grid))

    def _scaler(self):
        from sklearn.preprocessing import StandardScaler

        return StandardScaler(with_mean=not self.sparse)

    @staticmethod
    def _model(C: float, warm: bool = False):
        from sklearn.linear_model import LogisticRegression

        return LogisticRegression(C=C, max_iter=5000, warm_start=warm)

    def fit(self, X, y: np.ndarray) -> TunedLogistic:
        from sklearn.model_selection import StratifiedKFold

        from genoctx.eval.metrics import auroc

        y = np.asarray(y)
        score = np.zeros(len(self.c_grid))
        inner = StratifiedKFold(INNER_SPLITS, shuffle=True, random_state=self.seed)
        for tr, va in inner.split(np.zeros(len(y)), y):
            sc = self._scaler().fit(X[tr])
            Xt, Xv = sc.transform(X[tr]), sc.transform(X[va])
            lr = self._model(self.c_grid[0], warm=True)
            for j, C in enumerate(self.c_grid):
                lr.set_params(C=C).fit(Xt, y[tr])
                score[j] += auroc(y[va], lr.decision_function(Xv))
        self.C_ = float(self.c_grid[int(np.argmax(score))])
        self.scaler_ = self._scaler().fit(X)
        self.model_ = self._model(self.C_).fit(self.scaler_.transform(X), y)
        return self

    def decision_function(self, X) -> np.ndarray:
        return self.model_.decision_function(self.scaler_.transform(X))


def make_probe(method: str, seed: int) -> TunedLogistic:
    """The probe of ``method`` (``EMBED_METHOD`` dense, ``KMER_METHOD`` sparse) with its C grid."""
    return TunedLogistic(seed, sparse=method == KMER_METHOD, c_grid=C_GRIDS[method])


def describe_grids() -> str:
    """The C grids as text, for report notes."""
    return "; ".join(f"{m}: {', '.join(f'{c:g}' for c in g)}" for m, g in C_GRIDS.items())


@dataclass
class CVResult:
    """Per-fold scores and the out-of-fold decision values of one method on one task."""

    mcc_folds: list[float]
    auroc_folds: list[float]
    oof: np.ndarray
    chosen_c: list[float] = field(default_factory=list)

    def summary(self) -> dict:
        return {"mcc": float(np.mean(self.mcc_folds)),
                "mcc_std": float(np.std(self.mcc_folds, ddof=1)),
                "auroc": float(np.mean(self.auroc_folds)),
                "auroc_std": float(np.std(self.auroc_folds, ddof=1)),
                "mcc_folds": self.mcc_folds, "auroc_folds": self.auroc_folds,
                "chosen_C": self.chosen_c}


def cross_validate(X, y: np.ndarray, folds: list[tuple], make_estimator: Callable) -> CVResult:
    """Fit a fresh ``make_estimator()`` on each training fold; score its test fold.

    The estimator sees only ``X[train]``; MCC thresholds ``decision_function`` at 0.
    """
    from genoctx.eval.metrics import auroc, mcc

    y = np.asarray(y)
    oof = np.full(len(y), np.nan)
    mccs, aucs, cs = [], [], []
    for train, test in folds:
        est = make_estimator()
        est.fit(X[train], y[train])
        s = est.decision_function(X[test])
        oof[test] = s
        mccs.append(mcc(y[test], s > 0))
        aucs.append(auroc(y[test], s))
        if hasattr(est, "C_"):
            cs.append(est.C_)
    return CVResult(mccs, aucs, oof, cs)


def probe_task(seqs: Sequence[bytes], y: np.ndarray, *, seed: int, model=None,
               cache: dict | None = None, progress: Callable[[int], None] | None = None) -> dict:
    """Both methods on the same folds: ``{method: CVResult}`` (embeddings only with a model)."""
    y = np.asarray(y, dtype=np.int64)
    folds = stratified_folds(y, seed)
    out = {}
    if model is not None:
        X = pooled_embeddings(model, seqs, progress=progress, cache=cache)
        out[EMBED_METHOD] = cross_validate(X, y, folds, lambda: make_probe(EMBED_METHOD, seed))
    X = kmer_counts(seqs)
    out[KMER_METHOD] = cross_validate(X, y, folds, lambda: make_probe(KMER_METHOD, seed))
    return out


# --------------------------------------------------------------------------- report helpers

def task_rows(dataset: str, results: dict, anchors: dict[str, str] | None = None) -> list:
    """Harness rows: MCC and AUROC (mean over folds, ± std in the metric name) per method."""
    from genoctx.eval.harness import Row

    anchors = anchors or {}
    rows = []
    for method, res in results.items():
        s = res.summary()
        rows.append(Row(dataset, method, "MCC (5-fold mean)", s["mcc"], anchors.get("MCC", "")))
        rows.append(Row(dataset, method, "AUROC (5-fold mean)", s["auroc"],
                        anchors.get("AUROC", "")))
    return rows


def mcc_bars_figure(per_task: dict[str, dict[str, float]], title: str):
    """Grouped bars of the 5-fold mean MCC per task and method."""
    from genoctx.eval.plots import grouped_bars

    lo = min([0.0] + [v for d in per_task.values() for v in d.values()])
    return grouped_bars(per_task, "MCC (5-fold mean)", title, ylim=(min(lo, 0.0), 1.0))


def roc_figure(y: np.ndarray, results: dict, title: str):
    """Out-of-fold ROC curves of each method on one task."""
    from genoctx.eval.plots import roc_figure as _roc

    return _roc({m: (y, r.oof) for m, r in results.items()}, title)
