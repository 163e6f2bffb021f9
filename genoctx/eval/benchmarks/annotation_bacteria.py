"""Benchmark ``annotation-bacteria``: gene calling on the held-out bacterial genomes.

For each validation genome (Brucella melitensis 16M, Haemophilus influenzae Rd KW20) it scores
three callers on the same records: genoctx with the annotation model's probabilities, the genoctx
decoder on the sequence alone, and Prodigal (pyrodigal, trained on the genome as its users run
it). Gene level: a call matches a true gene when strand and stop coordinate agree (truth = CDS not
``pseudo`` and not joined). Per base: CDS vs non-CDS F1 and MCC of the model's argmax classes,
over bases that are ground truth.

Run: ``python -m genoctx.eval.benchmarks.annotation_bacteria --model embedded --out results/eval``
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np

from genoctx.eval.metrics import binary_scores, gene_metrics
from genoctx.heads.annotate import decoder_params
from genoctx.heads.classes import CDS_MINUS, CDS_PLUS
from genoctx.heads.decoder import GeneCall, call_genes_multi
from genoctx.io.annotation import label_tracks, read_features, read_genes, read_sequences_genbank
from genoctx.model import checkpoint
from genoctx.io.dataroot import HELD_OUT_ROLES, require_role, resolve_data_root, sha256_file
from genoctx.tokenize import nucleotide as nt

GENOMES = (
    "genomes/bacteria/Brucella_melitensis_16M.gbff.gz",
    "genomes/bacteria/Haemophilus_influenzae_Rd_KW20.gbff.gz",
)


def prodigal_calls(records: list[tuple[str, bytes]]) -> list[GeneCall]:
    """pyrodigal trained on the genome itself (all records), as Prodigal's users run it."""
    import pyrodigal

    finder = pyrodigal.GeneFinder(closed=False)
    finder.train(*[s for _, s in records])
    return [GeneCall(cid, g.begin - 1, g.end, g.strand, g.confidence() / 100.0, g.start_type,
                     (bool(g.partial_begin), bool(g.partial_end)))
            for cid, s in records for g in finder.find_genes(s)]


def model_probs(records, model, *, context: int, overlap: int, cache: Path | None, quiet: bool):
    """Per-base class probabilities of every record (cached as .npz beside the results)."""
    from genoctx.heads.annotation import load_annotation_model, predict_probs
    from genoctx.progress import progress_bar

    if cache is not None and cache.is_file():
        data = np.load(cache)
        if all(c in data for c, _ in records):
            return {c: data[c] for c, _ in records}
    backbone, head = load_annotation_model(model)
    out = {}
    with progress_bar("model probabilities", sum(len(s) for _, s in records), quiet) as bar:
        for c, s in records:
            out[c] = predict_probs(backbone, head, nt.encode(s), context=context, overlap=overlap,
                                   progress=bar.advance).astype(np.float16)
    if cache is not None:
        cache.parent.mkdir(parents=True, exist_ok=True)
        np.savez(cache, **out)
    return out


def base_scores(records, probs, path) -> dict:
    """CDS-vs-rest per-base F1/MCC of the argmax class, over ground-truth bases."""
    lengths = {c: len(s) for c, s in records}
    tracks = label_tracks(read_features(path), lengths)
    cds = np.asarray(CDS_PLUS + CDS_MINUS)
    preds, trues, masks = [], [], []
    for c, _ in records:
        t = tracks[c]
        true = (t.cds_phase_plus >= 0) | (t.cds_phase_minus >= 0)
        preds.append(np.isin(probs[c].argmax(1), cds))
        trues.append(true)
        masks.append(~t.ignore)
    return binary_scores(np.concatenate(preds), np.concatenate(trues), np.concatenate(masks))


def evaluate(model: str | None, data_root=None, out: Path | None = None, *, context: int = 8192,
             overlap: int = 1024, quiet: bool = False, genomes=GENOMES) -> dict:
    """Metrics for every genome and caller; ``model=None`` skips the neural caller."""
    root = resolve_data_root(data_root)
    results = {"genomes": {}, "data_files": []}
    for rel in genomes:
        path = root / rel
        role = require_role(path, HELD_OUT_ROLES, root, purpose="evaluation")
        results["data_files"].append({"path": rel, "sha256": sha256_file(path), "role": role})
        records = list(read_sequences_genbank(path))
        truth = read_genes(path)
        name = Path(rel).name.split(".gbff")[0]
        row = {}
        callers = [("genoctx (sequence only)", lambda: call_genes_multi(records, None)),
                   ("prodigal", lambda: prodigal_calls(records))]
        if model is not None:
            cache = out / f"{name}.probs.npz" if out else None
            probs = model_probs(records, model, context=context, overlap=overlap, cache=cache,
                                quiet=quiet)
            f32 = {c: p.astype(np.float32) for c, p in probs.items()}
            params = decoder_params(checkpoint.resolve_checkpoint(model))
            callers.insert(0, ("genoctx (model)",
                               lambda: call_genes_multi(records, f32, params=params)))
            row["per_base_cds"] = base_scores(records, f32, path)
        for tool, fn in callers:
            t0 = time.perf_counter()
            m = gene_metrics(fn(), truth)
            row[tool] = m.as_dict() | {"wall_s": round(time.perf_counter() - t0, 2)}
        results["genomes"][name] = row
    return results


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="embedded", help="checkpoint dir, 'embedded' or 'none'")
    ap.add_argument("--data-root", default=None)
    ap.add_argument("--out", type=Path, default=Path("results/eval/annotation-bacteria"))
    ap.add_argument("--context", type=int, default=8192)
    ap.add_argument("--overlap", type=int, default=1024)
    ap.add_argument("--genomes", nargs="*", default=list(GENOMES), help="manifest paths")
    args = ap.parse_args(argv)
    res = evaluate(None if args.model == "none" else args.model, args.data_root, args.out,
                   context=args.context, overlap=args.overlap, genomes=args.genomes)
    import sys

    res["command"] = "python -m genoctx.eval.benchmarks.annotation_bacteria " + " ".join(
        sys.argv[1:] if argv is None else argv)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "metrics.json").write_text(json.dumps(res, indent=2) + "\n")
    print(json.dumps(res["genomes"], indent=1))


if __name__ == "__main__":
    main()
