"""rRNA genes of archaea from barrnap's bacterial or archaeal profiles, against their annotation.

``genoctx annotate`` finds rRNA genes with barrnap's profiles (``genoctx.heads.rna_genes``).
Since 2026-12-07 an archaeon's come from the archaeal ones (``find_rrna(kingdom="auto")``: the
bacterial profiles first, then the archaeal ones where the complete 16S/23S genes name the
genome an archaeon's; ``genoctx annotate --domain archaea`` searches with them alone), as
Prokka and Bakta run barrnap ``--kingdom arc`` for archaea. This script measures the change on
the four archaea of ``genecall_curated_unseen.py`` (four orders; none in the data root):

* every rRNA gene found, matched to the annotated rRNA gene it overlaps on its strand: how many
  have both ends exact, both within 10 bp, and the mean of |start offset| + |end offset|;
* the archaeal profiles over the prefilter's stretches (what annotate searches) against the
  whole genome: the same genes or not;
* gene-level CDS F1 of ``call_bacterial`` (as ``genoctx annotate --model none``), whose CDS
  calls overlapping an RNA gene by 30 bp or more are dropped: with the rRNA genes of each set.

Run: ``python benchmarks/rrna_kingdom.py [--cache DIR] [--no-write]`` (writes the
``rrna-kingdom`` section of docs/benchmarks.md).
"""

from __future__ import annotations

import sys
from pathlib import Path

# Put this folder last on the path: a sibling script named like a stdlib module (tokenize.py)
# must not shadow the standard library.
_HERE = Path(__file__).resolve().parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != _HERE] + [str(_HERE)]

import argparse
import time

from _report import md_table, section_head, write_section
from genecall_curated_unseen import BASE, GENOMES, PACKAGE, VERSION, curated_genomes
from genecall_unseen import fetch

from genoctx.eval.metrics import gene_metrics
from genoctx.heads import rna_genes
from genoctx.heads.annotate import call_bacterial
from genoctx.io.annotation import read_features

ARCHAEA = [g[0] for g in GENOMES if g[1] == "Archaea"]


def ends(calls, truth) -> list:
    """Exact, within 10 bp, and the mean summed end offset of the calls overlapping truth."""
    offsets = []
    for c in calls:
        near = [abs(c.start - t.start) + abs(c.end - t.end) for t in truth
                if (t.contig, t.strand) == (c.contig, c.strand)
                and min(c.end, t.end) > max(c.start, t.start)]
        if near:
            offsets.append(min(near))
    return [len(calls), len(offsets), sum(o == 0 for o in offsets),
            sum(o <= 20 for o in offsets),
            f"{sum(offsets) / len(offsets):.1f}" if offsets else "–"]


def key(r) -> tuple:
    return (r.contig, r.start, r.end, r.strand, r.attrs["product"])


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cache", default="results/unseen", help="where the package is kept")
    ap.add_argument("--no-write", action="store_true", help="print only; leave docs alone")
    args = ap.parse_args(argv)
    rows, same, f1 = [], [], []
    for name, _, _, records, truth in curated_genomes(Path(args.cache), ARCHAEA):
        path = (fetch(Path(args.cache), PACKAGE, VERSION, BASE)
                / next(g[3] for g in GENOMES if g[0] == name))
        annotated = [f for fs in read_features(path).values() for f in fs if f.kind == "rRNA"]
        found = {}
        for kingdom in ("bac", "arc", "auto"):
            t0 = time.perf_counter()
            found[kingdom] = rna_genes.find_rrna(records, kingdom=kingdom, threads=1)
            wall = time.perf_counter() - t0
            rows.append([name, kingdom, len(annotated)] + ends(found[kingdom], annotated)
                        + [f"{wall:.1f}"])
            print("\t".join(map(str, rows[-1])), flush=True)
        whole = rna_genes.find_rrna(records, kingdom="arc", prefilter=False, threads=1)
        same.append([name, len(found["arc"]), len(whole),
                     "yes" if [key(r) for r in whole] == [key(r) for r in found["arc"]]
                     else "no"])
        genes, _ = call_bacterial(records, rna="none", domain="archaea")  # no ORF scorer
        trna = rna_genes.find_trna(records)
        lengths = {c: len(s) for c, s in records}
        cells = []
        for kingdom in ("bac", "auto"):
            kept = rna_genes.drop_cds_in_rna(genes, trna + found[kingdom], lengths=lengths)
            cells.append(gene_metrics(kept, truth).f1)
        f1.append([name, f"{cells[0]:.4f}", f"{cells[1]:.4f}", f"{cells[1] - cells[0]:+.4f}"])
        print(same[-1], f1[-1], flush=True)
    body = (section_head("rRNA genes of archaea: barrnap's bacterial or archaeal profiles",
                         __file__, argv)
            + f"Genomes: the four archaea of the GenBank files of the Debian package {PACKAGE} "
            f"{VERSION} (sha256-checked, `genecall_curated_unseen.py`). `find_rrna(kingdom=...)` "
            "over the prefilter's stretches: `bac` = barrnap's bacterial profiles (what "
            "`genoctx annotate` used for every genome before), `arc` = its archaeal ones, "
            "`auto` = what `genoctx annotate` does now (bacterial, then archaeal where the "
            "complete 16S/23S genes name an archaeon). A call is matched to the annotated rRNA "
            "gene it overlaps on its strand; offset = |start offset| + |end offset| in bp; "
            "wall s on one thread.\n\n"
            + md_table(["genome", "profiles", "annotated rRNA genes", "calls",
                        "calls overlapping one", "both ends exact", "offset ≤ 20 bp",
                        "mean offset (bp)", "wall s"], rows)
            + "\n\nThe archaeal profiles over the prefilter's stretches (which are found with "
            "the bacterial profiles' seeds) against the whole genome:\n\n"
            + md_table(["genome", "genes, stretches", "genes, whole genome",
                        "the same genes"], same)
            + "\n\nGene-level CDS F1 (strand + stop) of `call_bacterial` with the ORF scorer "
            "left out (the archaeal domain named), its CDS calls overlapping an RNA gene by "
            "≥ 30 bp dropped, the tRNA genes from ARAGORN and the rRNA genes of each set:\n\n"
            + md_table(["genome", "F1, bacterial profiles", "F1, auto (archaeal)", "change"],
                       f1))
    if not args.no_write:
        write_section("rrna-kingdom", body)


if __name__ == "__main__":
    main()
