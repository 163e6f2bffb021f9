"""Read depth over each predicted gene of one sample (rule ``read_support``).

The alignments are staged in a folder of the results (the original may sit in a read-only
folder) and indexed there: a BAM or CRAM is linked (``reads.bam`` + ``.bai``, ``reads.cram`` +
``.crai``; an index already beside the original is linked instead of rebuilt), a SAM is
sorted into a BAM (pysam, no samtools). A CRAM is decoded against the sample's FASTA. Depth
is genoctx's pileup ``depth`` channel (:func:`genoctx.io.bam.pileup_channels`: reads passing
the default flag filter, bases of quality >= 13 or deletions). Genes on contigs the alignments
do not have get no value.
"""

# No `from __future__` imports: Snakemake runs this file after a preamble of its own.

import csv
import os
import sys
from pathlib import Path

COLUMNS = ("gene", "contig", "start", "end", "strand", "mean_depth", "covered_fraction")


def stage_alignment(reads: str | Path, folder: str | Path) -> Path:
    """``reads`` (BAM, CRAM or SAM) as an indexed file in ``folder``: a BAM or CRAM linked, with
    its index linked from beside it (when not older than it) or built; a SAM sorted into a BAM."""
    import pysam

    from genoctx.io.fasta import sniff_format

    reads, folder = Path(reads).resolve(), Path(folder)
    fmt = sniff_format(reads)[0]
    folder.mkdir(parents=True, exist_ok=True)
    link = folder / f"reads.{'cram' if fmt == 'cram' else 'bam'}"
    index = Path(f"{link}.{'crai' if fmt == 'cram' else 'bai'}")
    for p in (link, index):
        p.unlink(missing_ok=True)
    if fmt == "sam":
        try:
            pysam.sort("-o", str(link), str(reads))
        except pysam.SamtoolsError as exc:
            raise SystemExit(f"{reads} could not be sorted into a BAM: {str(exc).strip()}") \
                from None
    else:
        os.symlink(reads, link)
        beside = [p for p in (Path(f"{reads}{index.suffix}"), reads.with_suffix(index.suffix))
                  if p.is_file()]
        if beside and beside[0].stat().st_mtime >= reads.stat().st_mtime:
            os.symlink(beside[0], index)
            return link
    try:
        pysam.index("-o", str(index), str(link))
    except pysam.SamtoolsError as exc:
        raise SystemExit(f"{reads} could not be indexed; it must be sorted by coordinate "
                         f"(samtools sort): {str(exc).strip()}") from None
    return link


def gene_depths(bam: str | Path, gff3: str | Path, reference: str | Path | None = None
                ) -> list[dict]:
    """One row per predicted gene: mean depth and fraction of bases with depth > 0. A CRAM
    needs ``reference`` (its FASTA); a BAM reads without."""
    import numpy as np

    from genoctx.io.bam import open_alignment, pileup_channels
    from genoctx.io.regions import Region
    from genoctx.io.writers import forward_parts, read_gff3_genes

    with open_alignment(bam, reference) as af:
        lengths = dict(zip(af.references, af.lengths))
    rows = []
    for g in read_gff3_genes(gff3):
        row = {"gene": g.attrs.get("Parent", g.attrs.get("ID", "")), "contig": g.contig,
               "start": g.start + 1, "end": g.end, "strand": "+" if g.strand == 1 else "-",
               "mean_depth": "", "covered_fraction": ""}
        if g.contig in lengths:  # a gene across a circle's origin: both of its pieces
            depth = np.concatenate(
                [pileup_channels(bam, Region(g.contig, a, b), reference)[:, 0]
                 for a, b in forward_parts(g, lengths)])
            row["mean_depth"] = f"{depth.mean():.3f}"
            row["covered_fraction"] = f"{(depth > 0).mean():.3f}"
        rows.append(row)
    return rows


def main(smk) -> None:
    reads = stage_alignment(smk.input.reads, smk.output.reads)
    reference = smk.input.fasta if reads.suffix == ".cram" else None
    rows = gene_depths(reads, smk.input.gff3, reference)
    with open(smk.output.tsv, "w", newline="") as fh:
        writer = csv.DictWriter(fh, COLUMNS, delimiter="\t", lineterminator="\n")
        writer.writeheader()
        writer.writerows(rows)
    print(f"{len(rows)} genes", file=sys.stderr)


if "snakemake" in globals():
    from _smk import run_logged

    run_logged(main, snakemake)  # noqa: F821 (injected by Snakemake)
