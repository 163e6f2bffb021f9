"""Which part of Prodigal's start scores would close genoctx's start gap? Swap them in, one set at a time.

A diagnostic, never shipped: on each TRAIN genome the decoder (without the ORF scorer, whose fit
saw these genomes) self-trains as usual; Prodigal (pyrodigal) is trained on the same genome and
scores every start node of it (its ``Nodes.score``: coding ``cscore``, codon type ``tscore``,
Shine–Dalgarno ``rscore``, and the rest of ``sscore``, upstream composition with its penalties,
``u``). For each set of parts the decoder's own weighted part (coding part, codon type, RBS,
upstream composition) is replaced, candidate by candidate, by Prodigal's value of the same node
through ``GenomeDecoder.start_adjust``, and the genome is decoded again. Everything else — which
ORFs are genes, the dynamic programme, the overlap rules — stays genoctx's.

Also prints a linear fit of each of Prodigal's parts on genoctx's over the candidate starts of
the ORFs genoctx calls (correlation, slope): how alike the two tools' scores are.

Prints sensitivity / precision / F1 / start agreement per genome and swap, then the means. About
1 minute a genome on 2 cores. Run:
``python benchmarks/decoder_start_prodigal_parts.py [GENOME ...]`` (default: decoder_dev.py's
five development genomes; train-role genomes only).
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

# Put this folder last on the path: a sibling script named like a stdlib module (tokenize.py)
# must not shadow the standard library.
_HERE = Path(__file__).resolve().parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != _HERE] + [str(_HERE)]
os.environ.setdefault("OMP_NUM_THREADS", "1")

import numpy as np
from decoder_dev import GENOMES

from genoctx.eval.metrics import gene_metrics
from genoctx.heads import decoder as dec
from genoctx.io.annotation import read_genes, read_sequences_genbank
from genoctx.io.dataroot import load_manifest, resolve_data_root

PARTS = "ctru"  # coding, type, RBS, upstream (and the rest of the start score)
SWAPS = {"none": "", "coding": "c", "type": "t", "rbs": "r", "upstream": "u", "start": "tru",
         "all": "ctru", "all-but-coding": "tru", "all-but-upstream": "ctr",
         "coding+upstream": "cu"}
COLS = ("sensitivity", "precision", "f1", "start_agreement")


def prodigal_parts(records) -> dict:
    """``{(contig, strand, node index): (c, t, r, u)}`` for every start node Prodigal scores on
    ``records`` after training on all of them (edge nodes left out)."""
    import pyrodigal
    import pyrodigal.lib as plib

    finder = pyrodigal.GeneFinder(closed=False)
    tinf = finder.train(*[s for _, s in records])
    out = {}
    for contig, seq in records:
        sq = plib.Sequence(seq)
        nodes = plib.Nodes()
        nodes.extract(sq, translation_table=11)
        nodes.sort()
        nodes.score(sq, tinf)
        for nd in nodes:
            if nd.type != "Stop" and not nd.edge:
                out[(contig, nd.strand, nd.index)] = (nd.cscore, nd.tscore, nd.rscore,
                                                      nd.sscore - nd.tscore - nd.rscore)
    return out


def aligned(d: dec.GenomeDecoder, parts: dict) -> np.ndarray:
    """Prodigal's parts of each candidate of ``d.all_strands()``, [N, 4] (NaN: no such node).
    A node's index is its start codon's first base on its strand, in forward coordinates."""
    a = d.all_strands()
    out = np.full((len(a.cand), 4), np.nan)
    for si, s in enumerate(d.strands):
        o = int(a.off[si])
        index = s.cand.start if s.strand == 1 else s.length - 1 - s.cand.start
        for i, ix in enumerate(index.tolist()):
            v = parts.get((s.contig, s.strand, ix))
            if v is not None:
                out[o + i] = v
    return out


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("genomes", nargs="*", default=list(GENOMES))
    ap.add_argument("--data-root", default=None)
    args = ap.parse_args(argv)
    root = resolve_data_root(args.data_root)
    manifest = load_manifest(root)
    sw = np.asarray(dec.START_WEIGHTS)
    sums = {k: np.zeros(len(COLS)) for k in SWAPS}
    print("genome\tswap\t" + "\t".join(COLS))
    for name in args.genomes:
        rel = f"genomes/bacteria/{name}.gbff.gz"
        if rel not in manifest or manifest[rel].role != "train":
            sys.exit(f"{name} is not a train genome")
        records = [(c, s) for c, s in read_sequences_genbank(root / rel) if len(s)]
        truth = read_genes(root / rel)
        d = dec.GenomeDecoder(records, None, dec.DecoderParams(orf_scorer=False))
        chosen = d.train()
        p = aligned(d, prodigal_parts(records))
        _, parts = d._features_all()
        ours = parts[:, :4] * sw[:4]
        ok = ~np.isnan(p[:, 0])
        a = d.all_strands()
        called = np.concatenate([c + o for c, o in zip(chosen, a.off[:-1].tolist())])
        live = ok & np.isin(a.cand.orf, a.cand.orf[called])
        print(f"# {name}: {ok.mean():.4f} of candidates have a Prodigal node; over the "
              f"{int(live.sum())} starts of called ORFs, Prodigal on genoctx: " + ", ".join(
                  f"{k} r {np.corrcoef(ours[live, j], p[live, j])[0, 1]:.3f} slope "
                  f"{np.polyfit(ours[live, j], p[live, j], 1)[0]:.2f}"
                  for j, k in enumerate(PARTS)), flush=True)
        for swap, which in SWAPS.items():
            adj = np.zeros(len(a.cand))
            for k in which:
                j = PARTS.index(k)
                adj[ok] += p[ok, j] - ours[ok, j]
            d.start_adjust = adj if which else None
            m = gene_metrics(d.calls(d.decode()), truth).as_dict()
            row = np.array([m[c] for c in COLS])
            sums[swap] += row
            print(f"{name}\t{swap}\t" + "\t".join(f"{v:.4f}" for v in row), flush=True)
        d.start_adjust = None
    for swap in SWAPS:
        print(f"MEAN\t{swap}\t" + "\t".join(f"{v:.4f}" for v in sums[swap] / len(args.genomes)))


if __name__ == "__main__":
    main()
