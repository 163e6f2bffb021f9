"""Splice-site position weight matrices for the spliced decoder, fitted on train eukaryotes.

The spliced decoder (:mod:`genoctx.heads.spliced_decoder`) lets an intron begin at any GT and
end at any AG; which of them are real was left to the annotation head's probabilities. Real
sites carry more than the dinucleotide: the donor's exon end and intron start (``MAG|GTRAGT``),
the acceptor's pyrimidine-rich intron end (``YYYYNCAG|G``). These matrices score that context
as a log-likelihood ratio, real site against any GT / AG with the same base composition, and
the decoder adds it to the transition into (donor) and out of (acceptor) an intron.

Fitted by ``python -m genoctx.heads.splice_sites`` on the coding introns (gaps between CDS
parts) of the TRAIN-role eukaryote chunks of the data manifest (A. thaliana, D. melanogaster),
read through the training role guard; it writes ``genoctx/heads/_splice_fitted.py``.

Windows, in gene orientation, relative to the first intron base (donor) or the first exon base
after the intron (acceptor): donor −3 … +5 (9 bases), acceptor −14 … +1 (16 bases); the GT / AG
positions themselves carry no score (the decoder's gate already requires them).
Legend: P = window positions, L = sequence length.
"""

from __future__ import annotations

import argparse
import sys
from itertools import pairwise
from pathlib import Path

import numpy as np

from genoctx.heads.orfs import encode, revcomp_codes

DONOR = (-3, 6)       # window [t - 3, t + 6) around the intron's first base t
ACCEPTOR = (-14, 2)   # window [t - 14, t + 2) around the exon base t after the intron
DONOR_FIXED = (3, 4)      # G, T
ACCEPTOR_FIXED = (12, 13)  # A, G
CLIP = 4.0


def _windows(x: np.ndarray, pos: np.ndarray, lo: int, hi: int) -> np.ndarray:
    """Base codes [N, hi - lo] of windows [p + lo, p + hi) (4 outside the sequence)."""
    idx = pos[:, None] + np.arange(lo, hi)[None, :]
    out = np.full(idx.shape, 4, dtype=np.uint8)
    ok = (idx >= 0) & (idx < len(x))
    out[ok] = x[idx[ok]]
    return out


def intron_sites(genes, length: int) -> tuple[list[tuple[int, int]], list[tuple[int, int]]]:
    """Introns between the CDS parts of ``genes`` as (strand, donor t, acceptor t) in gene
    orientation coordinates: + strand forward positions; − strand positions on the reverse
    complement. Returns (plus, minus) lists of (donor t, acceptor t)."""
    plus, minus = [], []
    for g in genes:
        parts = sorted(g.parts or [(g.start, g.end)])
        for (_, a), (b, _) in pairwise(parts):
            if b - a < 10:
                continue
            if g.strand > 0:
                plus.append((a, b))
            else:  # on the reverse complement the intron [a, b) is [L - b, L - a)
                minus.append((length - b, length - a))
    return plus, minus


def fit_matrices(examples: list[tuple[np.ndarray, list[tuple[int, int]]]],
                 pseudo: float = 1.0) -> tuple[np.ndarray, np.ndarray]:
    """Donor [9, 4] and acceptor [16, 4] log-likelihood ratios from (strand codes, introns as
    (donor t, acceptor t)) pairs, against the base composition of the same sequences."""
    don = np.zeros((DONOR[1] - DONOR[0], 5))
    acc = np.zeros((ACCEPTOR[1] - ACCEPTOR[0], 5))
    comp = np.zeros(5)
    for x, introns in examples:
        comp += np.bincount(x, minlength=5)[:5]
        if not introns:
            continue
        d = np.array([i[0] for i in introns])
        a = np.array([i[1] for i in introns])
        for counts, pos, (lo, hi) in ((don, d, DONOR), (acc, a, ACCEPTOR)):
            w = _windows(x, pos, lo, hi)
            for p in range(w.shape[1]):
                counts[p] += np.bincount(w[:, p], minlength=5)[:5]
    bg = (comp[:4] + 1.0) / (comp[:4].sum() + 4.0)
    out = []
    for counts, fixed in ((don, DONOR_FIXED), (acc, ACCEPTOR_FIXED)):
        c = counts[:, :4]
        p = (c + pseudo * bg) / (c.sum(1, keepdims=True) + pseudo)
        llr = np.clip(np.log(p / bg), -CLIP, CLIP)
        llr[list(fixed)] = 0.0
        out.append(np.round(llr, 4))
    return out[0], out[1]


