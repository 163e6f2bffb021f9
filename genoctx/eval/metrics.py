"""Evaluation metrics: gene-level matching, per-base and per-class scores, ranking and correlation.

Genes are any objects with ``contig, start, end, strand`` (0-based half-open): decoder
:class:`~genoctx.heads.decoder.GeneCall`, :class:`~genoctx.io.annotation.Gene`, or calls read
from another tool's GFF3. A predicted gene matches a true one when contig, strand and the stop
codon agree (the stop is the end on the plus strand and the start on the minus strand); the
start agrees when the other end is also the same.

Legend: N = samples, K = classes.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

# --------------------------------------------------------------------------- gene level

@dataclass(frozen=True)
class GeneMetrics:
    """Gene-level counts and rates; ``start_agreement`` is over matched genes: NaN when no gene
    matched (there is no start to agree on), which :meth:`as_dict` writes as None (JSON null)
    and tables as n/a."""

    n_true: int
    n_pred: int
    tp: int
    sensitivity: float
    precision: float
    f1: float
    start_agreement: float

    def as_dict(self) -> dict:
        out = {k: getattr(self, k) for k in self.__dataclass_fields__}
        if math.isnan(out["start_agreement"]):
            out["start_agreement"] = None
        return out


def stop_key(g) -> tuple:
    """What a gene match compares: contig, strand and the end of the stop codon."""
    return (g.contig, int(g.strand), int(g.end) if g.strand == 1 else int(g.start))


def _start_of(g) -> int:
    return int(g.start) if g.strand == 1 else int(g.end)


def gene_metrics(pred: list, truth: list) -> GeneMetrics:
    """Sensitivity, precision, F1 (strand + stop match) and start agreement among matches.

    Several true genes sharing one stop (alternative starts) count once; a match agrees on
    the start when any of them has the predicted start.
    """
    true_starts: dict[tuple, set] = {}
    for g in truth:
        true_starts.setdefault(stop_key(g), set()).add(_start_of(g))
    pred_starts: dict[tuple, int] = {}
    for g in pred:
        pred_starts.setdefault(stop_key(g), _start_of(g))
    matched = [k for k in pred_starts if k in true_starts]
    tp = len(matched)
    sens = tp / len(true_starts) if true_starts else 0.0
    prec = tp / len(pred_starts) if pred_starts else 0.0
    f1 = 2 * sens * prec / (sens + prec) if tp else 0.0
    agree = sum(pred_starts[k] in true_starts[k] for k in matched) / tp if tp else math.nan
    return GeneMetrics(len(true_starts), len(pred_starts), tp, sens, prec, f1, agree)


def coding_parts(g) -> list[tuple[int, int]]:
    """The coding pieces of a gene: a spliced or joined gene's parts (``parts`` of an annotated
    :class:`~genoctx.io.annotation.Gene`, ``cds`` of a spliced call, ``attrs["parts"]`` of a
    call read from GFF3 or GenBank), else its one span; its introns are not coding."""
    parts = (getattr(g, "parts", None) or getattr(g, "cds", None)
             or (getattr(g, "attrs", None) or {}).get("parts"))
    return [(int(s), int(e)) for s, e in parts] if parts else [(int(g.start), int(g.end))]


def coding_mask(genes: list, contig: str, length: int, strand: int | None = None) -> np.ndarray:
    """Boolean [L] mask of the bases of ``contig`` inside the coding parts of genes (of one
    strand if given): a spliced gene's introns are left out (:func:`coding_parts`)."""
    diff = np.zeros(length + 1, dtype=np.int64)
    for g in genes:
        if g.contig == contig and (strand is None or g.strand == strand):
            for s, e in coding_parts(g):
                s, e = max(s, 0), min(e, length)
                if s < e:
                    diff[s] += 1
                    diff[e] -= 1
    return np.cumsum(diff[:-1]) > 0


# --------------------------------------------------------------------------- per base / class

def binary_scores(pred: np.ndarray, true: np.ndarray, mask: np.ndarray | None = None) -> dict:
    """F1, MCC, precision and recall of boolean predictions against boolean truth."""
    p, t = np.asarray(pred, bool), np.asarray(true, bool)
    if mask is not None:
        p, t = p[mask], t[mask]
    tp = float(np.sum(p & t))
    fp = float(np.sum(p & ~t))
    fn = float(np.sum(~p & t))
    tn = float(np.sum(~p & ~t))
    prec = tp / (tp + fp) if tp + fp else 0.0
    rec = tp / (tp + fn) if tp + fn else 0.0
    f1 = 2 * prec * rec / (prec + rec) if prec + rec else 0.0
    den = np.sqrt((tp + fp) * (tp + fn) * (tn + fp) * (tn + fn))
    mcc = (tp * tn - fp * fn) / den if den else 0.0
    return {"f1": f1, "mcc": float(mcc), "precision": prec, "recall": rec}


