"""Benchmark ``promoters``: promoter vs non-promoter on the Umarov & Solovyev sets.

One binary task per organism and promoter class against that organism's non-promoters, as in
Umarov & Solovyev (PLOS ONE 2017; preprint arXiv:1610.00121, whose sets these are):
E. coli σ70 and B. subtilis (81 bp, -60..+20 around the TSS), A. thaliana TATA and non-TATA and
mouse TATA (251 bp, -200..+50; EPDnew), plus the extra mouse TATA set from DBTSS that the data
README lists, scored against the same mouse non-promoters. The pairing of each Arabidopsis class
with its non-promoter file follows the set sizes (TATA 1,497 : 2,879, non-TATA 5,905 : 11,459,
both about 1 : 2) and the ``*_big`` naming of the non-TATA negatives.

Per task: stratified 5-fold CV (seed ``ctx.seed``); an L2 logistic regression on the model's
pooled embeddings and one on k-mer counts (k = 1..6), on the same folds
(:mod:`genoctx.eval.embedding_probe`). Repeated sequences are dropped first; a class larger than
``CAP_PER_CLASS`` is subsampled (seeded), as the tiny CPU model embeds ~30 sequences of 251 bp
per second on one thread. Headline: MCC and AUROC, means over the folds.

Run: ``genoctx eval promoters`` (or ``python -m genoctx.eval.benchmarks.promoters``).
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from genoctx.eval import embedding_probe as ep
from genoctx.eval.harness import BenchContext, BenchResult, main_module_entry, savefig

NAME = "promoters"
DESCRIPTION = ("promoter vs non-promoter (Umarov & Solovyev sets: E. coli, B. subtilis, "
               "A. thaliana, mouse): embedding probe vs k-mer LR, 5-fold CV")

_DIR = "classification/promoters/"
_PUBLISHED = "CNNProm CC {} (published, Solovyev & Umarov arXiv:1610.00121; own split, not CV)"


@dataclass(frozen=True)
class Task:
    """One binary task: promoters (label 1) vs non-promoters (label 0) of one organism."""

    name: str
    positives: str
    negatives: str
    anchor_mcc: str = ""  # the published correlation coefficient (= MCC), where known exactly


TASKS: tuple[Task, ...] = (
    Task("E. coli σ70", _DIR + "Ecoli_prom.fa", _DIR + "Ecoli_non_prom.fa",
         _PUBLISHED.format("0.84")),
    Task("B. subtilis", _DIR + "Bacillus_prom.fa", _DIR + "Bacillus_non_prom.fa",
         _PUBLISHED.format("0.86")),
    Task("A. thaliana TATA", _DIR + "Arabidopsis_tata.fa", _DIR + "Arabidopsis_non_prom.fa",
         _PUBLISHED.format("0.91")),
    Task("A. thaliana non-TATA", _DIR + "Arabidopsis_non_tata.fa",
         _DIR + "Arabidopsis_non_prom_big.fa", _PUBLISHED.format("0.86")),
    Task("M. musculus TATA (EPDnew)", _DIR + "Mouse_tata.fa", _DIR + "Mouse_nonprom.fa"),
    Task("M. musculus TATA (DBTSS)", _DIR + "Mouse_tata_dbtss.fa", _DIR + "Mouse_nonprom.fa"),
)
CAP_PER_CLASS = 3000
QUICK_CAP, QUICK_TASKS = 150, 2
ROC_TASK = 0  # index into the tasks run: the task whose ROC curves are plotted


def load_task(ctx: BenchContext, task: Task,
              cap: int | None) -> tuple[list[bytes], np.ndarray, dict]:
    """Sequences and labels of one task after de-duplication and the per-class cap."""
    pos = ep.read_fasta_seqs(ctx.data_file(task.positives))
    neg = ep.read_fasta_seqs(ctx.data_file(task.negatives))
    seqs, y, dropped = ep.dedupe(pos + neg, np.r_[np.ones(len(pos)), np.zeros(len(neg))])
    n_pos_all, n_neg_all = int(y.sum()), int(len(y) - y.sum())
    keep = ep.cap_per_class(y, cap, ctx.seed)
    seqs, y = [seqs[i] for i in keep], y[keep].astype(np.int64)
    info = {"n_pos": int(y.sum()), "n_neg": int(len(y) - y.sum()),
            "n_pos_available": n_pos_all, "n_neg_available": n_neg_all,
            "duplicates_dropped": dropped,
            "lengths": sorted({len(s) for s in seqs})}
    return seqs, y, info


def data_files(quick: bool) -> tuple[str, ...]:
    """The manifest files :func:`run` reads (checked before any benchmark runs)."""
    tasks = TASKS[:QUICK_TASKS] if quick else TASKS
    return tuple(dict.fromkeys(f for t in tasks for f in (t.positives, t.negatives)))


def run(ctx: BenchContext) -> BenchResult:
    from genoctx.progress import progress_bar

    cap = QUICK_CAP if ctx.quick else CAP_PER_CLASS
    tasks = TASKS[:QUICK_TASKS] if ctx.quick else TASKS
    out_dir = ctx.bench_dir(NAME)
    model = ctx.backbone() if ctx.model is not None else None
    metrics: dict = {"cap_per_class": cap, "kmer_k": list(ep.KMER_K), "n_splits": ep.N_SPLITS,
                     "c_grids": ep.C_GRIDS, "pooling": "mean over positions of [h_fwd, h_rc]",
                     "tasks": {}}
    loaded = [(t, *load_task(ctx, t, cap)) for t in tasks]
    rows, bars, roc = [], {}, None
    cache: dict = {}  # the two mouse tasks share their negatives
    total = len({s for _, seqs, _, _ in loaded for s in seqs}) if model is not None else 0
    with progress_bar("promoter embeddings", total, ctx.quiet or model is None) as bar:
        for i, (task, seqs, y, info) in enumerate(loaded):
            t0 = time.perf_counter()
            res = ep.probe_task(seqs, y, seed=ctx.seed, model=model, cache=cache,
                                progress=bar.advance)
            info = info | {m: r.summary() for m, r in res.items()}
            info["wall_s"] = round(time.perf_counter() - t0, 2)
            metrics["tasks"][task.name] = info
            rows += ep.task_rows(task.name, res, {"MCC": task.anchor_mcc})
            bars[task.name] = {m: r.summary()["mcc"] for m, r in res.items()}
            if i == ROC_TASK:
                roc = (task.name, y, res)
    plots = [savefig(ep.mcc_bars_figure(bars, "promoter vs non-promoter"),
                     out_dir / "mcc_bars.png")]
    name, y, res = roc
    plots.append(savefig(ep.roc_figure(y, res, f"{name}: out-of-fold ROC"), out_dir / "roc.png"))
    return BenchResult(metrics=metrics, rows=rows, plots=plots, notes=_notes(ctx, cap, metrics))


def _notes(ctx: BenchContext, cap: int, metrics: dict) -> list[str]:
    capped = [f"{n} ({m['n_pos']}/{m['n_pos_available']} promoters, "
              f"{m['n_neg']}/{m['n_neg_available']} non-promoters)"
              for n, m in metrics["tasks"].items()
              if m["n_pos"] < m["n_pos_available"] or m["n_neg"] < m["n_neg_available"]]
    notes = [
        ("Tasks: each promoter set against its organism's non-promoters (Umarov & Solovyev "
         "2017); the DBTSS mouse TATA set shares the EPDnew task's non-promoters."),
        (f"Stratified {ep.N_SPLITS}-fold CV, seed {ctx.seed}; MCC at probability 0.5 and AUROC, "
         "mean over folds (std and per-fold values in metrics.json)."),
        ("Embedding probe: mean over positions of the forward and reverse-complement hidden "
         "states, concatenated (2·d_model) → standardise → L2 logistic regression."),
        (f"k-mer baseline: counts of every k-mer, k = {ep.KMER_K[0]}..{ep.KMER_K[-1]} "
         "(windows touching N skipped) → unit variance → L2 logistic regression."),
        (f"Both probes pick C ({ep.describe_grids()}) by a {ep.INNER_SPLITS}-fold AUROC search "
         "inside each training fold; nothing is fitted on a test fold."),
        f"Repeated sequences dropped; classes capped at {cap} sequences (seeded): "
        + ("; ".join(capped) if capped else "no class was capped") + ".",
        ("Published CNNProm figures are on the authors' own train/test split and are given "
         "for scale only; no mouse figure is cited."),
    ]
    if ctx.model is None:
        notes.append("No model: k-mer baseline only.")
    return notes


if __name__ == "__main__":
    main_module_entry(NAME)