def _score(x: np.ndarray, pwm: np.ndarray, lo: int) -> np.ndarray:
    """Sum of ``pwm`` over the window [t + lo, t + lo + P) for every t in 0..L, [L + 1]."""
    n = len(x)
    out = np.zeros(n + 1)
    table = np.concatenate([pwm, np.zeros((len(pwm), 1))], axis=1)  # N scores 0
    xp = np.full(n + 1 + len(pwm) + abs(lo) * 2, 4, dtype=np.uint8)
    off = abs(lo)
    xp[off:off + n] = x
    t = np.arange(n + 1)
    for p in range(len(pwm)):
        out += table[p, xp[t + lo + p + off]]
    return out


def transition_scores(x: np.ndarray, donor: np.ndarray, acceptor: np.ndarray
                      ) -> dict[int, tuple[np.ndarray, np.ndarray]]:
    """Scores of an intron starting / ending at each forward position t, for each strand.

    ``{strand: (start_L1, end_L1)}``, arrays of length L + 1: ``start[t]`` scores an intron
    whose first forward base is t, ``end[t]`` one whose last forward base is t − 1. On the +
    strand these are the donor and the acceptor; on the − strand, read in forward time, the
    intron starts at the gene's acceptor and ends at its donor (both scored on the reverse
    complement).
    """
    n = len(x)
    y = revcomp_codes(x)
    don_x, acc_x = _score(x, donor, DONOR[0]), _score(x, acceptor, ACCEPTOR[0])
    don_y, acc_y = _score(y, donor, DONOR[0]), _score(y, acceptor, ACCEPTOR[0])
    t = np.arange(n + 1)
    # forward intron [a, b): on the reverse complement it is [n - b, n - a); the gene's
    # acceptor (first exon base after it) is y position n - a, its donor is y position n - b
    return {1: (don_x, acc_x), -1: (acc_y[n - t], don_y[n - t])}


def default_matrices() -> tuple[np.ndarray, np.ndarray]:
    """The fitted donor and acceptor matrices (``_splice_fitted.py``)."""
    from genoctx.heads import _splice_fitted as f

    return np.asarray(f.DONOR, dtype=np.float64), np.asarray(f.ACCEPTOR, dtype=np.float64)


def load_examples(data_root=None):
    """``(gff path, fasta path, [(strand codes, introns), ...])`` of every TRAIN-role eukaryote
    chunk with a GFF, both files checked by the training role guard; each record gives its +
    strand and its reverse complement, introns as (donor t, acceptor t) on that strand."""
    from genoctx.io.annotation import read_genes
    from genoctx.io.dataroot import load_manifest, require_trainable, resolve_data_root
    from genoctx.io.fasta import iter_records

    root = resolve_data_root(data_root)
    manifest = load_manifest(root)
    out = []
    for rel in sorted(manifest):
        if not (rel.startswith("genomes/eukaryote_chunks/") and rel.endswith(".gff.gz")
                and manifest[rel].role == "train"):
            continue
        fa = rel.replace(".gff.gz", ".fa.gz")
        require_trainable(root / rel, root)
        require_trainable(root / fa, root)
        genes = read_genes(root / rel)
        ex = []
        for contig, seq in iter_records(root / fa):
            x = encode(seq)
            mine = [g for g in genes if g.contig == contig and not g.pseudo]
            plus, minus = intron_sites(mine, len(x))
            ex += [(x, plus), (revcomp_codes(x), minus)]
        out.append((rel, fa, ex))
    return out


def main(argv: list[str] | None = None) -> None:
    from genoctx.io.dataroot import load_manifest, resolve_data_root

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data-root", default=None, help="shared data folder (default: auto)")
    ap.add_argument("--out", default=str(Path(__file__).with_name("_splice_fitted.py")))
    args = ap.parse_args(argv)
    data = load_examples(args.data_root)
    examples = [e for _, _, ex in data for e in ex]
    donor, acceptor = fit_matrices(examples)
    n = sum(len(i) for _, i in examples)
    manifest = load_manifest(resolve_data_root(args.data_root))
    files = [p for rel, fa, _ in data for p in (fa, rel)]
    lines = [('"""Splice-site matrices fitted by `python -m genoctx.heads.splice_sites` '
              '(do not edit).'), "", f"{n} coding introns of the train-role eukaryote chunks:"]
    lines += [f"{p} sha256 {manifest[p].sha256}" for p in files]
    lines += ['"""', "", f"DONOR = {donor.tolist()!r}", "", f"ACCEPTOR = {acceptor.tolist()!r}", ""]
    Path(args.out).write_text("\n".join(lines))
    print(f"{n} introns; wrote {args.out}")


if __name__ == "__main__":
    main(sys.argv[1:])
