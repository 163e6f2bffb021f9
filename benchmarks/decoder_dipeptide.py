"""Would a cross-genome dipeptide model help the ORF scorer? Leave one species out.

The ORF scorer (``genoctx.heads.orf_scorer``) reads the amino-acid *composition* of each ORF's
translation. A protein-level model of the translation is the lever docs/decoder.md names next;
this script measures its simplest form, a dipeptide log-likelihood ratio, before anything is
built into the decoder:

* every TRAIN genome is decoded without the scorer, as ``decoder_orf_classifier.py`` does (each
  ORF at its best start is one row; label: an annotated gene ends at its stop);
* for each held-out genome, a table of 21 × 21 log-ratios (20 amino acids and "other") is
  counted over the translations of the *other* species' ORFs: annotated genes against the rest,
  each genome's pairs normalised and weighted by species. ``cond``: log P(b | a, gene) −
  log P(b | a, not a gene) (what the composition does not already say); ``joint``: the ratio of
  the pair frequencies themselves;
* each ORF's feature is the mean of the table over the consecutive residue pairs of its
  translation (after the start codon); the scorer is refitted on the other species with the
  feature(s) added, and the held-out genome is decoded with the shipped use (3 × the bounded
  term, as ``genoctx annotate`` applies it).

``base`` (the scorer's features as shipped) reproduces the held-out ``adds 3 × the term`` row
of docs/decoder.md. Prints gene-level sensitivity / precision / F1 and the ORF-level AUC of the
trees per genome and their mean. Only train-role genomes are read. About 6 minutes on 2 cores.

Run: ``python benchmarks/decoder_dipeptide.py [--all | GENOME ...]`` (held-out genomes; default:
the five of decoder_dev.py).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

# Put this folder last on the path: a sibling script named like a stdlib module (tokenize.py)
# must not shadow the standard library.
_HERE = Path(__file__).resolve().parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != _HERE] + [str(_HERE)]
os.environ.setdefault("OMP_NUM_THREADS", "2")

import numpy as np
from decoder_dev import GENOMES
from decoder_orf_classifier import decoded_train_genomes, held_out_use
from scipy import sparse

from genoctx.heads import decoder as dec
from genoctx.heads.decoder_fit import species_key, species_weights
from genoctx.heads.orf_scorer import _codon_table
from genoctx.heads.orfs import strand_groups

A = 21  # 20 amino acids, then "other" (a codon with N)
VARIANTS = ("base", "cond", "joint", "cond+joint")
COLS = ("sensitivity", "precision", "f1")


def frame_residues(x: np.ndarray, frame: np.ndarray, table: int = 11):
    """Per reading frame of the strand ``x``: (the residue code of every codon of the frame
    (0..19, A − 1 = 20 for a codon with N), the ORFs ``m`` read in it); frames without ORFs
    are skipped (``frame`` as for :func:`genoctx.heads.orf_scorer.translation_features`)."""
    codon_aa = _codon_table(table)
    xi = x.astype(np.int64)
    for f in range(3):
        n = (len(x) - f) // 3
        m = np.flatnonzero(frame == f)
        if n <= 0 or not len(m):
            continue
        yield np.minimum(codon_aa[25 * xi[f:f + 3 * n:3] + 5 * xi[f + 1:f + 3 * n:3][:n]
                                     + xi[f + 2:f + 3 * n:3][:n]], A - 1), m


def row_groups(d: dec.GenomeDecoder):
    """The rows of :func:`genoctx.heads.orf_scorer.decoder_rows`, in its order, a run of
    strands at a time: (the run's bases, frame, first codon j and stop codon k of each row)."""
    al = d.all_strands()
    best, _, _ = d.orf_table_all()
    c = al.cand
    for g in strand_groups([s.length for s in d.strands]):
        lo, hi = al.origin[g.start], al.origin[g.stop]
        b = best[(best >= al.off[g.start]) & (best < al.off[g.stop])]
        shift = al.codon_shift[b] - lo // 3
        yield al.x[lo:hi], c.frame[b], c.j[b] + shift, c.k[b] + shift


def pair_counts(x: np.ndarray, frame: np.ndarray, j: np.ndarray, k: np.ndarray,
                table: int = 11) -> sparse.csr_matrix:
    """Counts of consecutive residue pairs of codons ``j+1 .. k-1`` of each ORF, [N, A·A]
    (``x``, ``frame``, ``j``, ``k`` as for :func:`genoctx.heads.orf_scorer.translation_features`)."""
    rows, cols = [np.zeros(0, np.int64)], [np.zeros(0, np.int64)]
    for aa, m in frame_residues(x, frame, table):
        n = len(aa)
        lo = np.minimum(j[m] + 1, n)
        hi = np.clip(k[m], lo, n)
        size = np.maximum(hi - lo - 1, 0)  # pairs of each ORF
        pos = np.arange(size.sum()) - np.repeat(np.cumsum(size) - size - lo, size)
        rows.append(np.repeat(m, size))
        cols.append(aa[pos] * A + aa[pos + 1])
    r, c = np.concatenate(rows), np.concatenate(cols)
    return sparse.csr_matrix((np.ones(len(r), np.float32), (r, c)), shape=(len(j), A * A))


def decoder_pairs(d: dec.GenomeDecoder) -> sparse.csr_matrix:
    """:func:`pair_counts` of every row of :func:`decoder_rows` (same order)."""
    return sparse.vstack([pair_counts(x, frame, j, k, d.params.translation_table)
                          for x, frame, j, k in row_groups(d)]).tocsr()


def pair_tables(data: dict, names: list[str], weights: dict) -> dict[str, np.ndarray]:
    """The ``cond`` and ``joint`` log-ratio tables [A·A] of the genomes ``names``."""
    pos, neg = np.zeros(A * A), np.zeros(A * A)
    for n in names:
        _, y, _, _, pairs = data[n]
        p, q = (np.asarray(pairs[m].sum(0)).ravel() for m in (y, ~y))
        pos += weights[n] * p / p.sum()
        neg += weights[n] * q / q.sum()
    pos, neg = pos.reshape(A, A) + 1e-4, neg.reshape(A, A) + 1e-4
    cond = (np.log(pos / pos.sum(1, keepdims=True))
            - np.log(neg / neg.sum(1, keepdims=True)))
    joint = np.log(pos / pos.sum()) - np.log(neg / neg.sum())
    return {"cond": cond.ravel(), "joint": joint.ravel()}


def _rows(genome: tuple, variant: str, tables: dict) -> np.ndarray:
    """The scorer's rows of one genome, with the pair features ``variant`` names appended."""
    x, pairs = genome[0], genome[4]
    size = np.maximum(np.asarray(pairs.sum(1)).ravel(), 1)
    extra = [pairs @ tables[t] / size for t in variant.split("+") if t in tables]
    return np.column_stack([x, *extra])


def main(argv=None) -> None:
    held = (sys.argv[1:] if argv is None else argv) or list(GENOMES)
    data, held = decoded_train_genomes(held)
    data = {n: (x, y, d, genes, decoder_pairs(d)) for n, (x, y, d, _, genes) in data.items()}
    weights = dict(zip(data, species_weights(list(data))))
    print("genome\t" + "\t".join(f"{v}_{c}" for v in VARIANTS for c in (*COLS, "auc")))
    sums = np.zeros((len(VARIANTS), len(COLS) + 1))
    for name in held:
        others = [n for n in data if species_key(n) != species_key(name)]
        tables = pair_tables(data, others, weights)
        _, y, d, genes, _ = data[name]
        out = []
        for variant in VARIANTS:
            out.append(held_out_use([(_rows(data[n], variant, tables), data[n][1], weights[n])
                                     for n in others],
                                    _rows(data[name], variant, tables), y, d, genes))
        sums += np.array(out)
        print(name + "\t" + "\t".join(f"{v:.4f}" for r in out for v in r), flush=True)
    print("MEAN\t" + "\t".join(f"{v:.4f}" for v in (sums / len(held)).ravel()))


if __name__ == "__main__":
    main()
