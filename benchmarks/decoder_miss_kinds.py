"""What kind of annotated gene does the decoder miss? One line per kind, with Prodigal beside it.

Every annotated gene (truth as in ``genoctx eval annotation-bacteria``: not pseudo, not joined)
falls in one kind, by what the shipped sequence-only decoder (``--no-scorer``: without its ORF
scorer, the second revision) did with its ORF (same strand and stop):

* ``found`` — called;
* ``no_orf`` — no candidate ORF ends at its stop (stop is not a stop codon, or shorter than
  ``min_len``);
* ``negative`` — every start of its ORF scores below zero, so it can never be called;
* ``blocked`` — some start scores above zero, but the programme chose neighbours instead. These
  are split by what blocked them: an annotated gene (the annotation itself has two genes
  overlapping beyond the decoder's rules), a call that is not annotated, or nothing that
  overlaps the annotated extent (the ORF's good starts overlap a neighbour, and its annotated,
  shorter start scores too low).

Each kind is split by whether Prodigal (pyrodigal, trained on the genome) finds the gene, so
``negative`` + ``blocked`` with Prodigal's mark are the genes Prodigal finds and genoctx does
not. Diagnosis only: nothing is fitted. Validation genomes are allowed because nothing here
feeds back into the decoder; do not tune on their lines.

Run: ``python benchmarks/decoder_miss_kinds.py [--no-scorer] [GENOME ...]`` (default: the five
genomes of decoder_dev.py and the two validation genomes).
"""

from __future__ import annotations

import os
import sys
from collections import Counter
from pathlib import Path

# Put this folder last on the path: a sibling script named like a stdlib module (tokenize.py)
# must not shadow the standard library.
_HERE = Path(__file__).resolve().parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != _HERE] + [str(_HERE)]
os.environ.setdefault("OMP_NUM_THREADS", "1")

import numpy as np
from decoder_dev import GENOMES

from genoctx.heads import decoder as dec
from genoctx.heads.orfs import to_forward
from genoctx.io.annotation import read_genes, read_sequences_genbank
from genoctx.io.dataroot import load_manifest, resolve_data_root

VALIDATION = ("Brucella_melitensis_16M", "Haemophilus_influenzae_Rd_KW20")
KINDS = ("found", "no_orf", "negative", "blocked:annotated", "blocked:call", "blocked:nothing")


def _key(contig, strand, lo, hi):
    return contig, strand, (hi - 1) if strand == 1 else lo


def kinds(records, truth, scorer: bool = True) -> tuple[Counter, dict]:
    """Counter of (kind, found by Prodigal) over the annotated genes, and median lengths."""
    import pyrodigal

    finder = pyrodigal.GeneFinder(closed=False)
    finder.train(*[s for _, s in records])
    prod = {_key(c, g.strand, g.begin - 1, g.end) for c, s in records for g in finder.find_genes(s)}
    d = dec.GenomeDecoder(records, None, dec.DecoderParams(orf_scorer=scorer))
    chosen = d.train()
    best: dict = {}
    ours = set()
    for si, s in enumerate(d.strands):
        dp = d.dp_scores(si)
        lo, hi = to_forward(s.cand.start, s.cand.end, s.length, s.strand)
        for i in range(len(s.cand)):
            k = _key(s.contig, s.strand, int(lo[i]), int(hi[i]))
            best[k] = max(best.get(k, -np.inf), float(dp[i]))
        ours.update(_key(s.contig, s.strand, int(lo[i]), int(hi[i])) for i in chosen[si].tolist())
    calls = d.calls(chosen)
    true_keys = {_key(t.contig, t.strand, t.start, t.end) for t in truth}
    out, lengths = Counter(), {k: [] for k in KINDS}
    for t in truth:
        k = _key(t.contig, t.strand, t.start, t.end)
        if k in ours:
            kind = "found"
        elif k not in best:
            kind = "no_orf"
        elif best[k] <= 0:
            kind = "negative"
        else:
            over = [g for g in calls
                    if g.contig == t.contig and g.start < t.end and t.start < g.end]
            if any(_key(g.contig, g.strand, g.start, g.end) in true_keys for g in over):
                kind = "blocked:annotated"
            elif over:
                kind = "blocked:call"
            else:
                kind = "blocked:nothing"
        out[(kind, k in prod)] += 1
        lengths[kind].append(t.end - t.start)
    return out, {k: float(np.median(v)) if v else 0.0 for k, v in lengths.items()}


def main(argv=None) -> None:
    args = sys.argv[1:] if argv is None else argv
    scorer = "--no-scorer" not in args
    names = [a for a in args if a != "--no-scorer"] or [*GENOMES, *VALIDATION]
    root = resolve_data_root(None)
    manifest = load_manifest(root)
    print("genome\trole\tkind\tprodigal_finds\tgenes\tshare\tmedian_bp")
    for name in names:
        rel = f"genomes/bacteria/{name}.gbff.gz"
        role = manifest[rel].role
        if role not in ("train", "validation"):
            sys.exit(f"{name} is {role}-role; only train and validation genomes are diagnosed")
        records = [(c, s) for c, s in read_sequences_genbank(root / rel) if len(s)]
        truth = read_genes(root / rel)
        counts, med = kinds(records, truth, scorer)
        for kind in KINDS:
            for p in (True, False):
                if counts[(kind, p)]:
                    n = counts[(kind, p)]
                    print(f"{name}\t{role}\t{kind}\t{'yes' if p else 'no'}\t{n}\t"
                          f"{n / len(truth):.4f}\t{med[kind]:.0f}", flush=True)


if __name__ == "__main__":
    main()
