"""Benchmark ``dnabert-promoter``: human promoter classification on DNABERT's sample dev set.

``classification/dnabert_promoter/dev_6mer.tsv`` holds 1,000 human 101-bp sequences (500
promoters, label 1; 500 non-promoters, label 0) written as overlapping 6-mers, as DNABERT's
fine-tuning example ships them. Each line is joined back to bases (every 6-mer must overlap the
previous one by 5; a line that does not is an :class:`InputError`).

Protocol as in ``promoters`` (:mod:`genoctx.eval.embedding_probe`): stratified 5-fold CV seeded
by ``ctx.seed``; an L2 logistic regression on the model's pooled embeddings and one on k-mer
counts (k = 1..6), same folds; MCC and AUROC, means over folds. DNABERT reports its promoter
results on its own (other) splits, so no published anchor applies to this file.

Run: ``genoctx eval dnabert-promoter`` (or ``python -m genoctx.eval.benchmarks.dnabert_promoter``).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from genoctx.errors import InputError
from genoctx.eval import embedding_probe as ep
from genoctx.eval.harness import BenchContext, BenchResult, main_module_entry, savefig

NAME = "dnabert-promoter"
DESCRIPTION = ("human promoter vs non-promoter (DNABERT sample dev set, 1,000 × 101 bp): "
               "embedding probe vs k-mer LR, 5-fold CV")

DATA = "classification/dnabert_promoter/dev_6mer.tsv"
DATASET = "DNABERT dev (human, 101 bp)"
QUICK_CAP = 150


def join_kmers(kmers: Sequence[str]) -> str:
    """Overlapping k-mers (each shifted one base from the last) back to the sequence.

    ``["ACGTAC", "CGTACG", "GTACGT"] → "ACGTACGT"``; raises :class:`InputError` when the
    k-mers differ in length or one does not overlap the previous by k − 1 bases.
    """
    if not kmers:
        raise InputError("no k-mers to join")
    k = len(kmers[0])
    for i in range(1, len(kmers)):
        prev, cur = kmers[i - 1], kmers[i]
        if len(cur) != k:
            raise InputError(f"k-mer {i + 1} ({cur!r}) has length {len(cur)}, the first has {k}")
        if cur[:-1] != prev[1:]:
            raise InputError(f"k-mer {i + 1} ({cur!r}) does not overlap k-mer {i} ({prev!r}) "
                             f"by {k - 1} bases")
    return kmers[0] + "".join(m[-1] for m in kmers[1:])


def read_kmer_tsv(path: Path) -> tuple[list[bytes], np.ndarray]:
    """Sequences (bytes, uppercased) and 0/1 labels of a DNABERT ``sequence<TAB>label`` file."""
    seqs, labels = [], []
    with open(path, encoding="ascii", errors="replace") as fh:
        header = fh.readline().rstrip("\r\n").split("\t")
        if header[:2] != ["sequence", "label"]:
            raise InputError(f"{path}: expected a 'sequence<TAB>label' header, got {header!r}")
        for n, line in enumerate(fh, start=2):
            if not line.strip():
                continue
            cols = line.rstrip("\r\n").split("\t")
            if len(cols) < 2 or cols[1] not in ("0", "1"):
                raise InputError(f"{path}:{n}: expected '<6-mers><TAB><0 or 1>'")
            try:
                seq = join_kmers(cols[0].split())
            except InputError as exc:
                raise InputError(f"{path}:{n}: {exc}") from None
            seqs.append(seq.upper().encode())
            labels.append(int(cols[1]))
    if not seqs:
        raise InputError(f"{path}: no sequences")
    return seqs, np.asarray(labels, dtype=np.int64)


def data_files(quick: bool) -> tuple[str, ...]:
    """The manifest files :func:`run` reads (checked before any benchmark runs)."""
    return (DATA,)


def run(ctx: BenchContext) -> BenchResult:
    from genoctx.progress import progress_bar

    out_dir = ctx.bench_dir(NAME)
    seqs, y = read_kmer_tsv(ctx.data_file(DATA))
    n_pos_all, n_neg_all = int(y.sum()), int(len(y) - y.sum())
    seqs, y, dropped = ep.dedupe(seqs, y)
    cap = QUICK_CAP if ctx.quick else None
    keep = ep.cap_per_class(y, cap, ctx.seed)
    seqs, y = [seqs[i] for i in keep], y[keep]
    model = ctx.backbone() if ctx.model is not None else None
    t0 = time.perf_counter()
    with progress_bar("dnabert-promoter embeddings", len(seqs), ctx.quiet or model is None) as bar:
        res = ep.probe_task(seqs, y, seed=ctx.seed, model=model, progress=bar.advance)
    info = {"n_pos": int(y.sum()), "n_neg": int(len(y) - y.sum()),
            "n_pos_available": n_pos_all, "n_neg_available": n_neg_all,
            "duplicates_dropped": dropped, "lengths": sorted({len(s) for s in seqs}),
            "cap_per_class": cap, "kmer_k": list(ep.KMER_K), "n_splits": ep.N_SPLITS,
            "c_grids": ep.C_GRIDS, "pooling": "mean over positions of [h_fwd, h_rc]"}
    info |= {m: r.summary() for m, r in res.items()}
    info["wall_s"] = round(time.perf_counter() - t0, 2)
    rows = ep.task_rows(DATASET, res)
    bars = {DATASET: {m: r.summary()["mcc"] for m, r in res.items()}}
    plots = [savefig(ep.mcc_bars_figure(bars, NAME), out_dir / "mcc_bars.png"),
             savefig(ep.roc_figure(y, res, f"{DATASET}: out-of-fold ROC"), out_dir / "roc.png")]
    notes = [
        ("Sequences rebuilt from DNABERT's overlapping 6-mers (each checked to overlap the "
         "previous by 5 bases)."),
        (f"Stratified {ep.N_SPLITS}-fold CV, seed {ctx.seed}; MCC at probability 0.5 and AUROC, "
         "mean over folds (std and per-fold values in metrics.json)."),
        ("Embedding probe: mean-pooled [h_fwd, h_rc] → standardise → L2 logistic regression; "
         f"k-mer baseline: k = {ep.KMER_K[0]}..{ep.KMER_K[-1]} counts → L2 logistic regression; "
         f"C ({ep.describe_grids()}) by an inner {ep.INNER_SPLITS}-fold AUROC search per "
         "training fold."),
        ("This file is DNABERT's sample fine-tuning dev set, not the split its paper reports, "
         "so no published figure is cited."),
    ]
    if cap:
        notes.append(f"Quick subset: at most {cap} sequences per class.")
    if model is None:
        notes.append("No model: k-mer baseline only.")
    return BenchResult(metrics=info, rows=rows, plots=plots, notes=notes)


if __name__ == "__main__":
    main_module_entry(NAME)
