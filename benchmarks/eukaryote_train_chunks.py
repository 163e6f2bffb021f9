"""Eukaryote mode on the TRAIN eukaryote chunks: how the spliced decoder's CDS floor shapes its calls.

The spliced decoder (``genoctx.heads.spliced_decoder``) decodes the annotation head's
probabilities on the A. thaliana and D. melanogaster chunks (train role: development data; the
validation chunk, C. elegans, is scored by ``genoctx eval annotation-eukaryote``). For each
``--min-cds`` value it prints the number of genes called against the annotated transcripts, exon
and intron F1 (per base), exact CDS-chain sensitivity / precision, with the metrics of the
evaluation harness, and how many calls hold no annotated CDS base at all ("calls off CDS").
The head's probabilities are computed once per chunk and cached under
``results/eukaryote_train_chunks/`` (about 80 s per chunk on 2 CPU cores).

``--spliced-floor N`` applies ``--min-cds`` to unspliced genes only and N to spliced ones (a
filter after decoding with the lower floor). ``--head-weight`` and ``--coding-weight`` set the
decoder's weights of the head's log-scores and of the coding model
(:mod:`genoctx.heads.eukaryote_coding`); the shipped coding model was fitted on these chunks,
so ``--held-out`` decodes each chunk with one fitted on the other species only, and with splice-site
matrices (:mod:`genoctx.heads.splice_sites`) fitted on the other species' introns only;
``--coding-background noncoding`` fits that coding model against the hexamers outside annotated
CDS instead of every base's.
``--errors`` adds a gene-level breakdown of the calls: annotated genes (transcripts grouped by
gene) overlapped on their strand by exactly one call, by several (split) or by none (missed);
calls overlapping several annotated genes (merged); and the share of first / last exons of
spliced calls and of annotated transcripts shorter than 20 bp (in gene orientation).
``--param NAME=V1,V2,...`` sweeps any other numeric field of ``DecoderParams`` (``splice_weight``,
``mean_intron``, ``mean_exon``, ``min_intron``, ``mean_intergenic``); several ``--param`` options
make a grid, and each row names its settings.

Run: ``python benchmarks/eukaryote_train_chunks.py [--min-cds 60 150 300] [--spliced-floor N]
[--head-weight 1 0.25] [--coding-weight 0 5] [--param splice_weight=0.5,1,2] [--held-out]
[--coding-background all|noncoding] [--errors]
[--model embedded]``.
"""

from __future__ import annotations

import sys
from pathlib import Path

# Put this folder last on the path: a sibling script named like a stdlib module (tokenize.py)
# must not shadow the standard library.
_HERE = Path(__file__).resolve().parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != _HERE] + [str(_HERE)]

import argparse
import itertools

import numpy as np

CHUNKS = ("A.thaliana", "D.melanogaster")
CACHE = _HERE.parent / "results" / "eukaryote_train_chunks"


def load(root: Path, species: str, manifest: dict):
    """The chunk as the evaluation harness's Dataset (train role checked)."""
    from genoctx.errors import InputError
    from genoctx.eval.benchmarks import annotation_eukaryote as ae
    from genoctx.io.annotation import read_features
    from genoctx.io.annotation import read_sequences

    fa, gff = (f"genomes/eukaryote_chunks/{species}.{ext}.gz" for ext in ("fa", "gff"))
    for rel in (fa, gff):
        if manifest[rel].role != "train":
            raise InputError(f"{rel} is {manifest[rel].role}, not train: not for development")
    records = read_sequences(root / fa)
    features = read_features(root / gff)
    kept, cut = {}, {}
    for contig, seq in records:
        kept[contig], cut[contig] = ae._clip(features.get(contig, []), len(seq))
    return ae._truth(species, records, kept, cut)


def head_probs(ds, model: str) -> dict[str, np.ndarray]:
    """Head probabilities per record, cached (float16) per chunk and model."""
    from genoctx.heads.annotation import load_annotation_model, predict_probs
    from genoctx.model.checkpoint import resolve_checkpoint, verify_digest
    from genoctx.tokenize import nucleotide as nt

    sha = verify_digest(resolve_checkpoint(model))[:12]
    path = CACHE / f"probs_{ds.name}_{sha}.npz"
    if path.is_file():
        with np.load(path) as data:
            return {c: data[c].astype(np.float32) for c, _ in ds.records}
    backbone, head = load_annotation_model(model, device="cpu")
    out = {c: predict_probs(backbone, head, nt.encode(s), context=8192,
                            overlap=1024).astype(np.float16) for c, s in ds.records}
    CACHE.mkdir(parents=True, exist_ok=True)
    np.savez(path, **out)
    return {c: p.astype(np.float32) for c, p in out.items()}


