"""Structural RNA genes from the sequence: tRNA and tmRNA (ARAGORN) and rRNA (barrnap's HMMs).

The annotation head has tRNA/rRNA/ncRNA classes, but the shipped checkpoint does not learn them
(it calls no RNA on E. coli, which has 86 tRNAs and 22 rRNAs; docs/results.md). Until a trained
head does, ``genoctx annotate`` takes RNA genes from the two tools bacterial annotation pipelines
(Prokka, Bakta) use, through their Python bindings (dependencies of genoctx):

* tRNA and tmRNA: ARAGORN (Laslett & Canback 2004) via ``pyaragorn``, translation table 11;
* 5S, 16S and 23S rRNA: barrnap's nhmmer profiles via ``pybarrnap`` (kingdom ``bac``).

Both are GPL-3.0 (as is ``pyrodigal``); genoctx itself stays MIT and imports them only when
they are used, and ``--rna auto`` falls back to the head's RNA classes where they are missing.
Each call carries ``attrs`` ``product`` and ``inference`` (the tool), which the GFF3 writer keeps.

```python
from genoctx.heads.rna_genes import find_rna_genes
rnas = find_rna_genes([("chr", seq_bytes)])   # [RNACall(kind="tRNA" | "tmRNA" | "rRNA", ...)]
```
"""

from __future__ import annotations

import importlib
import importlib.util
import math
import os

from genoctx.errors import InputError
from genoctx.heads.decoder import GeneCall, RNACall

RRNA_PRODUCTS = {"5S_rRNA": "5S ribosomal RNA", "16S_rRNA": "16S ribosomal RNA",
                 "23S_rRNA": "23S ribosomal RNA"}
# A CDS call that overlaps an RNA gene by at least this many bases is dropped (Prokka does the
# same); chosen on the train genomes: `python benchmarks/decoder_variants.py rna_overlap=30`
# (docs/decoder.md).
CDS_RNA_OVERLAP = 30


def available() -> dict[str, bool]:
    """Which finders are installed: ``{"trna": pyaragorn, "rrna": pybarrnap}``."""
    return {"trna": importlib.util.find_spec("pyaragorn") is not None,
            "rrna": importlib.util.find_spec("pybarrnap") is not None}


def _require(module: str, what: str):
    try:
        return importlib.import_module(module)
    except ImportError:
        raise InputError(f"{what} needs the package {module}, which is missing: "
                         f"pip install {module}") from None



# What the finders see: A/C/G/T in either case (U as T) kept, every other byte read as N.
# ARAGORN loops forever on letters such as E, X or '-' (pyaragorn 0.3), which FASTA may hold.
_FINDER_BYTES = bytearray(b"N" * 256)
for _src, _dst in zip(b"ACGTUacgtu", b"ACGTTacgtt"):
    _FINDER_BYTES[_src] = _dst
_FINDER_BYTES = bytes(_FINDER_BYTES)


def finder_sequence(seq: bytes | str) -> bytes:
    """``seq`` as the RNA finders are given it: A/C/G/T (case kept, U as T), anything else N."""
    if isinstance(seq, str):
        seq = seq.encode("ascii", errors="replace")
    return seq.translate(_FINDER_BYTES)


def find_trna(records: list[tuple[str, bytes]], *, translation_table: int = 11) -> list[RNACall]:
    """tRNA and tmRNA genes of every record (ARAGORN), 0-based half-open, sorted."""
    pyaragorn = _require("pyaragorn", "tRNA finding")
    finder = pyaragorn.RNAFinder(translation_table=translation_table, trna=True, tmrna=True,
                                 linear=True)
    version = getattr(pyaragorn, "ARAGORN_VERSION", "")
    out = []
    for contig, seq in records:
        if not seq:
            continue
        for g in finder.find_rna(finder_sequence(seq)):
            lo, hi = min(g.begin, g.end) - 1, max(g.begin, g.end)
            if g.type == "tmRNA":
                kind, product = "tmRNA", "transfer-messenger RNA"
            else:
                kind = "tRNA"
                aa = g.amino_acid or "Xxx"
                product = f"tRNA-{aa}" + (f"({g.anticodon})" if g.anticodon else "")
            out.append(RNACall(contig, lo, hi, 1 if g.strand > 0 else -1, kind, math.nan,
                               {"product": product, "inference": f"ARAGORN:{version}".rstrip(":")}))
    return sorted(out, key=lambda r: (r.contig, r.start, r.end, r.strand))


def find_rrna(records: list[tuple[str, bytes]], *, kingdom: str = "bac") -> list[RNACall]:
    """5S/16S/23S rRNA genes of every record (barrnap profiles), 0-based half-open, sorted.

    Partial hits (barrnap's ``note=aligned only ...``) are kept and marked ``partial=true``.
    """
    pybarrnap = _require("pybarrnap", "rRNA finding")
    from Bio.Seq import Seq
    from Bio.SeqRecord import SeqRecord

    # barrnap wants unique plain ids: give it r0, r1, ... and map back
    names = [c for c, s in records if s]
    seqs = [SeqRecord(Seq(finder_sequence(s).decode("ascii")), id=f"r{i}", name=f"r{i}")
            for i, (_, s) in enumerate((c, s) for c, s in records if s)]
    if not seqs:
        return []
    threads = max(1, min(4, os.cpu_count() or 1))  # nhmmer's hits do not depend on it
    result = pybarrnap.Barrnap(seqs, kingdom=kingdom, threads=threads, quiet=True).run()
    version = getattr(pybarrnap, "__version__", "")
    out = []
    for line in result.get_gff_text().splitlines():
        col = line.split("\t")
        if line.startswith("#") or len(col) != 9 or col[2] != "rRNA":
            continue
        attrs = dict(kv.split("=", 1) for kv in col[8].split(";") if "=" in kv)
        name = attrs.get("Name", "")
        product = RRNA_PRODUCTS.get(name, attrs.get("product", name or "ribosomal RNA"))
        extra = {"product": product, "inference": f"barrnap:{version}".rstrip(":")}
        if "note" in attrs:
            extra["partial"] = "true"
        out.append(RNACall(names[int(col[0][1:])], int(col[3]) - 1, int(col[4]),
                           1 if col[6] == "+" else -1,
                           "rRNA", math.nan, extra))
    return sorted(out, key=lambda r: (r.contig, r.start, r.end, r.strand))


def find_rna_genes(records: list[tuple[str, bytes]]) -> list[RNACall]:
    """tRNA, tmRNA and rRNA genes of ``records`` (both finders must be installed)."""
    return sorted(find_trna(records) + find_rrna(records),
                  key=lambda r: (r.contig, r.start, r.end, r.strand, r.kind))


def drop_cds_in_rna(genes: list[GeneCall], rnas: list[RNACall],
                    min_overlap: int = CDS_RNA_OVERLAP) -> list[GeneCall]:
    """The CDS calls that overlap no RNA gene (either strand) by ``min_overlap`` bases or more."""
    by_contig: dict[str, list[tuple[int, int]]] = {}
    for r in rnas:
        by_contig.setdefault(r.contig, []).append((r.start, r.end))
    keep = []
    for g in genes:
        spans = by_contig.get(g.contig, ())
        if not any(min(g.end, e) - max(g.start, s) >= min_overlap for s, e in spans):
            keep.append(g)
    return keep
