"""Which of the ORF scorer's feature groups carry over to genomes it never saw? An ablation.

The cross-genome ORF scorer (``genoctx.heads.orf_scorer``) reads the decoder's own scores, the
amino-acid composition of each ORF's translation and its G+C and third-position G+C against the
genome's. On Methanosarcina acetivorans (an archaeon; ``genecall_curated_unseen.py``) it adds
306 calls, 262 of them not annotated genes. This script refits the scorer without a feature
group (its columns set to 0 in fitting and in use, so no tree splits on them) and measures:

1. held out by species on the 13 train genomes (the scorer fitted on the other species, each
   one unit of weight, used as shipped: 3 × the bounded residual), gene-level sensitivity /
   precision / F1 per genome and their mean, beside the decoder without any scorer;
2. fitted on all train genomes, the whole-genome F1 on the genomes of
   ``genecall_curated_unseen.py`` (archaea, Bradyrhizobium and mycobacteria, against their
   own annotation; CDS overlapping the RNA genes of ``genoctx annotate`` dropped, as there).

Variants: ``all`` (the shipped features), ``no_gc`` (without gc_vs_genome and gc3_vs_genome),
``no_aa`` (without the 20 amino-acid shares), ``none`` (no scorer). Reads only train-role
genomes for fitting (through the role guard of ``decoder_orf_classifier.decoded_train_genomes``).
About 15 minutes on 2 cores. Run: ``python benchmarks/decoder_orf_features.py [--cache DIR]
[--no-write]`` (writes the ``decoder-orf-features`` section of docs/benchmarks.md).
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

import argparse
from dataclasses import dataclass

import numpy as np
from _report import md_table, section_head, write_section
from decoder_orf_classifier import decoded_train_genomes
from genecall_curated_unseen import curated_genomes

from genoctx.eval.metrics import gene_metrics
from genoctx.heads import orf_scorer as osc
from genoctx.heads import rna_genes
from genoctx.heads.decoder import DecoderParams, GenomeDecoder
from genoctx.heads.decoder_fit import species_key, species_weights

F = list(osc.FEATURE_NAMES)
VARIANTS = {
    "all": [],
    "no_gc": [F.index("gc_vs_genome"), F.index("gc3_vs_genome")],
    "no_aa": [F.index(f"aa_{a}") for a in osc.AMINO],
}


def blank(x: np.ndarray, cols: list[int]) -> np.ndarray:
    """``x`` with ``cols`` set to 0."""
    if not cols:
        return x
    x = x.copy()
    x[:, cols] = 0.0
    return x


@dataclass
class Ablated:
    """A fitted scorer that sees its rows with ``cols`` blanked (as it was fitted)."""
    scorer: osc.OrfScorer
    cols: list[int]

    def adjustment(self, x: np.ndarray) -> np.ndarray:
        return self.scorer.adjustment(blank(x, self.cols))


def fit(tables, cols) -> Ablated:
    return Ablated(osc.fit_scorer([(blank(x, cols), y, w) for x, y, w in tables]), cols)


def decode_with(d: GenomeDecoder, scorer) -> list:
    """``d``'s calls with ``scorer``'s term (None: without any); ``d`` is left as it was."""
    if scorer is not None:
        d.set_orf_adjust(scorer)
    calls = d.calls(d.decode())
    d.orf_adjust = None
    return calls


def f3(m) -> str:
    return f"{m.sensitivity:.4f} / {m.precision:.4f} / {m.f1:.4f}"


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cache", default="results/unseen", help="where cct-examples is kept")
    ap.add_argument("--no-write", action="store_true", help="print only; leave docs alone")
    args = ap.parse_args(argv)
    data, held = decoded_train_genomes(["--all"])
    weights = dict(zip(data, species_weights(list(data))))
    names = ["none", *VARIANTS]
    rows, sums = [], {v: np.zeros(3) for v in names}
    for name in held:
        others = [n for n in data if species_key(n) != species_key(name)]
        _, _, d, _, truth = data[name]
        row = [name]
        for v in names:
            scorer = None if v == "none" else fit(
                [(data[n][0], data[n][1], weights[n]) for n in others], VARIANTS[v])
            m = gene_metrics(decode_with(d, scorer), truth)
            sums[v] += (m.sensitivity, m.precision, m.f1)
            row.append(f3(m))
        print("\t".join(row), flush=True)
        rows.append(row)
    mean = ["mean"] + [" / ".join(f"{s:.4f}" for s in sums[v] / len(held)) for v in names]
    rows.append(mean)
    print("\t".join(mean), flush=True)

    # fitted on every train genome, used on the unseen annotated genomes
    tables = [(data[n][0], data[n][1], weights[n]) for n in data]
    scorers = {v: None if v == "none" else fit(tables, VARIANTS[v]) for v in names}
    unseen = []
    for name, _, _, records, truth in curated_genomes(Path(args.cache)):
        d = GenomeDecoder(records, None, DecoderParams(orf_scorer=False))
        d.train()
        found = rna_genes.find_rna_genes(records, frozenset())
        lengths = {c: len(s) for c, s in records}
        row = [name]
        for v in names:
            calls = rna_genes.drop_cds_in_rna(decode_with(d, scorers[v]), found, lengths=lengths)
            m = gene_metrics(calls, truth)
            row.append(f"{m.n_pred}: {f3(m)}")
        print("\t".join(row), flush=True)
        unseen.append(row)

    heads = ["no scorer", "all features (shipped)", "without G+C features",
             "without amino-acid shares"]
    body = (section_head("ORF scorer feature groups: held out by species, and on unseen "
                         "genomes", __file__, argv)
            + "Sensitivity / precision / F1, gene level (strand + stop). Held out: each train "
            "genome decoded with a scorer fitted on the other species' genomes. The "
            "ablated scorers see the left-out columns as 0 in fitting and in use.\n\n"
            + md_table(["held-out train genome", *heads], rows)
            + "\n\nFitted on all 13 train genomes; unseen genomes with RefSeq annotation "
            "(`genecall_curated_unseen.py`; cells: calls: sensitivity / precision / F1):\n\n"
            + md_table(["genome", *heads], unseen))
    if not args.no_write:
        write_section("decoder-orf-features", body)


if __name__ == "__main__":
    main()
