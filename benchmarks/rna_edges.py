"""How far short of a sequence end nhmmer's alignment stops when that end cuts an rRNA gene.

A contig or region that ends inside an rRNA gene leaves a partial hit; ``find_rrna`` takes a
partial hit that ends within ``RRNA_EDGE_SLACK`` bases of the end as cut by it (GFF3
``start_range``/``end_range``, GenBank ``<``/``>``). This cuts the 16S, 23S and 5S genes of
E. coli K-12's rrnH operon (a train genome; nothing is fitted) at 5-95 % of their length,
keeps 3 kb on the other side, and prints how many bases lie between each partial hit and the
end that cuts it, and whether it was marked as cut.

Run: ``python benchmarks/rna_edges.py [--data-root DIR] [--no-write]`` (about a minute;
writes the ``rna_edges`` section of docs/benchmarks.md).
"""

from __future__ import annotations

import sys
from pathlib import Path

# Put this folder last on the path: a sibling script named like a stdlib module (tokenize.py)
# must not shadow the standard library.
_HERE = Path(__file__).resolve().parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != _HERE] + [str(_HERE)]

import argparse

from _report import md_table, section_head, write_section

from genoctx.heads import rna_genes
from genoctx.io.annotation import read_sequences_genbank
from genoctx.io.dataroot import resolve_data_root

ECOLI = "Escherichia_coli_K12_MG1655.gbff.gz"
OPERON = (220_000, 240_000)  # rrnH: 16S, tRNA-Ile, tRNA-Ala, 23S, 5S
FLANK = 3_000
FRACTIONS = tuple(k / 20 for k in range(1, 20))  # 5 %, 10 %, ..., 95 % of the gene


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data-root", default=None)
    ap.add_argument("--no-write", action="store_true")
    args = ap.parse_args()
    path = resolve_data_root(args.data_root) / "genomes" / "bacteria" / ECOLI
    seq = next(read_sequences_genbank(path))[1]
    lo, hi = OPERON
    genes = [g for g in rna_genes.find_rrna([("c", seq[lo:hi])]) if "partial" not in g.attrs]
    rows = []
    for g in genes:
        start, end = lo + g.start, lo + g.end
        product = g.attrs["product"].split()[0]
        for frac in FRACTIONS:
            cut = start + int((end - start) * frac)
            pieces = {"right": (start - FLANK, cut), "left": (cut, end + FLANK)}
            for side, (a, b) in pieces.items():
                hits = [h for h in rna_genes.find_rrna([("c", seq[a:b])])
                        if h.attrs.get("partial") and h.attrs.get("product", "").startswith(
                            product) and (h.end > cut - a - 50 if side == "right"
                                          else h.start < 50)]
                for h in hits:
                    gap = (b - a) - h.end if side == "right" else h.start
                    marked = (h.attrs.get("cut") or (False, False))[side == "right"]
                    rows.append([product, f"{frac:.0%}", f"{side} end", gap,
                                 "yes" if marked else "no"])
    table = md_table(["gene", "cut at", "cut by the", "bp between hit and end", "marked cut"],
                     rows)
    print(table)
    if not args.no_write:
        gaps = [r[3] for r in rows]
        body = section_head("rna_edges — partial rRNA hits at sequence ends", __file__)
        body += (f"E. coli K-12 rrnH genes (train genome) cut at a share of their length, "
                 f"{FLANK:,} bp kept on the other side; `find_rrna` on each piece. The hit of a "
                 f"cut gene stops 0-{max(gaps)} bp short of the end that cuts it; "
                 f"`RRNA_EDGE_SLACK` = {rna_genes.RRNA_EDGE_SLACK} bp marks it cut.\n\n"
                 + table + "\n")
        write_section("rna_edges", body)


if __name__ == "__main__":
    main()
