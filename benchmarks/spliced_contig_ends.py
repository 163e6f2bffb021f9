"""Eukaryote mode on a draft assembly: genes cut by contig ends, closed ends vs open (partial genes).

The TRAIN eukaryote chunks (A. thaliana, D. melanogaster; the validation chunk is not used) are
cut into contigs of ``--contig`` bases, as a draft assembly would be, and every contig is decoded
by the spliced decoder (``genoctx.heads.spliced_decoder.decode_many``, all contigs of a chunk
together) twice: with closed ends (every gene lies whole inside its contig: the default) and
with open ends (``DecoderParams.partial_ends``, ``genoctx annotate --mode eukaryote
--open-ends``: a gene may run off a contig end, cut to its whole codons and marked partial).
The calls are put back into record coordinates and scored against the whole records' annotation
with the evaluation harness's per-base metrics (exon = CDS base, intron), and per CDS base within
``--near`` bases of a contig end (sensitivity / precision there). The rows "whole records" decode
the uncut records, for reference (their own ends: a chromosome's start, and the chunk's end,
where the annotation of genes it cuts is left out of the scores).

The head's probabilities are those of the whole records (computed once and cached by
``benchmarks/eukaryote_train_chunks.py``), sliced per contig, so the rows differ only in how the
decoder treats the contig ends (the model itself, run on a contig alone, also sees less context
near its ends).

Each annotated gene's locus (``--loci`` FLANK bases either side) is decoded the same two ways:
where whole genes lie near both ends, open ends run them off the ends (exact CDS chains).

Run: ``python benchmarks/spliced_contig_ends.py [--contig 20000 50000] [--near 2000]
[--loci 150] [--data-root DIR] [--no-write]``; the table goes to ``docs/benchmarks.md`` (section
``spliced-contig-ends``) unless ``--no-write``.
"""

from __future__ import annotations

import sys
from pathlib import Path

# Put this folder last on the path: a sibling script named like a stdlib module (tokenize.py)
# must not shadow the standard library.
_HERE = Path(__file__).resolve().parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != _HERE] + [str(_HERE)]

import argparse
import dataclasses
import os
import time
from itertools import pairwise

import numpy as np


