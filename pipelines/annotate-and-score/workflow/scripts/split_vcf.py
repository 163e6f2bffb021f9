"""Split one VCF/BCF into chunks of at most N records (checkpoint ``split_vcf``).

Chunks are plain-text VCFs ``0000.vcf``, ``0001.vcf`` ... each with the full header, in input
order, so that concatenating the scored chunks in order gives back the input order. The input
must be sorted by position within contiguous contigs (what tabix needs to index the result);
an unsorted file is refused here, before any scoring, with the fix in the message. Plain gzip
(not bgzip), which htslib reads but cannot open for records (it rewinds past the header), is
decompressed into a temporary file first, as ``genoctx score-variants`` does.
"""

# No `from __future__` imports: Snakemake runs this file after a preamble of its own.

import contextlib
import sys
import tempfile
from collections.abc import Iterator
from itertools import islice
from pathlib import Path


class UnsortedVCF(ValueError):
    pass


class TooLongForTbi(ValueError):
    pass


TBI_LIMIT = 1 << 29  # the largest end a .tbi (tabix) index holds: 536,870,912


def sorted_lines(vf, vcf: str | Path, raw: Iterator[str] = (), index: str = "csi"
                 ) -> Iterator[str]:
    """The records of an open ``pysam.VariantFile`` as text, checking the sort order: each
    record's own line of ``raw`` (the file's data lines, ``genoctx.io.vcf.data_lines``), so
    that values pass through as written, else htslib's text (BCF). With ``index`` ``tbi``, a
    record ending past :data:`TBI_LIMIT` is refused (the concatenated result could not be
    indexed; that would show only after every chunk was scored)."""
    from genoctx.io.vcf import RecordOrder, record_text

    raw, order = iter(raw), RecordOrder()
    for rec in vf:
        if why := order.add(rec.chrom, rec.start, rec.stop):
            raise UnsortedVCF(f"{vcf}: {why}; sort the VCF first (bcftools sort)")
        if index == "tbi" and rec.stop > TBI_LIMIT:
            raise TooLongForTbi(
                f"{vcf}: {rec.chrom}:{rec.pos:,} lies past {TBI_LIMIT:,}, the last position a "
                "tabix .tbi index holds; set 'index: csi' under 'score' in the config "
                "(results/score/SAMPLE.vcf.gz.csi instead of .tbi)")
        yield record_text(rec, raw) + "\n"


@contextlib.contextmanager
def readable(vcf: str | Path) -> Iterator[Path]:
    """``vcf`` as a file htslib can open: a plain-gzip VCF decompressed into a temporary file,
    any other file as it is."""
    from genoctx.io.fasta import sniff_format
    from genoctx.io.spool import gunzip_copy

    if sniff_format(Path(vcf))[1] != "gzip":
        yield Path(vcf)
        return
    with tempfile.TemporaryDirectory(prefix="split_vcf-") as tmp:
        yield gunzip_copy(vcf, Path(tmp) / "input.vcf")


def split(vcf: str | Path, folder: str | Path, records: int, index: str = "tbi") -> list[Path]:
    """Write the chunks of ``vcf`` into ``folder``; returns their paths (one header-only chunk
    when the VCF has no records). ``index``: what the scored result will be indexed with
    (``tbi`` refuses records past 2^29, see :func:`sorted_lines`)."""
    import pysam

    from genoctx.io.hts import bytes_kept
    from genoctx.io.vcf import data_lines

    if records < 1:
        raise ValueError("records per chunk must be at least 1")
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    paths: list[Path] = []
    n = 0
    old = pysam.set_verbosity(0)
    try:
        # bytes_kept: Latin-1 (non-UTF-8) bytes pass through as they are, as in score-variants
        with bytes_kept(), readable(vcf) as path, pysam.VariantFile(str(path)) as vf, \
                data_lines(path) as raw:
            header = str(vf.header)
            lines = sorted_lines(vf, vcf, raw, index)
            while batch := list(islice(lines, records)):
                paths.append(folder / f"{len(paths):04d}.vcf")
                paths[-1].write_text(header + "".join(batch), errors="surrogateescape")
                n += len(batch)
            if not paths:
                paths.append(folder / "0000.vcf")
                paths[0].write_text(header, errors="surrogateescape")
    finally:
        pysam.set_verbosity(old)
    print(f"{n} records -> {len(paths)} chunks", file=sys.stderr)
    return paths


def main(smk) -> None:
    split(smk.input.vcf, smk.output[0], int(smk.params.records), smk.params.index)


if "snakemake" in globals():
    from _smk import run_logged

    run_logged(main, snakemake)  # noqa: F821 (injected by Snakemake)
