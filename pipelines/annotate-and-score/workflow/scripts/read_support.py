"""Read depth over each predicted gene of one sample (rule ``read_support``).

The BAM is linked into the results folder and indexed there (the original may sit in a
read-only folder); an index already beside the original is linked instead of rebuilt. Depth
is genoctx's pileup ``depth`` channel (:func:`genoctx.io.bam.pileup_channels`: reads passing
the default flag filter, bases of quality >= 13 or deletions). Genes on contigs the BAM does
not have get no value.
"""

# No `from __future__` imports: Snakemake runs this file after a preamble of its own.

import csv
import os
import sys
from pathlib import Path

COLUMNS = ("gene", "contig", "start", "end", "strand", "mean_depth", "covered_fraction")


def link_bam(bam: str | Path, link: str | Path, bai: str | Path) -> None:
    """Symlink ``bam`` to ``link`` and give it the index ``bai`` (linked or built)."""
    import pysam

    bam, link, bai = Path(bam).resolve(), Path(link), Path(bai)
    link.parent.mkdir(parents=True, exist_ok=True)
    for p in (link, bai):
        p.unlink(missing_ok=True)
    os.symlink(bam, link)
    beside = [p for p in (Path(f"{bam}.bai"), bam.with_suffix(".bai")) if p.is_file()]
    if beside and beside[0].stat().st_mtime >= bam.stat().st_mtime:
        os.symlink(beside[0], bai)
        return
    try:
        pysam.index("-o", str(bai), str(link))
    except pysam.SamtoolsError as exc:
        raise SystemExit(f"{bam} could not be indexed; it must be sorted by coordinate "
                         f"(samtools sort): {str(exc).strip()}") from None


def gene_depths(bam: str | Path, gff3: str | Path) -> list[dict]:
    """One row per predicted gene: mean depth and fraction of bases with depth > 0."""
    import numpy as np

    from genoctx.io.bam import open_alignment, pileup_channels
    from genoctx.io.regions import Region
    from genoctx.io.writers import forward_parts, read_gff3_genes

    with open_alignment(bam) as af:
        lengths = dict(zip(af.references, af.lengths))
    rows = []
    for g in read_gff3_genes(gff3):
        row = {"gene": g.attrs.get("Parent", g.attrs.get("ID", "")), "contig": g.contig,
               "start": g.start + 1, "end": g.end, "strand": "+" if g.strand == 1 else "-",
               "mean_depth": "", "covered_fraction": ""}
        if g.contig in lengths:  # a gene across a circle's origin: both of its pieces
            depth = np.concatenate([pileup_channels(bam, Region(g.contig, a, b), None)[:, 0]
                                    for a, b in forward_parts(g, lengths)])
            row["mean_depth"] = f"{depth.mean():.3f}"
            row["covered_fraction"] = f"{(depth > 0).mean():.3f}"
        rows.append(row)
    return rows


def main(smk) -> None:
    link_bam(smk.input.bam, smk.output.bam, smk.output.bai)
    rows = gene_depths(smk.output.bam, smk.input.gff3)
    with open(smk.output.tsv, "w", newline="") as fh:
        writer = csv.DictWriter(fh, COLUMNS, delimiter="\t", lineterminator="\n")
        writer.writeheader()
        writer.writerows(rows)
    print(f"{len(rows)} genes", file=sys.stderr)


if "snakemake" in globals():
    from _smk import run_logged

    run_logged(main, snakemake)  # noqa: F821 (injected by Snakemake)
