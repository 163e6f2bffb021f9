"""Where the decoder loses to Prodigal on a TRAIN genome: missed genes and wrong starts.

For each genome: (1) the annotated genes Prodigal (pyrodigal, trained on the genome) finds and
genoctx misses — how many, their length, and genoctx's coding part and gene log-odds at the
start Prodigal chose; the correlation of genoctx's coding part with Prodigal's coding score
(``cscore``) over all of Prodigal's genes; (2) the genes where genoctx's start is wrong and
Prodigal's right — which start-choice part (coding, codon type, RBS, upstream composition)
favours genoctx's wrong start over the annotated one. Gene match = strand + stop.

Run: ``python benchmarks/decoder_misses.py [GENOME ...]`` (default: N. meningitidis MC58 and
Y. pestis KIM). Refuses genomes that are not train-role. The decoder runs without its ORF
scorer (the second revision), whose self-trained statistics this compares with Prodigal's.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

# Put this folder last on the path: a sibling script named like a stdlib module (tokenize.py)
# must not shadow the standard library.
_HERE = Path(__file__).resolve().parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != _HERE] + [str(_HERE)]
os.environ.setdefault("OMP_NUM_THREADS", "1")

import numpy as np

from genoctx.heads import decoder as dec
from genoctx.heads.orfs import to_forward
from genoctx.io.annotation import read_genes, read_sequences_genbank
from genoctx.io.dataroot import load_manifest, resolve_data_root

DEFAULT = ("Neisseria_meningitidis_MC58", "Yersinia_pestis_KIM")
PARTS = ("coding", "type", "rbs", "composition")


def _stop_key(contig, strand, lo, hi):
    return contig, strand, (hi - 1) if strand == 1 else lo


def report(name: str, records, truth) -> None:
    import pyrodigal

    finder = pyrodigal.GeneFinder(closed=False)
    finder.train(*[s for _, s in records])
    prod = {}
    for contig, seq in records:
        for g in finder.find_genes(seq):
            lo, hi = g.begin - 1, g.end
            prod[_stop_key(contig, g.strand, lo, hi)] = (lo, hi, g.cscore)
    d = dec.GenomeDecoder(records, None, dec.DecoderParams(orf_scorer=False))
    chosen = d.train()
    sw = np.asarray(d.params.start_weights)
    true = {_stop_key(t.contig, t.strand, t.start, t.end): t for t in truth}
    ours, cand_at = {}, {}
    ours_c, prod_c = [], []
    wrong_start = []
    for si, s in enumerate(d.strands):
        _, dp, _ = d.scores(si)
        _, parts = d.features(si)
        lo, hi = to_forward(s.cand.start, s.cand.end, s.length, s.strand)
        for i in range(len(s.cand)):
            cand_at[(s.contig, s.strand, int(lo[i]), int(hi[i]))] = (si, i, dp[i], parts[i])
        for i in chosen[si].tolist():
            ours[_stop_key(s.contig, s.strand, int(lo[i]), int(hi[i]))] = (int(lo[i]), int(hi[i]))
    for k, (plo, phi, cscore) in prod.items():
        c = cand_at.get((k[0], k[1], plo, phi))
        if c is not None:
            ours_c.append(c[3][0])
            prod_c.append(cscore)
    missed = []
    for k, t in true.items():
        if k in prod and k not in ours:
            c = cand_at.get((k[0], k[1], prod[k][0], prod[k][1]))
            if c is not None:
                missed.append((prod[k][1] - prod[k][0], c[3][0], c[2], prod[k][2]))
        if k in prod and k in ours:
            tstart = t.start if k[1] == 1 else t.end
            pstart = prod[k][0] if k[1] == 1 else prod[k][1]
            ostart = ours[k][0] if k[1] == 1 else ours[k][1]
            if pstart == tstart != ostart:
                mine = cand_at.get((k[0], k[1], *ours[k]))
                real = cand_at.get((k[0], k[1], t.start, t.end))
                if mine is not None and real is not None:
                    wrong_start.append((mine[3][:4] - real[3][:4]) * sw[:4])
    m = np.array(missed)
    print(f"{name}: {len(m)} annotated genes found by Prodigal and missed by genoctx")
    if len(m):
        print(f"  length median {np.median(m[:, 0]):.0f} bp, under 300 bp {np.mean(m[:, 0] < 300):.2f}"
              f"; genoctx coding part median {np.median(m[:, 1]):.2f}, gene log-odds median "
              f"{np.median(m[:, 2]):.2f}; Prodigal's cscore median {np.median(m[:, 3]):.2f}")
    oc, pc = np.array(ours_c), np.array(prod_c)
    slope = np.polyfit(pc, oc, 1)[0]
    print(f"  coding part vs Prodigal cscore over {len(oc)} Prodigal genes: r = "
          f"{np.corrcoef(oc, pc)[0, 1]:.3f}, slope {slope:.2f}")
    w = np.array(wrong_start)
    print(f"  {len(w)} genes with genoctx's start wrong and Prodigal's right; share where each "
          "part favours genoctx's start: " + ", ".join(
              f"{p} {np.mean(w[:, j] > 0):.2f}" for j, p in enumerate(PARTS)) if len(w) else "")


def main(argv=None) -> None:
    names = (sys.argv[1:] if argv is None else argv) or list(DEFAULT)
    root = resolve_data_root(None)
    manifest = load_manifest(root)
    for name in names:
        rel = f"genomes/bacteria/{name}.gbff.gz"
        if manifest[rel].role != "train":
            sys.exit(f"{name} is not a train genome; diagnose on train genomes only")
        records = [(c, s) for c, s in read_sequences_genbank(root / rel) if len(s)]
        report(name, records, read_genes(root / rel))


if __name__ == "__main__":
    main()
