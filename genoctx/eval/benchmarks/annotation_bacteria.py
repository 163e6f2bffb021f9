"""Benchmark ``annotation-bacteria``: gene calling on the held-out bacterial genomes.

For each validation genome (Brucella melitensis 16M, Haemophilus influenzae Rd KW20) it scores
three callers on the same records: genoctx with the annotation model's probabilities (the
decoder weights shipped with the checkpoint, as ``genoctx annotate`` runs), the genoctx decoder
on the sequence alone, and Prodigal (pyrodigal, trained on the genome as its users run it).

- Gene level: a call matches a true gene when contig, strand and stop coordinate agree (truth =
  CDS not ``pseudo`` and not joined); sensitivity, precision, F1, and start agreement among
  matches.
- Per base (model only): CDS-vs-rest F1 and MCC of the argmax class, and the F1 of every class,
  over bases that are ground truth.

Run: ``genoctx eval annotation-bacteria`` (or ``python -m genoctx.eval.benchmarks.annotation_bacteria``).
"""

from __future__ import annotations

import time
from functools import partial
from pathlib import Path

import numpy as np

from genoctx.eval.harness import BenchContext, BenchResult, Row, main_module_entry, savefig
from genoctx.eval.metrics import binary_scores, confusion_matrix, gene_metrics, per_class_f1
from genoctx.heads.annotate import call_bacterial
from genoctx.heads.annotation import probs_cache_key
from genoctx.heads.classes import CDS_MINUS, CDS_PLUS, CLASSES, NUM_CLASSES
from genoctx.heads.decoder import GeneCall
from genoctx.io.annotation import label_tracks, read_features, read_genes, read_sequences_genbank
from genoctx.tokenize import nucleotide as nt

NAME = "annotation-bacteria"
DESCRIPTION = "gene calling on B. melitensis 16M and H. influenzae Rd KW20 (validation) vs Prodigal"

GENOMES = (
    "genomes/bacteria/Brucella_melitensis_16M.gbff.gz",
    "genomes/bacteria/Haemophilus_influenzae_Rd_KW20.gbff.gz",
)
QUICK_BASES = 120_000  # quick mode: the first 120 kb of each genome's first record
NEEDS_HEAD = True  # the model's rows are its annotation head's probabilities
CONTEXT, OVERLAP = 8192, 1024



def prodigal_calls(records: list[tuple[str, bytes]]) -> list[GeneCall]:
    """pyrodigal trained on the genome itself (all records), as Prodigal's users run it.

    Under 20 kb in all Prodigal cannot train, and its users switch to metagenomic mode (``-p
    meta``, pre-trained models); so does this.
    """
    import pyrodigal

    if sum(len(s) for _, s in records) < 20_000:
        finder = pyrodigal.GeneFinder(meta=True, closed=False)
    else:
        finder = pyrodigal.GeneFinder(closed=False)
        finder.train(*[s for _, s in records])
    return [GeneCall(cid, g.begin - 1, g.end, g.strand, g.confidence() / 100.0, g.start_type,
                     (bool(g.partial_begin), bool(g.partial_end)))
            for cid, s in records for g in finder.find_genes(s)]


def model_probs(ctx: BenchContext, records, cache: Path) -> dict[str, np.ndarray]:
    """Per-base class probabilities [L, 17] of every record, float16, cached by model sha256."""
    from genoctx.heads.annotation import (
        load_annotation_model,
        load_probs_cache,
        predict_probs,
        save_probs_cache,
    )
    from genoctx.progress import progress_bar

    cached = None if ctx.fresh else load_probs_cache(cache, [(c, len(s)) for c, s in records])
    if cached is not None:
        return cached
    backbone, head = load_annotation_model(ctx.model, device=ctx.device)
    out = {}
    with progress_bar("model probabilities", sum(len(s) for _, s in records), ctx.quiet) as bar:
        for c, s in records:
            out[c] = predict_probs(backbone, head, nt.encode(s), context=CONTEXT, overlap=OVERLAP,
                                   progress=bar.advance).astype(np.float16)
    save_probs_cache(cache, out)
    return out


def base_scores(records, probs, tracks) -> dict:
    """CDS-vs-rest F1/MCC of the argmax class and per-class F1, over ground-truth bases."""
    from genoctx.heads.annotation import labels_from_tracks

    cds = np.asarray(CDS_PLUS + CDS_MINUS)
    cm = np.zeros((NUM_CLASSES, NUM_CLASSES), dtype=np.int64)
    preds, trues, masks = [], [], []
    for c, s in records:
        L = len(s)
        y = labels_from_tracks(tracks[c])[:L]
        arg = probs[c].argmax(1)
        cm += confusion_matrix(y, arg, NUM_CLASSES)
        preds.append(np.isin(arg, cds))
        trues.append(np.isin(y, cds))
        masks.append(y >= 0)
    scores = binary_scores(np.concatenate(preds), np.concatenate(trues), np.concatenate(masks))
    f1 = per_class_f1(cm)
    scores["per_class_f1"] = {CLASSES[k]: (None if np.isnan(f1[k]) else float(f1[k]))
                              for k in range(NUM_CLASSES)}
    return scores


def probs_cache_path(ctx: BenchContext, rel: str, directory: Path, out_dir: Path) -> Path:
    """Where the model's probabilities of genome ``rel`` are cached: named by the checkpoint
    (:func:`probs_cache_key`), the windows, the device kind and the genome file's bytes, so a
    file replaced under the same name is computed again."""
    from genoctx.io.dataroot import sha256_file

    digest = probs_cache_key(directory, CONTEXT, OVERLAP, str(ctx.device).split(":")[0],
                             sha256_file(ctx.data_file(rel)))[:16]
    name = Path(rel).name.split(".gbff")[0]
    return out_dir / f"{name}.{digest}.{'quick' if ctx.quick else 'full'}.probs.npz"


