"""Could protein homology rescue the annotated genes the decoder cannot call? (Diagnosis only.)

The genes the decoder misses are mostly short ORFs whose every start scores below zero
(``benchmarks/decoder_miss_kinds.py``). Annotation pipelines find such genes by homology, so this
script asks how many of them a protein search would bring back, and at what cost:

* query genome: one TRAIN genome; its species' genomes (the genus for Escherichia/Shigella) are
  left out of the protein set, so homology is measured across species as on a new genome;
* protein set: the ``/translation`` of every CDS (≤ ``--max-len`` aa) of the other train
  genomes, deduplicated;
* candidates: every ORF that the shipped decoder (with its ORF scorer) does not call and whose
  best start scores in (``--low``, 0] nats, translated from that start;
* search: ``pyhmmer.hmmer.phmmer`` of each candidate against the protein set.

It prints, for E-value cut-offs, how many annotated candidates have a hit (genes a homology
bonus could rescue) against how many unannotated ones do (calls it would add wrongly).
Validation genomes are refused: nothing here is to be tuned on them.

Run: ``python benchmarks/decoder_homology.py GENOME [--max-len 400] [--low -25]``
(2–3 min per genome on 2 cores, most of it phmmer).
"""

from __future__ import annotations

import argparse
import gzip
import os
import sys
import time
from pathlib import Path

_HERE = Path(__file__).resolve().parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != _HERE] + [str(_HERE)]
os.environ.setdefault("OMP_NUM_THREADS", "1")

import numpy as np

SPECIES = {  # train genome → species group (left out of its own protein set)
    "Chlamydia_trachomatis_GCF_000026905.1_ASM2690v1": "chlamydia",
    "Chlamydia_trachomatis_GCF_000092665.1_ASM9266v1": "chlamydia",
    "Chlamydia_trachomatis_GCF_000173495.1_ASM17349v1": "chlamydia",
    "Chlamydia_trachomatis_NC_000117.1": "chlamydia",
    "Escherichia_coli_K12_MG1655": "escherichia", "Shigella_flexneri_2a_str._301": "escherichia",
    "Yersinia_pestis_KIM": "yersinia",
    "Neisseria_meningitidis_MC58": "neisseria", "Neisseria_meningitidis_Z2491": "neisseria",
    "Paracoccus_sp._SCN_68-21": "paracoccus",
    "Streptococcus_pyogenes_M1_GAS": "streptococcus",
    "Streptococcus_pyogenes_MGAS315": "streptococcus",
    "Streptococcus_pyogenes_MGAS8232": "streptococcus",
}
CUTOFFS = (1e-3, 1e-5, 1e-8, 1e-12)


def _rel(name: str) -> str:
    return f"genomes/bacteria/{name}.gbff.gz"


def proteins(path: Path, max_len: int) -> list[str]:
    """The /translation of every CDS of a GenBank file, up to ``max_len`` residues."""
    from Bio import SeqIO

    out = []
    with gzip.open(path, "rt") as fh:
        for rec in SeqIO.parse(fh, "genbank"):
            for f in rec.features:
                if f.type == "CDS" and "translation" in f.qualifiers:
                    p = f.qualifiers["translation"][0]
                    if len(p) <= max_len:
                        out.append(p)
    return out


def _key(contig, strand, lo, hi):
    return contig, strand, (hi - 1) if strand == 1 else lo


def candidates(records, low: float):
    """(key, protein) of every ORF not called whose best start scores in (low, 0], and the
    keys of the calls."""
    from Bio.Seq import Seq

    from genoctx.heads import decoder as dec
    from genoctx.heads.orfs import to_forward

    d = dec.GenomeDecoder(records, None, dec.DecoderParams())
    chosen = d.train()
    called, best = set(), {}
    for si, s in enumerate(d.strands):
        dp = d.dp_scores(si)
        lo, hi = to_forward(s.cand.start, s.cand.end, s.length, s.strand)
        called.update(_key(s.contig, s.strand, int(lo[i]), int(hi[i]))
                      for i in chosen[si].tolist())
        for i in range(len(s.cand)):
            k = _key(s.contig, s.strand, int(lo[i]), int(hi[i]))
            if k not in best or dp[i] > best[k][0]:
                best[k] = (float(dp[i]), int(lo[i]), int(hi[i]))
    seqs = dict(records)
    out = []
    for k, (v, lo, hi) in best.items():
        if low < v <= 0 and k not in called:
            nt = Seq(seqs[k[0]][lo:hi].decode())
            nt = nt if k[1] == 1 else nt.reverse_complement()
            out.append((k, str(nt.translate(table=11)).rstrip("*").replace("*", "X")))
    return out, called


def main(argv=None) -> None:
    import pyhmmer

    from genoctx.io.annotation import read_genes, read_sequences_genbank
    from genoctx.io.dataroot import load_manifest, resolve_data_root

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("genome", choices=sorted(SPECIES))
    ap.add_argument("--max-len", type=int, default=400)
    ap.add_argument("--low", type=float, default=-25.0)
    ap.add_argument("--data-root", default=None)
    args = ap.parse_args(argv)
    root = resolve_data_root(args.data_root)
    manifest = load_manifest(root)
    for name in SPECIES:
        if manifest[_rel(name)].role != "train":
            sys.exit(f"{name} is {manifest[_rel(name)].role}-role: only train genomes are used")
    group = SPECIES[args.genome]
    db = sorted({p for n, g in SPECIES.items() if g != group
                 for p in proteins(root / _rel(n), args.max_len)})
    alpha = pyhmmer.easel.Alphabet.amino()
    targets = pyhmmer.easel.DigitalSequenceBlock(alpha, [
        pyhmmer.easel.TextSequence(name=f"t{i}".encode(), sequence=p).digitize(alpha)
        for i, p in enumerate(db)])
    records = [(c, s) for c, s in read_sequences_genbank(root / _rel(args.genome)) if len(s)]
    truth = {_key(t.contig, t.strand, t.start, t.end) for t in read_genes(root / _rel(args.genome))}
    cand, called = candidates(records, args.low)
    label = np.array([k in truth for k, _ in cand])
    queries = [pyhmmer.easel.TextSequence(name=f"q{j}".encode(), sequence=p).digitize(alpha)
               for j, (_, p) in enumerate(cand)]
    t0 = time.perf_counter()
    best_e = np.full(len(cand), np.inf)
    for hits in pyhmmer.hmmer.phmmer(queries, targets, cpus=os.cpu_count() or 1, E=1e-2):
        name = hits.query.name
        j = int((name.decode() if isinstance(name, bytes) else name)[1:])
        for h in hits:
            best_e[j] = min(best_e[j], h.evalue)
    print(f"# {args.genome}: {len(truth)} annotated genes, {len(truth & called)} called; "
          f"protein set {len(db)} proteins of the other species; {len(cand)} candidates "
          f"({int(label.sum())} annotated); phmmer {time.perf_counter() - t0:.0f} s")
    print("genome\tE-value below\tannotated with a hit\tannotated candidates"
          "\tunannotated with a hit\tunannotated candidates")
    for cut in CUTOFFS:
        hit = best_e < cut
        print(f"{args.genome}\t{cut:g}\t{int((hit & label).sum())}\t{int(label.sum())}\t"
              f"{int((hit & ~label).sum())}\t{int((~label).sum())}")


if __name__ == "__main__":
    main()
