"""What a gene call's probability means on genomes annotated by different hands, and what
``genoctx annotate --min-score`` does to gene-level F1.

Every CDS call of ``genoctx annotate`` carries a probability (the GFF3 score column): a Platt
fit of "the call is an annotated gene" on the decoder's gene log-odds, made on the train
genomes' calls. Whether a weak call is an annotated gene depends on who annotated the genome:
submitters' annotations keep many short hypothetical genes, curated ones fewer. This script
calls the genes of each genome as ``genoctx annotate --model none`` does (whole genome,
``procedure="single"``, ARAGORN + barrnap, CDS in RNA genes dropped) and reports:

1. per probability bin, the calls and the share of them that are annotated genes (strand +
   stop), against the bin's mean probability;
2. gene-level F1 (and calls) keeping only calls of probability ≥ each ``--thresholds`` value
   (what ``--min-score`` keeps), beside Prodigal's F1.

Genomes: the two validation genomes, four train genomes (in-sample for the calibration, the
decoder's fitted weights and the ORF scorer) and the eight genomes of
``genecall_curated_unseen.py`` (fetched with ``apt-get download`` into ``--cache``,
sha256-checked; against their RefSeq annotation or protein tables). About 5 minutes on 2 cores.
Run: ``python benchmarks/genecall_calibration.py [--thresholds 0.4 0.5 0.6] [--cache DIR]
[--no-write]`` (writes the ``genecall-calibration`` section of docs/benchmarks.md).
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
from _report import md_table, section_head, write_section
from genecall_curated_unseen import curated_genomes

from genoctx.eval.benchmarks.annotation_bacteria import prodigal_calls
from genoctx.eval.metrics import gene_metrics, stop_key
from genoctx.heads import rna_genes
from genoctx.heads.annotate import call_bacterial, drop_weak_genes
from genoctx.io.annotation import read_genes, read_sequences_genbank
from genoctx.io.dataroot import load_manifest, resolve_data_root

DATA_ROOT_GENOMES = (
    "genomes/bacteria/Brucella_melitensis_16M.gbff.gz",
    "genomes/bacteria/Haemophilus_influenzae_Rd_KW20.gbff.gz",
    "genomes/bacteria/Escherichia_coli_K12_MG1655.gbff.gz",
    "genomes/bacteria/Yersinia_pestis_KIM.gbff.gz",
    "genomes/bacteria/Neisseria_meningitidis_MC58.gbff.gz",
    "genomes/bacteria/Paracoccus_sp._SCN_68-21.gbff.gz",
)
BINS = (0.0, 0.4, 0.5, 0.6, 0.8, 1.0)


def genomes(root: Path, cache: Path):
    """(name, role, records, truth) of every genome scored."""
    manifest = load_manifest(root)
    for rel in DATA_ROOT_GENOMES:
        records = [(c, s) for c, s in read_sequences_genbank(root / rel) if len(s)]
        yield Path(rel).name.removesuffix(".gbff.gz"), manifest[rel].role, records, \
            read_genes(root / rel)
    for name, _, _, records, truth in curated_genomes(cache):
        yield name, "unseen", records, truth


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data-root", default=None)
    ap.add_argument("--cache", default="results/unseen",
                    help="where the Debian packages of genecall_curated_unseen.py are kept")
    ap.add_argument("--thresholds", nargs="*", type=float, default=[0.4, 0.5, 0.6])
    ap.add_argument("--no-write", action="store_true", help="print only; leave docs alone")
    args = ap.parse_args(argv)
    root = resolve_data_root(args.data_root)
    cuts = [0.0, *args.thresholds]
    bin_rows, f1_rows = [], []
    for name, role, records, truth in genomes(root, Path(args.cache)):
        genes, found = call_bacterial(records, procedure="single")
        lengths = {c: len(s) for c, s in records}
        prod = rna_genes.drop_cds_in_rna(prodigal_calls(records), found or [], lengths=lengths)
        true = {stop_key(g) for g in truth}
        p = np.array([g.score for g in genes])
        ok = np.array([stop_key(g) in true for g in genes])
        where = np.clip(np.digitize(p, BINS[1:-1]), 0, len(BINS) - 2)
        cells = []
        for b in range(len(BINS) - 1):
            m = where == b
            cells.append(f"{m.sum()}: {ok[m].mean():.2f} ({p[m].mean():.2f})" if m.any()
                         else "0")
        bin_rows.append([name, role, *cells])
        f1 = []
        for t in cuts:
            m = gene_metrics(drop_weak_genes(genes, t), truth)
            f1.append(f"{m.f1:.4f} ({m.n_pred})")
        mp = gene_metrics(prod, truth)
        f1_rows.append([name, role, *f1, f"{mp.f1:.4f} ({mp.n_pred})"])
        print("\t".join(bin_rows[-1]), "\n\t", "\t".join(f1_rows[-1]), flush=True)

    bins = [f"[{a:.1f}, {b:.1f}{']' if b == 1 else ')'}" for a, b in itertools.pairwise(BINS)]
    body = (section_head("Gene-call probabilities across annotation sources, and "
                         "`--min-score`", __file__, argv)
            + "Whole genomes, `genoctx annotate --model none` (procedure single, RNA genes "
            "from ARAGORN + barrnap). Match: strand + stop. Train rows are in-sample for the "
            "calibration, the fitted decoder weights and the ORF scorer. Cells of the first "
            "table: calls in the probability bin: share of them that are annotated genes "
            "(the bin's mean probability).\n\n"
            + md_table(["genome", "role", *bins], bin_rows)
            + "\n\nGene-level F1 (calls) keeping calls of probability ≥ the threshold "
            "(`--min-score`), and Prodigal's (CDS in RNA genes dropped, as for genoctx):\n\n"
            + md_table(["genome", "role", *(f"≥ {t:g}" for t in cuts), "Prodigal"], f1_rows))
    if not args.no_write:
        write_section("genecall-calibration", body)


if __name__ == "__main__":
    main()