def base_cds_scores(pred_labels: np.ndarray, true_labels: np.ndarray,
                    cds_classes=(1, 2, 3, 4, 5, 6), ignore_index: int = -100) -> dict:
    """Per-base coding F1/MCC from class-id arrays (any CDS class counts as coding)."""
    t = np.asarray(true_labels)
    keep = t != ignore_index
    return binary_scores(np.isin(pred_labels, cds_classes), np.isin(t, cds_classes), keep)


def confusion_matrix(true: np.ndarray, pred: np.ndarray, num_classes: int,
                     ignore_index: int = -100) -> np.ndarray:
    """[K, K] counts, rows = true class, columns = predicted class; ``ignore_index`` skipped."""
    t, p = np.asarray(true).ravel(), np.asarray(pred).ravel()
    keep = t != ignore_index
    t, p = t[keep].astype(np.int64), p[keep].astype(np.int64)
    if len(t) and (t.min() < 0 or t.max() >= num_classes or p.min() < 0 or p.max() >= num_classes):
        raise ValueError(f"class ids must lie in [0, {num_classes})")
    return np.bincount(t * num_classes + p, minlength=num_classes ** 2).reshape(num_classes, -1)


def per_class_f1(cm_KK: np.ndarray) -> np.ndarray:
    """F1 of each class from a confusion matrix (NaN for classes absent from truth and pred)."""
    cm = np.asarray(cm_KK, dtype=np.float64)
    tp = np.diag(cm)
    denom = cm.sum(0) + cm.sum(1)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(denom > 0, 2 * tp / denom, np.nan)


# --------------------------------------------------------------------------- ranking

def _average_ranks(x: np.ndarray) -> np.ndarray:
    """1-based ranks with ties given their average rank."""
    x = np.asarray(x, dtype=np.float64)
    order = np.argsort(x, kind="mergesort")
    xs = x[order]
    first = np.r_[True, xs[1:] != xs[:-1]]
    group = np.cumsum(first) - 1
    starts = np.flatnonzero(first)
    ends = np.r_[starts[1:], len(xs)]
    avg = (starts + ends + 1) / 2.0  # mean of 1-based ranks start+1 .. end
    ranks = np.empty(len(x))
    ranks[order] = avg[group]
    return ranks


def _check_binary(y: np.ndarray, s: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    y = np.asarray(y).ravel()
    s = np.asarray(s, dtype=np.float64).ravel()
    if y.shape != s.shape:
        raise ValueError(f"labels {y.shape} and scores {s.shape} differ in shape")
    yb = y.astype(bool)
    if not (np.isin(y, (0, 1)) | (y == yb)).all() or yb.all() or not yb.any():
        raise ValueError("need binary labels with both classes present")
    return yb, s


def auroc(y: np.ndarray, score: np.ndarray) -> float:
    """Area under the ROC curve (Mann-Whitney U with tied scores counted half)."""
    yb, s = _check_binary(y, score)
    r = _average_ranks(s)
    n_pos, n_neg = yb.sum(), (~yb).sum()
    return float((r[yb].sum() - n_pos * (n_pos + 1) / 2) / (n_pos * n_neg))


def auprc(y: np.ndarray, score: np.ndarray) -> float:
    """Average precision: sum over score thresholds of precision × recall increment."""
    yb, s = _check_binary(y, score)
    order = np.argsort(-s, kind="mergesort")
    ys, ss = yb[order], s[order]
    last = np.r_[ss[1:] != ss[:-1], True]  # one threshold per distinct score
    tp = np.cumsum(ys)[last]
    fp = np.cumsum(~ys)[last]
    precision = tp / (tp + fp)
    recall = tp / yb.sum()
    return float(np.sum(np.diff(np.r_[0.0, recall]) * precision))


def roc_curve(y: np.ndarray, score: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """False- and true-positive rates at every distinct score threshold (from (0, 0) to (1, 1))."""
    yb, s = _check_binary(y, score)
    order = np.argsort(-s, kind="mergesort")
    ys, ss = yb[order], s[order]
    last = np.r_[ss[1:] != ss[:-1], True]
    tp = np.cumsum(ys)[last]
    fp = np.cumsum(~ys)[last]
    return np.r_[0.0, fp / (~yb).sum()], np.r_[0.0, tp / yb.sum()]


def mcc(y: np.ndarray, pred: np.ndarray) -> float:
    """Matthews correlation of boolean predictions (0 when a margin is empty)."""
    return binary_scores(np.asarray(pred, bool), np.asarray(y, bool))["mcc"]


def pearson(x: np.ndarray, y: np.ndarray) -> float:
    """Pearson correlation (NaN when either input is constant)."""
    x, y = np.asarray(x, np.float64).ravel(), np.asarray(y, np.float64).ravel()
    if x.shape != y.shape or len(x) < 2:
        raise ValueError("need two arrays of the same length >= 2")
    dx, dy = x - x.mean(), y - y.mean()
    den = np.sqrt((dx @ dx) * (dy @ dy))
    return float(dx @ dy / den) if den > 0 else float("nan")


def spearman(x: np.ndarray, y: np.ndarray) -> float:
    """Spearman rank correlation (Pearson on average ranks, so ties are handled)."""
    return pearson(_average_ranks(np.asarray(x).ravel()), _average_ranks(np.asarray(y).ravel()))
