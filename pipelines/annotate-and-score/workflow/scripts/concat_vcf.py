"""Concatenate the scored chunks of one VCF (in chunk order) → bgzipped VCF + its index
(tabix .tbi, or .csi for positions past 2^29).

The header is the first chunk's (every chunk was scored with the same settings, so their
headers agree); records follow in chunk order, which is the input order.
"""

# No `from __future__` imports: Snakemake runs this file after a preamble of its own.

import io
import sys
from pathlib import Path


def concat(parts: list[str | Path], out: str | Path, index: str = "tbi") -> int:
    """Write ``out`` (bgzip) and ``out.tbi`` (``index`` ``tbi``) or ``out.csi`` (``csi``);
    returns the number of records."""
    import pysam

    from genoctx.io.atomic import atomic_path
    from genoctx.io.hts import quiet_htslib

    if not parts:
        raise ValueError("no scored chunks to concatenate")
    if index not in ("tbi", "csi"):
        raise ValueError(f"index must be tbi or csi, got {index!r}")
    n = 0
    # bytes that are not UTF-8 (Latin-1 in an input's header, kept by score-variants) pass
    # through unchanged
    with atomic_path(Path(out)) as tmp, pysam.BGZFile(str(tmp), "wb") as raw, \
            io.TextIOWrapper(raw, "utf-8", errors="surrogateescape") as fh:
        for i, part in enumerate(parts):
            with open(part, encoding="utf-8", errors="surrogateescape") as src:
                for line in src:
                    if line.startswith("#"):
                        if i == 0:
                            fh.write(line)
                        continue
                    fh.write(line)
                    n += 1
    with quiet_htslib():
        pysam.tabix_index(str(out), preset="vcf", force=True, csi=index == "csi")
    return n


def main(smk) -> None:
    n = concat(list(smk.input), smk.output.vcf, smk.params.index)
    print(f"{len(smk.input)} chunks -> {n} records in {smk.output.vcf}", file=sys.stderr)


if "snakemake" in globals():
    from _smk import run_logged

    run_logged(main, snakemake)  # noqa: F821 (injected by Snakemake)
