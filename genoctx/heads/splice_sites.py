"""Splice-site models for the spliced decoder, fitted on train eukaryotes.

The spliced decoder (:mod:`genoctx.heads.spliced_decoder`) lets an intron begin at any GT and
end at any AG; which of them are real was left to the annotation head's probabilities. Real
sites carry more than the dinucleotide: the donor's exon end and intron start (``MAG|GTRAGT``),
the acceptor's pyrimidine-rich intron end (``YYYYNCAG|G``). A :class:`SiteModel` scores that
context, and the decoder adds the score to the transition into (donor) and out of (acceptor)
an intron. Two fits:

* :func:`fit_site_models` (shipped): logistic regressions of the real sites against every other
  GT / AG within 3 kb of one, over donor −3 … +19 and acceptor −40 … +2, with a weight per
  base and per pair of neighbouring bases; the score is the log-odds of "real" at even odds;
* :func:`fit_matrices` (before): position weight matrices over donor −3 … +5 (9 bases) and
  acceptor −14 … +1 (16 bases), log-likelihood against the base composition; the GT / AG
  positions themselves carry no score (the decoder's gate already requires them).

Fitted by ``python -m genoctx.heads.splice_sites`` on the coding introns (gaps between CDS
parts) of the TRAIN-role eukaryote chunks of the data manifest (A. thaliana, D. melanogaster),
read through the training role guard; it writes ``genoctx/heads/_splice_fitted.py``.

Windows are in gene orientation, relative to the first intron base (donor) or the first exon
base after the intron (acceptor). Legend: P = window positions, L = sequence length.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass
from itertools import pairwise
from pathlib import Path

import numpy as np

from genoctx.heads.orfs import encode, revcomp_codes

try:  # the window scores compiled (_native.c); where it is not built, numpy
    from genoctx.heads._native import site_score as _site_score
except ImportError:
    _site_score = None

DONOR = (-3, 6)       # window [t - 3, t + 6) around the intron's first base t
ACCEPTOR = (-14, 2)   # window [t - 14, t + 2) around the exon base t after the intron
DONOR_FIXED = (3, 4)      # G, T
ACCEPTOR_FIXED = (12, 13)  # A, G
CLIP = 4.0
# the discriminative models' windows, in the same coordinates: longer on the intron side
DONOR_WIDE = (-3, 20)
ACCEPTOR_WIDE = (-40, 3)
LR_C = 0.05           # L2 strength of their logistic regression (sklearn's C)
DECOY_SPAN = 3000     # decoy sites: other GT / AG this close to a real site


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


@dataclass(frozen=True)
class SiteModel:
    """A linear score of the window ``[t + lo, t + lo + P)`` around a splice site at t.

    ``mono [P, 4]``: one weight per position and base; ``di [P - 1, 4, 4]`` (optional): one per
    pair of neighbouring bases (first-order dependencies, as a weight-array model); ``bias``:
    added once. A window base outside the sequence or not ACGT scores 0 at every term it is in.
    """

    lo: int
    mono: np.ndarray
    di: np.ndarray | None = None
    bias: float = 0.0

    @property
    def width(self) -> int:
        return len(self.mono)

    def _tables(self) -> tuple[np.ndarray, np.ndarray | None]:
        """``mono`` as [P, 5] and ``di`` as [P - 1, 5, 5], base code 4 (N, outside) scoring 0."""
        mono = np.zeros((self.width, 5))
        mono[:, :4] = self.mono
        if self.di is None:
            return mono, None
        di = np.zeros((self.width - 1, 5, 5))
        di[:, :4, :4] = self.di
        return mono, di

    def score(self, x: np.ndarray, native: bool = True) -> np.ndarray:
        """The score of the window at every t in 0..L, [L + 1] (one pass per term, no
        [L, P] window array: this runs on whole records). Where genoctx's C part is built it
        adds the same terms position by position (the same scores); ``native=False`` runs
        numpy."""
        n, off = len(x), abs(self.lo)
        xp = np.full(n + 1 + self.width + off * 2, 4, dtype=np.uint8)
        xp[off:off + n] = x
        first = self.lo + off  # the window of t starts at xp[first + t]

        def at(p: int) -> np.ndarray:  # the window's base p at every t, [L + 1]
            return xp[first + p:first + p + n + 1]

        mono, di = self._tables()
        if _site_score is not None and native:  # the same sums in C (_native.c)
            out = np.empty(n + 1)
            _site_score(xp, first, mono, None if di is None else di.reshape(-1, 25),
                        float(self.bias), out)
            return out
        out = np.full(n + 1, float(self.bias))
        for p in range(self.width):
            out += mono[p].take(at(p))
        if di is not None:
            pair = di.reshape(self.width - 1, 25)
            code = np.empty(n + 1, dtype=np.intp)
            for p in range(self.width - 1):
                np.multiply(at(p), 5, out=code)
                code += at(p + 1)
                out += pair[p].take(code)
        return out

    def window_scores(self, w: np.ndarray) -> np.ndarray:
        """Scores of windows given as base codes ``[N, P]`` (4: outside or not ACGT), [N]."""
        mono, di = self._tables()
        out = self.bias + mono[np.arange(self.width)[None, :], w].sum(1)
        if di is not None:
            out += di[np.arange(self.width - 1)[None, :], w[:, :-1], w[:, 1:]].sum(1)
        return out


def _site_positions(x: np.ndarray, kind: str) -> np.ndarray:
    """Every GT (donor: the intron's first base) or AG (acceptor: the base after it) of ``x``."""
    if kind == "donor":
        return np.nonzero((x[:-1] == 2) & (x[1:] == 3))[0]
    return np.nonzero((x[:-1] == 0) & (x[1:] == 2))[0] + 2


def _one_hot(w: np.ndarray, di: bool) -> np.ndarray:
    """Features of windows ``[N, P]``: one-hot bases [N, P * 4], then base pairs [N, (P-1) * 16]."""
    n, width = w.shape
    rows = np.arange(n)[:, None]
    mono = np.zeros((n, width, 5), dtype=np.float32)
    mono[rows, np.arange(width)[None, :], w] = 1.0
    out = [mono[:, :, :4].reshape(n, -1)]
    if di:
        ok = (w[:, :-1] < 4) & (w[:, 1:] < 4)
        code = np.where(ok, np.minimum(w[:, :-1], 3) * 4 + np.minimum(w[:, 1:], 3), 16)
        pairs = np.zeros((n, width - 1, 17), dtype=np.float32)
        pairs[rows, np.arange(width - 1)[None, :], code] = 1.0
        out.append(pairs[:, :, :16].reshape(n, -1))
    return np.concatenate(out, axis=1)


def fit_site_models(examples: list[tuple[np.ndarray, list[tuple[int, int]]]],
                    donor_window: tuple[int, int] = DONOR_WIDE,
                    acceptor_window: tuple[int, int] = ACCEPTOR_WIDE,
                    di: bool = True, c: float = LR_C, near: int = DECOY_SPAN
                    ) -> tuple[SiteModel, SiteModel]:
    """Donor and acceptor models fitted discriminatively: logistic regression (L2, ``c``) of
    the real sites against every other GT / AG within ``near`` bases of a real site of the
    same strand sequence (the decoys a gene's introns compete with), both classes weighted
    equally, so a score is the log-odds of "real" at even prior odds."""
    from sklearn.linear_model import LogisticRegression

    out = []
    for kind, (lo, hi), col in (("donor", donor_window, 0), ("acceptor", acceptor_window, 1)):
        ws, ys = [], []
        for x, introns in examples:
            real = np.unique(np.array([i[col] for i in introns], dtype=np.int64))
            if not len(real):
                continue
            cover = np.zeros(len(x) + 3, dtype=np.int32)
            np.add.at(cover, np.maximum(real - near, 0), 1)
            np.add.at(cover, np.minimum(real + near, len(x) + 2), -1)
            cand = _site_positions(x, kind)
            pos = np.union1d(cand[np.cumsum(cover)[cand] > 0], real)
            ws.append(_windows(x, pos, lo, hi))
            ys.append(np.isin(pos, real))
        w, y = np.concatenate(ws), np.concatenate(ys)
        lr = LogisticRegression(C=c, max_iter=5000, class_weight="balanced")
        lr.fit(_one_hot(w, di), y)
        coef = lr.coef_[0].astype(np.float64)
        width = hi - lo
        mono = coef[:width * 4].reshape(width, 4)
        pairs = coef[width * 4:].reshape(width - 1, 4, 4) if di else None
        out.append(SiteModel(lo, np.round(mono, 5),
                             None if pairs is None else np.round(pairs, 5),
                             round(float(lr.intercept_[0]), 5)))
    return out[0], out[1]


def transition_scores(x: np.ndarray, donor: SiteModel | np.ndarray,
                      acceptor: SiteModel | np.ndarray) -> dict[int, tuple[np.ndarray, np.ndarray]]:
    """Scores of an intron starting / ending at each forward position t, for each strand.

    ``{strand: (start_L1, end_L1)}``, arrays of length L + 1: ``start[t]`` scores an intron
    whose first forward base is t, ``end[t]`` one whose last forward base is t − 1. On the +
    strand these are the donor and the acceptor; on the − strand, read in forward time, the
    intron starts at the gene's acceptor and ends at its donor (both scored on the reverse
    complement).
    """
    n = len(x)
    y = revcomp_codes(x)
    donor, acceptor = as_model(donor, DONOR[0]), as_model(acceptor, ACCEPTOR[0])
    don_x, acc_x = donor.score(x), acceptor.score(x)
    don_y, acc_y = donor.score(y), acceptor.score(y)
    t = np.arange(n + 1)
    # forward intron [a, b): on the reverse complement it is [n - b, n - a); the gene's
    # acceptor (first exon base after it) is y position n - a, its donor is y position n - b
    return {1: (don_x, acc_x), -1: (acc_y[n - t], don_y[n - t])}


def as_model(site, lo: int) -> SiteModel:
    """``site`` itself, or a position weight matrix ``[P, 4]`` starting at ``lo`` as a model."""
    if isinstance(site, SiteModel):
        return site
    return SiteModel(lo, np.asarray(site, dtype=np.float64))


def default_site_models() -> tuple[SiteModel, SiteModel]:
    """The shipped donor and acceptor models (``_splice_fitted.py``, :func:`fit_site_models`)."""
    from genoctx.heads import _splice_fitted as f

    return tuple(SiteModel(m["lo"], np.asarray(m["mono"], dtype=np.float64),
                           np.asarray(m["di"], dtype=np.float64), float(m["bias"]))
                 for m in (f.DONOR, f.ACCEPTOR))


def _as_dict(m: SiteModel) -> dict:
    return {"lo": m.lo, "mono": m.mono.tolist(), "di": m.di.tolist(), "bias": m.bias}


def load_examples(data_root=None):
    """``(gff path, fasta path, [(strand codes, introns), ...])`` of every TRAIN-role eukaryote
    chunk with a GFF, both files checked by the training role guard; each record gives its +
    strand and its reverse complement, introns as (donor t, acceptor t) on that strand."""
    from genoctx.io.annotation import read_genes
    from genoctx.io.dataroot import (
        load_manifest,
        require_trainable,
        resolve_data_root,
        trainable_sequences,
    )

    root = resolve_data_root(data_root)
    manifest = load_manifest(root)
    out = []
    for rel in sorted(manifest):
        if not (rel.startswith("genomes/eukaryote_chunks/") and rel.endswith(".gff.gz")
                and manifest[rel].role == "train"):
            continue
        fa = rel.replace(".gff.gz", ".fa.gz")
        require_trainable(root / rel, root)
        _, records = trainable_sequences(root / fa, root, source=fa)
        genes = read_genes(root / rel)
        ex = []
        for contig, seq in records:
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
    donor, acceptor = fit_site_models(examples)
    n = sum(len(i) for _, i in examples)
    manifest = load_manifest(resolve_data_root(args.data_root))
    files = [p for rel, fa, _ in data for p in (fa, rel)]
    lines = [('"""Splice-site models fitted by `python -m genoctx.heads.splice_sites` '
              '(do not edit).'), "",
             (f"{n} coding introns of the train-role eukaryote chunks against the other GT / AG "
              "near them:")]
    lines += [f"{p} sha256 {manifest[p].sha256}" for p in files]
    lines += ['"""', "", f"DONOR = {_as_dict(donor)!r}", "", f"ACCEPTOR = {_as_dict(acceptor)!r}",
              ""]
    Path(args.out).write_text("\n".join(lines))
    print(f"{n} introns; wrote {args.out}")


if __name__ == "__main__":
    main(sys.argv[1:])