def _contigs(ds, size: int) -> list[tuple[str, str, int, int]]:
    """``(contig name, record, start, end)`` pieces of ``size`` bases (the last one of each
    record takes the rest)."""
    out = []
    for rec, seq in ds.records:
        n = len(seq)
        cuts = list(range(0, n - size // 2, size)) + [n] if n > size else [0, n]
        out += [(f"{rec}:{a}-{b}", rec, a, b) for a, b in pairwise(cuts)]
    return out


def _near_ends(ds, pieces, near: int) -> np.ndarray:
    """Mask (concatenated records) of the bases within ``near`` of a contig end that is not a
    record end."""
    offset = dict(zip([c for c, _ in ds.records],
                      np.cumsum([0] + [len(q) for _, q in ds.records[:-1]]).tolist()))
    lengths = ds.lengths
    m = np.zeros(len(ds.exon), dtype=bool)
    for _, rec, a, b in pieces:
        o = offset[rec]
        if a > 0:
            m[o + a:o + min(b, a + near)] = True
        if b < lengths[rec]:
            m[o + max(a, b - near):o + b] = True
    return m


def _loci(ds, flank: int) -> tuple[list, list]:
    """Gene loci as the validation small-gene set builds them: each annotated gene's span with
    ``flank`` bases on either side (``(name, record, start, end)``), and the transcripts lying
    whole inside each locus in its coordinates (``(name, strand, parts, gene)``)."""
    spans: dict = {}
    for contig, strand, parts, gene in ds.transcripts:
        lo, hi = spans.get((contig, gene), (parts[0][0], parts[-1][1]))
        spans[(contig, gene)] = (min(lo, parts[0][0]), max(hi, parts[-1][1]))
    lengths = ds.lengths
    pieces = [(f"{c}:{g}", c, max(0, lo - flank), min(lengths[c], hi + flank))
              for (c, g), (lo, hi) in sorted(spans.items(), key=lambda kv: (kv[0][0], kv[1]))]
    truth = [(n, strand, tuple((x - a, y - a) for x, y in parts), gene)
             for n, c, a, b in pieces for contig, strand, parts, gene in ds.transcripts
             if contig == c and a <= parts[0][0] and parts[-1][1] <= b]
    return pieces, truth


def main(argv=None) -> None:
    import eukaryote_train_chunks as etc

    from genoctx.eval.benchmarks import annotation_eukaryote as ae
    from genoctx.heads import spliced_decoder as sd
    from genoctx.io.dataroot import load_manifest, resolve_data_root

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--contig", type=int, nargs="+", default=[20_000, 50_000],
                    help="contig sizes (bases)")
    ap.add_argument("--near", type=int, default=2000,
                    help="bases from a contig end scored on their own")
    ap.add_argument("--loci", type=int, default=150, metavar="FLANK",
                    help="also decode each annotated gene's locus with FLANK bases either side "
                         "(whole genes near both ends: exact CDS chains, partial calls); "
                         "0: not")
    ap.add_argument("--model", default="embedded")
    ap.add_argument("--data-root", default=None)
    ap.add_argument("--no-write", action="store_true", help="print only; leave docs/ alone")
    args = ap.parse_args(argv)
    root = resolve_data_root(args.data_root)
    manifest = load_manifest(root)
    headers = ["chunk", "contigs", "ends", "genes", "partial genes", "exon F1", "intron F1",
               f"CDS sensitivity within {args.near:,} bp of a cut", "CDS precision there",
               "decode s"]
    print("\t".join(headers))
    table, loci_table = [], []
    for species in etc.CHUNKS:
        ds = etc.load(root, species, manifest)
        probs = etc.head_probs(ds, args.model)
        seqs = dict(ds.records)
        rows = [(f"{size:,} bp" if size else "whole records", size, ends)
                for size in [None, *args.contig] for ends in (False, True)]
        for label, size, open_ends in rows:
            params = sd.DecoderParams(partial_ends=open_ends)
            t0 = time.perf_counter()
            if size is None:
                pieces = [(c, c, 0, len(s)) for c, s in ds.records]
                genes = sd.decode_many(ds.records, probs, params=params)
            else:
                pieces = _contigs(ds, size)
                found = sd.decode_many([(n, seqs[r][a:b]) for n, r, a, b in pieces],
                                       {n: probs[r][a:b] for n, r, a, b in pieces},
                                       params=params)
                where = {n: (r, a) for n, r, a, _ in pieces}
                genes = [dataclasses.replace(g, contig=where[g.contig][0],
                                             cds=tuple((s + where[g.contig][1],
                                                        e + where[g.contig][1])
                                                       for s, e in g.cds))
                         for g in found]
            secs = time.perf_counter() - t0
            r = ae.score_structure(genes, ds)
            cds, _ = ae._masks(genes, ds)
            near = _near_ends(ds, pieces, args.near) & ds.keep
            tp = int((cds & ds.exon & near).sum())
            sens = tp / max(int((ds.exon & near).sum()), 1)
            prec = tp / max(int((cds & near).sum()), 1)
            n_partial = sum(any(g.partial) for g in genes)
            row = [species, label, "open" if open_ends else "closed", len(genes), n_partial,
                   f"{r['exon']['f1']:.3f}", f"{r['intron']['f1']:.3f}",
                   f"{sens:.3f}" if size else "-", f"{prec:.3f}" if size else "-", f"{secs:.1f}"]
            table.append(row)
            print("\t".join(map(str, row)), flush=True)
        if args.loci:
            pieces, truth = _loci(ds, args.loci)
            for open_ends in (False, True):
                params = sd.DecoderParams(partial_ends=open_ends)
                genes = sd.decode_many([(n, seqs[r][a:b]) for n, r, a, b in pieces],
                                       {n: probs[r][a:b] for n, r, a, b in pieces}, params=params)
                chain = ae.chain_metrics([(g.contig, g.strand, g.cds) for g in genes], truth,
                                         introns=False)
                row = [species, f"{len(pieces)} loci, ±{args.loci} bp",
                       "open" if open_ends else "closed", len(genes),
                       sum(any(g.partial) for g in genes), f"{chain['sensitivity']:.3f}",
                       f"{chain['precision']:.3f}"]
                loci_table.append(row)
                print("\t".join(map(str, row)), flush=True)
    if not args.no_write:
        from _report import md_table, section_head, write_section

        load = os.getloadavg()[0]
        write_section("spliced-contig-ends", section_head(
            "Eukaryote mode on contigs: genes cut by contig ends (closed vs open ends)",
            __file__, argv) + f"{__doc__.split(chr(10), 2)[2].split('Run:')[0].strip()}\n\n"
            f"Load average (1 min) at the end: {load:.2f} (decode s: wall seconds of the "
            "decoder on these shared cores).\n\n" + md_table(headers, table)
            + ("" if not loci_table else "\n\nEach annotated gene's locus (its span with "
               f"{args.loci} bp on either side, as the validation small-gene loci are cut), "
               "decoded as records of their own: exact CDS chains (strand and every CDS part) "
               "against the transcripts lying whole in the locus.\n\n"
               + md_table(["chunk", "records", "ends", "calls", "partial calls",
                           "CDS-chain sensitivity", "CDS-chain precision"], loci_table)))


if __name__ == "__main__":
    main()