def _load(ctx: BenchContext, rel: str):
    """Records, truth genes and label tracks of one genome (sliced in quick mode)."""
    path = ctx.data_file(rel)
    records = list(read_sequences_genbank(path))
    tracks = label_tracks(read_features(path), {c: len(s) for c, s in records})
    truth = read_genes(path)
    if ctx.quick:
        c0, s0 = records[0]
        records = [(c0, s0[:QUICK_BASES])]
        truth = [g for g in truth if g.contig == c0 and g.end <= QUICK_BASES]
    return records, truth, tracks


def _complete(calls: list[GeneCall], records) -> list[GeneCall]:
    """Quick mode: drop calls cut by the slice end (they would count as false positives)."""
    ends = {c: len(s) for c, s in records}
    return [g for g in calls if g.end < ends[g.contig] - 3 or not any(g.partial)]


def _genoctx_calls(records, probs, params=None) -> list[GeneCall]:
    """The CDS calls ``genoctx annotate`` writes (decoder, minus CDS inside RNA genes when the
    RNA finders are installed)."""
    return call_bacterial(records, probs, params=params)[0]


def data_files(quick: bool) -> tuple[str, ...]:
    """The manifest files :func:`run` reads (checked before any benchmark runs)."""
    return GENOMES


def run(ctx: BenchContext) -> BenchResult:
    from genoctx.heads.annotate import decoder_params
    from genoctx.model import checkpoint

    out_dir = ctx.bench_dir(NAME)
    metrics: dict = {"genomes": {}, "quick_bases": QUICK_BASES if ctx.quick else None,
                     "context": CONTEXT, "overlap": OVERLAP}
    rows: list[Row] = []
    notes = [("A predicted gene matches a true one when contig, strand and stop coordinate agree; "
              "truth excludes pseudo and joined CDS."),
             "Prodigal is pyrodigal trained on each genome (all records), run here."
             if not ctx.quick else
             f"Prodigal is pyrodigal trained on the {QUICK_BASES // 1000} kb slice of each "
             "genome that --quick scores, run here."]
    bars: dict[str, dict[str, float]] = {}
    shown = None
    for rel in GENOMES:
        records, truth, tracks = _load(ctx, rel)
        name = Path(rel).name.split(".gbff")[0]
        row: dict = {"n_bases": sum(len(s) for _, s in records), "n_true_genes": len(truth)}
        callers = {"genoctx (sequence only)": partial(_genoctx_calls, records, None),
                   "prodigal": partial(prodigal_calls, records)}
        f32 = None
        if ctx.model is not None:
            directory = checkpoint.resolve_checkpoint(ctx.model)
            probs = model_probs(ctx, records, probs_cache_path(ctx, rel, directory, out_dir))
            f32 = {c: p.astype(np.float32) for c, p in probs.items()}
            params = decoder_params(directory)
            model_call = partial(_genoctx_calls, records, f32, params=params)
            callers = {"genoctx (model)": model_call} | callers
            row["per_base"] = base_scores(records, f32, tracks)
        calls_by = {}
        for tool, fn in callers.items():
            t0 = time.perf_counter()
            calls = fn()
            if ctx.quick:
                calls = _complete(calls, records)
            calls_by[tool] = calls
            m = gene_metrics(calls, truth).as_dict()
            row[tool] = m
            row.setdefault("wall_s", {})[tool] = round(time.perf_counter() - t0, 2)
            for metric in ("sensitivity", "precision", "f1", "start_agreement"):
                rows.append(Row(name, tool, f"gene {metric}", m[metric]))
        if "per_base" in row:
            pb = row["per_base"]
            rows.append(Row(name, "genoctx (model)", "per-base CDS F1", pb["f1"]))
            rows.append(Row(name, "genoctx (model)", "per-base CDS MCC", pb["mcc"]))
        metrics["genomes"][name] = row
        bars[name] = {tool: row[tool]["f1"] for tool in callers}
        shown = (name, records, truth, calls_by, f32)
    # Prodigal runs last on each genome: put its numbers beside the other callers'.
    for r in rows:
        prod = metrics["genomes"][r.dataset].get("prodigal")
        if r.method != "prodigal" and r.metric.startswith("gene ") and prod:
            key = r.metric[5:]
            r.anchor = ("Prodigal n/a (run here)" if prod[key] is None
                        else f"Prodigal {prod[key]:.3f} (run here)")
    plots = [savefig(_bars(bars), out_dir / "gene_f1.png")]
    plots.append(savefig(_tracks(*shown), out_dir / "tracks.png"))
    return BenchResult(metrics=metrics, rows=rows, plots=plots, notes=notes)


def _bars(bars):
    from genoctx.eval.plots import grouped_bars

    return grouped_bars(bars, "gene-level F1 (strand + stop)", "annotation-bacteria")


def _tracks(name, records, truth, calls_by, probs, span: int = 15_000):
    from genoctx.eval.plots import track_figure

    contig = records[0][0]
    lo, hi = 0, min(span, len(records[0][1]))
    pred = calls_by.get("genoctx (model)") or calls_by["genoctx (sequence only)"]
    tracks = {}
    if probs is not None:
        p = probs[contig][lo:hi]
        tracks = {"CDS+": p[:, list(CDS_PLUS)].sum(1), "CDS-": p[:, list(CDS_MINUS)].sum(1),
                  "intergenic": p[:, 0]}
    return track_figure(contig, lo, hi, truth=truth, predicted=pred, tracks=tracks,
                        title=f"{name} {contig}:{lo + 1}-{hi}: annotated vs genoctx")


if __name__ == "__main__":
    main_module_entry(NAME)
