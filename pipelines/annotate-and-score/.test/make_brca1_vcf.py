"""Write the .test VCF: a few BRCA1 SGE variants (Findlay et al. 2018) on NG_005905.2.

The variants come from the data root's ``variants/brca1_sge/brca1_findlay2018_on_NG_005905.2.tsv``
(REF/ALT on the RefSeqGene's strand: ``ref_gene``/``alt_gene`` at ``ng_pos``): ``--per-class``
of each functional class (FUNC, INT, LOF), evenly spaced along the gene, written sorted by
position with the measured function score and class in INFO.

    python .test/make_brca1_vcf.py --out .test/resources/brca1_sge_subset.vcf
"""

from __future__ import annotations

import argparse
import csv
from pathlib import Path

TABLE = "variants/brca1_sge/brca1_findlay2018_on_NG_005905.2.tsv"
FASTA = "variants/brca1_sge/NG_005905.2_BRCA1_RefSeqGene.fasta.gz"
CONTIG = "NG_005905.2"
CLASSES = ("FUNC", "INT", "LOF")


def pick(rows: list[dict], per_class: int) -> list[dict]:
    """``per_class`` rows of each class, evenly spaced in (position, alt) order."""
    chosen = []
    for klass in CLASSES:
        mine = sorted((r for r in rows if r["func_class"] == klass),
                      key=lambda r: (int(r["ng_pos"]), r["alt_gene"]))
        step = len(mine) / per_class
        chosen += [mine[int(i * step)] for i in range(min(per_class, len(mine)))]
    return sorted(chosen, key=lambda r: (int(r["ng_pos"]), r["alt_gene"]))


def write_vcf(rows: list[dict], length: int, out: Path) -> None:
    out.parent.mkdir(parents=True, exist_ok=True)
    lines = [
        "##fileformat=VCFv4.2",
        f"##contig=<ID={CONTIG},length={length}>",
        '##INFO=<ID=SGE_SCORE,Number=1,Type=Float,Description="Findlay 2018 function score">',
        '##INFO=<ID=SGE_CLASS,Number=1,Type=String,Description="Findlay 2018 class">',
        "#CHROM\tPOS\tID\tREF\tALT\tQUAL\tFILTER\tINFO",
    ]
    for r in rows:
        lines.append(f"{CONTIG}\t{r['ng_pos']}\t{r['transcript_variant']}\t{r['ref_gene']}\t"
                     f"{r['alt_gene']}\t.\t.\tSGE_SCORE={float(r['function_score']):.4f};"
                     f"SGE_CLASS={r['func_class']}")
    out.write_text("\n".join(lines) + "\n")


def main(argv: list[str] | None = None) -> None:
    from genoctx.io.dataroot import resolve_data_root
    from genoctx.io.fasta import FastaFile

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data-root", default=None, help="default: $GENOCTX_DATA_ROOT or ../shared/data")
    ap.add_argument("--out", type=Path, required=True, help="VCF to write")
    ap.add_argument("--per-class", type=int, default=4, help="variants per functional class")
    args = ap.parse_args(argv)
    root = resolve_data_root(args.data_root)
    with open(root / TABLE, newline="") as fh:
        rows = list(csv.DictReader(fh, delimiter="\t"))
    with FastaFile(root / FASTA) as fa:
        length = fa.lengths[CONTIG]
    write_vcf(pick(rows, args.per_class), length, args.out)


if __name__ == "__main__":
    main()