def _overlap(p, q) -> int:
    return sum(max(0, min(b1, b2) - max(a1, a2)) for a1, b1 in p for a2, b2 in q)


def _short_ends(items, below: int = 20) -> tuple[float, float]:
    """Share of first and of last exons (gene orientation) under ``below`` bp, over the spliced
    (strand, CDS parts) items."""
    first = last = n = 0
    for strand, parts in items:
        parts = sorted(parts)
        if len(parts) < 2:
            continue
        lo, hi = parts[0][1] - parts[0][0], parts[-1][1] - parts[-1][0]
        f, z = (lo, hi) if strand > 0 else (hi, lo)
        first, last, n = first + (f < below), last + (z < below), n + 1
    return (first / n, last / n) if n else (0.0, 0.0)


def gene_errors(genes, ds) -> dict[str, float]:
    """Splits, merges and misses of the calls against the annotated genes, and short first / last
    exons of calls and of annotations (see the module docstring)."""
    annotated: dict[tuple, tuple[int, list]] = {}
    for contig, strand, parts, gid in ds.transcripts:
        annotated.setdefault((contig, strand, gid), (strand, []))[1].extend(parts)
    by_contig: dict[tuple, list] = {}
    for g in genes:
        by_contig.setdefault((g.contig, g.strand), []).append(g)
    one = split = missed = 0
    hit_by: dict[int, set] = {}
    for key, (strand, parts) in annotated.items():
        hits = [g for g in by_contig.get(key[:2], []) if _overlap(parts, g.cds)]
        for g in hits:
            hit_by.setdefault(id(g), set()).add(key)
        one, split, missed = one + (len(hits) == 1), split + (len(hits) > 1), missed + (not hits)
    call_first, call_last = _short_ends([(g.strand, g.cds) for g in genes])
    ann_first, ann_last = _short_ends([(s, p) for _, s, p, _ in ds.transcripts])
    return {"one call": one, "split": split, "missed": missed,
            "merged": sum(len(v) > 1 for v in hit_by.values()),
            "first<20 calls": call_first, "last<20 calls": call_last,
            "first<20 annotated": ann_first, "last<20 annotated": ann_last}


def main(argv=None) -> None:
    from genoctx.eval.benchmarks import annotation_eukaryote as ae
    from genoctx.heads import spliced_decoder as sd
    from genoctx.io.dataroot import load_manifest, resolve_data_root

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--min-cds", type=int, nargs="+", default=[60, 150, 300])
    ap.add_argument("--spliced-floor", type=int, default=None,
                    help="CDS floor of spliced genes (default: --min-cds for all genes)")
    ap.add_argument("--head-weight", type=float, nargs="+", default=[None],
                    help="DecoderParams.head_weight values (default: the decoder's)")
    ap.add_argument("--coding-weight", type=float, nargs="+", default=[None],
                    help="DecoderParams.coding_weight values (default: the decoder's; 0: off)")
    ap.add_argument("--param", action="append", default=[], metavar="NAME=V1,V2",
                    help="sweep another DecoderParams field (repeatable: a grid)")
    ap.add_argument("--coding-background", choices=("all", "noncoding"), default="all",
                    help="with --held-out: the coding model's background hexamers, both strands "
                         "of every base (shipped) or only bases outside annotated CDS")
    ap.add_argument("--held-out", action="store_true",
                    help="decode each chunk with a coding model and splice-site matrices "
                         "fitted on the other species")
    ap.add_argument("--splice-model", choices=("pwm", "lr"), default="pwm",
                    help="with --held-out: splice sites as position weight matrices or as "
                         "logistic regressions over wider windows with base pairs "
                         "(splice_sites.fit_site_models)")
    ap.add_argument("--errors", action="store_true",
                    help="add the gene-level breakdown: genes with one call, split, missed; "
                         "merging calls; short first / last exons")
    ap.add_argument("--model", default="embedded")
    ap.add_argument("--data-root", default=None)
    args = ap.parse_args(argv)
    if args.splice_model != "pwm" and not args.held_out:
        ap.error("--splice-model needs --held-out (the shipped sites are fitted on both chunks)")
    if args.coding_background != "all" and not args.held_out:
        ap.error("--coding-background needs --held-out (the shipped model's background is 'all')")
    fields = {f.name: f for f in sd.DecoderParams.__dataclass_fields__.values()}
    sweeps = []  # [(name, [values])]
    for item in args.param:
        name, _, values = item.partition("=")
        if name not in fields or name in ("min_cds", "head_weight", "coding_weight"):
            ap.error(f"--param {item!r}: not a DecoderParams field swept here")
        cast = int if fields[name].type in (int, "int", bool, "bool") else float
        sweeps.append((name, [cast(v) for v in values.split(",")]))
    root = resolve_data_root(args.data_root)
    manifest = load_manifest(root)
    print("chunk\tmin_cds\thead_weight\tcoding_weight\tgenes\tannotated transcripts\texon F1"
          "\texon precision\texon recall"
          "\tintron F1\tCDS-chain sensitivity\tCDS-chain precision\tcalls off CDS\tparams"
          + ("\tgenes with one call\tsplit\tmissed\tcalls merging genes"
             "\tfirst / last exons < 20 bp (calls)\t(annotated)" if args.errors else ""))
    for species in CHUNKS:
        ds = load(root, species, manifest)
        # where each record starts in the dataset's concatenated masks
        offset = dict(zip([c for c, _ in ds.records],
                          np.cumsum([0] + [len(q) for _, q in ds.records[:-1]]).tolist()))
        probs = head_probs(ds, args.model)
        coding = sites = None  # the shipped models
        if args.held_out:
            from genoctx.heads import eukaryote_coding as ec

            others = [c for c in CHUNKS if c != species]
            coding = ec.fit([(r, f) for _, _, r, f in ec.load_chunks(args.data_root, others)],
                            background=args.coding_background)
            from genoctx.heads import splice_sites as ss

            fit = ss.fit_matrices if args.splice_model == "pwm" else ss.fit_site_models
            sites = fit([e for _, fa, ex in ss.load_examples(args.data_root)
                         if species not in fa for e in ex])
        extra = [dict(zip([n for n, _ in sweeps], combo))
                 for combo in itertools.product(*[v for _, v in sweeps])]
        grid = [(f, h, w, x) for f in args.min_cds for h in args.head_weight
                for w in args.coding_weight for x in extra]
        for floor, head_w, weight, more in grid:
            low = floor if args.spliced_floor is None else min(floor, args.spliced_floor)
            kw = {k: v for k, v in (("head_weight", head_w), ("coding_weight", weight))
                  if v is not None}
            params = sd.DecoderParams(min_cds=low, **kw, **more)
            head_w, weight = params.head_weight, params.coding_weight
            genes = sd.decode_many(ds.records, probs, params=params, coding=coding,
                                   sites=sites)
            if args.spliced_floor is not None:
                genes = [g for g in genes
                         if g.cds_length >= (args.spliced_floor if len(g.cds) > 1 else floor)]
            r = ae.score_structure(genes, ds)
            chain = r["cds_chain"]
            # calls none of whose CDS bases is an annotated CDS base
            off = sum(not any(ds.exon[offset[g.contig] + a:offset[g.contig] + b].any()
                              for a, b in g.cds) for g in genes)
            print(f"{species}\t{floor}\t{head_w:g}\t{weight:g}\t{r['n_genes']}\t"
                  f"{len(ds.transcripts)}\t"
                  f"{r['exon']['f1']:.3f}\t{r['exon']['precision']:.3f}\t"
                  f"{r['exon']['recall']:.3f}\t{r['intron']['f1']:.3f}\t"
                  f"{chain['sensitivity'] or 0:.3f}\t{chain['precision'] or 0:.3f}\t{off}\t"
                  f"{','.join(f'{k}={v:g}' for k, v in more.items()) or '-'}"
                  + _error_columns(genes, ds, args.errors), flush=True)


def _error_columns(genes, ds, wanted: bool) -> str:
    if not wanted:
        return ""
    e = gene_errors(genes, ds)
    return (f"\t{e['one call']}\t{e['split']}\t{e['missed']}\t{e['merged']}"
            f"\t{e['first<20 calls']:.3f} / {e['last<20 calls']:.3f}"
            f"\t{e['first<20 annotated']:.3f} / {e['last<20 annotated']:.3f}")


if __name__ == "__main__":
    main()
