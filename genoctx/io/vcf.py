"""VCF/BCF reading (pysam.VariantFile): one :class:`Variant` per ALT allele, REF checked.

Positions: a VCF's 1-based POS becomes the 0-based ``Variant.pos`` (pysam's ``record.start``,
the only conversion); ``[pos, pos + len(ref))`` is the REF span, 0-based half-open.

:func:`iter_variants` streams the file and never stops on a bad record:

* multi-allelic records are split into one Variant per ALT (``allele_index`` 1, 2, ...), and
  counted once in ``VariantStats.multiallelic``;
* symbolic ALTs (``<DEL>``, ``<*>``, ``<NON_REF>``), breakends (mated ``N[chr:1[``, single
  ``N.`` or ``.N``) and the spanning deletion ``*`` are skipped and counted in ``symbolic``;
  an ALT with a base other than A, C, G or T (``N``, IUPAC codes such as ``R``) has no one
  sequence to score and is skipped and counted in ``ambiguous``; so is every ALT of a REF
  with such a base (a REF of ``N`` at a reference ``N``), counted in ``ambiguous_ref``;
  records without ALT are counted in ``no_alt``;
* with a reference FASTA, REF is compared with the reference bases, ignoring case: a mismatch
  (or a REF running off the contig) sets ``ref_ok=False`` and counts in ``ref_mismatch``; a
  contig missing from the FASTA sets ``ref_ok=False`` and counts in ``unknown_contig``. Without
  a FASTA nothing is checked and ``ref_ok`` is True.

A file pysam/htslib cannot parse raises :class:`~genoctx.errors.InputError`.
"""

from __future__ import annotations

import contextlib
import gzip
import itertools
import zlib
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path

import pysam

from genoctx.errors import InputError
from genoctx.io.bam import open_reference
from genoctx.io.fasta import FORMAT_NAMES, FastaFile, sniff_format
from genoctx.io.hts import quiet_htslib


@dataclass(frozen=True)
class Variant:
    """One ALT allele of a VCF record; ``pos`` is 0-based, REF spans ``[pos, pos + len(ref))``."""

    contig: str
    pos: int
    ref: str
    alt: str
    id: str | None
    qual: float | None
    filters: tuple[str, ...]
    record_index: int   # 0-based index of the record in the file
    allele_index: int   # 1-based index of this ALT in the record
    ref_ok: bool

    @property
    def end(self) -> int:
        """0-based exclusive end of the REF allele."""
        return self.pos + len(self.ref)

    @property
    def is_snv(self) -> bool:
        return len(self.ref) == 1 and len(self.alt) == 1


@dataclass
class VariantStats:
    """Counters filled while :func:`iter_variants` streams a file."""

    records: int = 0          # records read
    variants: int = 0         # Variants yielded
    multiallelic: int = 0     # records with more than one ALT
    symbolic: int = 0         # ALT alleles skipped as symbolic / '*'
    ambiguous: int = 0        # ALT alleles skipped for a base other than A/C/G/T (N, IUPAC)
    ambiguous_ref: int = 0    # ALT alleles skipped for such a base in their REF
    no_alt: int = 0           # records without any ALT allele
    ref_mismatch: int = 0     # records whose REF differs from the reference (or runs off it)
    unknown_contig: int = 0   # records on a contig missing from the reference

    def as_dict(self) -> dict:
        return asdict(self)


@dataclass
class RecordOrder:
    """Whether records come in the order an index needs (htslib: each contig's records
    together, each POS at least the one before), told one record at a time, and how far they
    reach (a record ending past 2^29 needs a ``.csi``; a ``.tbi`` cannot hold it)."""

    max_end: int = 0  # 0-based exclusive end of the furthest record (INFO/END counted)
    problem: str | None = None  # the first record out of order, described
    _contig: str | None = None
    _start: int = -1
    _done: set[str] = field(default_factory=set)

    def add(self, contig: str, start: int, end: int) -> str | None:
        """The next record (0-based ``start``, exclusive ``end``); returns why it is out of
        order, or None."""
        why = None
        if contig != self._contig:
            if contig in self._done:  # a contig met again after another one
                why = (f"records of {contig} are not contiguous (again at position "
                       f"{start + 1})")
            if self._contig is not None:
                self._done.add(self._contig)
            self._contig, self._start = contig, -1
        if start < self._start:
            why = f"{contig}:{start + 1} comes after position {self._start + 1}"
        self._start = start
        self.max_end = max(self.max_end, end)
        if why and self.problem is None:
            self.problem = why
        return why


def _is_symbolic(alt: str) -> bool:
    """Whether an ALT names no sequence to put in place of REF: a symbolic allele (``<DEL>``,
    ``<*>``, a contig insertion ``C<ctg1>``), the spanning deletion ``*``, a mated breakend
    (``G[chr2:100[``, ``]chr2:100]G``) or a single breakend (``G.``, ``.G``: VCF 4.3 5.4.9)."""
    return (alt in ("*", ".") or "<" in alt or "[" in alt or "]" in alt
            or alt.startswith(".") or alt.endswith("."))


_ACGT = frozenset("ACGT")


def _is_ambiguous(alt: str) -> bool:
    return not set(alt.upper()) <= _ACGT


def _open_variants(path: str | Path) -> pysam.VariantFile:
    path = Path(path)
    fmt, _ = sniff_format(path)  # missing / empty / directory raise InputError here
    if fmt not in ("vcf", "bcf"):
        raise InputError(f"{path} is not VCF or BCF (it looks like {FORMAT_NAMES[fmt]}); a VCF "
                         "starts with a '##fileformat=VCF' line")
    try:
        return pysam.VariantFile(str(path))
    except (ValueError, OSError) as exc:
        why = header_problem(path)
        if why:
            raise InputError(f"{path}: cannot read the VCF header ({why})") from None
        if starts_with_bom(path):
            raise InputError(f"{path} starts with a UTF-8 byte-order mark, which htslib cannot "
                             "read: remove it (sed -i '1s/^\\xEF\\xBB\\xBF//'; genoctx "
                             "score-variants reads such a file)") from None
        raise InputError(f"{path}: cannot read the VCF header ({exc})") from None


def _open_bytes(path: Path):
    """A text VCF's bytes, gzip or bgzip decompressed (lines end at ``\n`` only)."""
    with open(path, "rb") as probe:
        gz = probe.read(2) == b"\x1f\x8b"
    return gzip.open(path, "rb") if gz else open(path, "rb")


def header_problem(path: Path) -> str | None:
    """Why htslib cannot read a text VCF's header, in words, where its own message would not
    say: ``\r\r\n`` line ends (a CRLF file converted once more); else None."""
    try:
        with _open_bytes(path) as fh:
            first = fh.readline(1 << 16)
    except (OSError, EOFError):
        return None
    if first.endswith(b"\r\r\n"):
        return _CRCR
    return None


_CRCR = ("its lines end in two carriage returns and a newline (\\r\\r\\n): fix the line "
         "endings, e.g. with tr -d '\\r'")


def starts_with_bom(path: Path) -> bool:
    """Whether a text VCF (plain, gzip or bgzip) starts with a UTF-8 byte-order mark."""
    from genoctx.io.fasta import UTF8_BOM

    try:
        with _open_bytes(path) as fh:
            return fh.read(len(UTF8_BOM)) == UTF8_BOM
    except (OSError, EOFError, zlib.error):
        return False


@contextlib.contextmanager
def _reference(fasta: FastaFile | str | Path | None):
    if fasta is None or isinstance(fasta, FastaFile):
        yield fasta
        return
    with open_reference(fasta) as fa:
        yield fa


def _check_ref(fa: FastaFile | None, contig: str, start: int, ref: str,
               stats: VariantStats) -> bool:
    if fa is None:
        return True
    size = fa.lengths.get(contig)
    if size is None:
        stats.unknown_contig += 1
        return False
    # POS 0 (VCF's telomere) lies before the sequence: its REF cannot agree with it
    if start < 0 or start + len(ref) > size or fa.fetch(
            contig, start, start + len(ref)).upper() != ref.upper().encode():
        stats.ref_mismatch += 1
        return False
    return True


def _what_is_wrong(path: Path, number: int) -> str | None:
    """What is wrong with the 0-based ``number``-th record of a text VCF (plain or gzip), in
    words, where htslib's own message ("truncated file" for a POS that is not a number) would
    mislead; None where it cannot tell (BCF, a standard-input copy gone, a fine-looking line)."""
    try:
        with _open_bytes(path) as fh:  # lines end at \n only
            lines = (ln for ln in fh if ln.strip() and not ln.startswith(b"#"))
            raw = next(itertools.islice(lines, number, None), None)
    except (OSError, EOFError, gzip.BadGzipFile):
        return None
    if raw is None:
        return None
    line = raw.decode("utf-8", "replace")
    if line.endswith(("\r\r\n", "\r\r")):
        return _CRCR
    cols = line.rstrip("\r\n").split("\t")
    if len(cols) < 8:
        return (f"{len(cols)} tab-separated column(s), a VCF record needs at least 8"
                + ("; the line holds spaces: are the columns separated by spaces?"
                   if " " in line.strip() else ""))
    if not cols[1].isdigit():
        return f"POS {cols[1][:20]!r} is not a whole number"
    return None


def _records(vf: pysam.VariantFile, path: Path) -> Iterator:
    """The records of an open file; htslib parse errors become InputError."""
    it = iter(vf)
    number = 0
    while True:
        try:
            rec = next(it)
        except StopIteration:
            return
        except (ValueError, OSError) as exc:
            why = _what_is_wrong(path, number) or f"htslib: {exc}"
            raise InputError(f"{path}: record {number + 1} is malformed ({why}); check its "
                             "columns (CHROM POS ID REF ALT QUAL FILTER INFO)") from None
        number += 1
        yield rec


def iter_variants(vcf_path: str | Path, fasta: FastaFile | str | Path | None = None, *,
                  stats: VariantStats | None = None) -> Iterator[Variant]:
    """Stream the variants of a VCF/BCF (plain, bgzip or BCF), one per ALT allele.

    Args:
        vcf_path: the VCF/BCF file.
        fasta: reference to check REF against (a :class:`FastaFile` or a path), or None.
        stats: a :class:`VariantStats` to fill as the file is read (optional).

    Yields:
        :class:`Variant` objects in file order.

    Raises:
        InputError: the file is missing, not VCF/BCF, or cannot be parsed.
    """
    stats = stats if stats is not None else VariantStats()
    path = Path(vcf_path)
    with quiet_htslib(), _open_variants(path) as vf, _reference(fasta) as fa:
        for index, rec in enumerate(_records(vf, path)):
            stats.records += 1
            alts = rec.alts or ()
            if not alts:
                stats.no_alt += 1
                continue
            if len(alts) > 1:
                stats.multiallelic += 1
            ref_ok = _check_ref(fa, rec.chrom, rec.start, rec.ref, stats)
            # a REF of N matches a reference N, but gives no one sequence to score (a REF
            # that differs from the reference is yielded with ref_ok False, as any other)
            ref_ambiguous = ref_ok and _is_ambiguous(rec.ref)
            filters = tuple(rec.filter.keys())
            for allele_index, alt in enumerate(alts, 1):
                if _is_symbolic(alt):
                    stats.symbolic += 1
                    continue
                if ref_ambiguous:
                    stats.ambiguous_ref += 1
                    continue
                if _is_ambiguous(alt):
                    stats.ambiguous += 1
                    continue
                stats.variants += 1
                yield Variant(contig=rec.chrom, pos=rec.start, ref=rec.ref, alt=alt,
                              id=rec.id, qual=rec.qual, filters=filters, record_index=index,
                              allele_index=allele_index, ref_ok=ref_ok)


def vcf_info(path: str | Path) -> dict:
    """Header contigs (name → length or None), samples, record count, format and index."""
    path = Path(path)
    with quiet_htslib(), _open_variants(path) as vf:
        contigs = {name: vf.header.contigs[name].length for name in vf.header.contigs}
        samples = list(vf.header.samples)
        fmt = "BCF" if vf.is_bcf else "VCF"
        compressed = vf.compression != "NONE"
        n = sum(1 for _ in _records(vf, path))
        indexed = Path(f"{path}.tbi").is_file() or Path(f"{path}.csi").is_file()
    return {"path": str(path), "format": fmt, "compressed": compressed, "contigs": contigs,
            "samples": samples, "records": n, "indexed": indexed}


@contextlib.contextmanager
def data_lines(vcf_path: str | Path) -> Iterator[Iterator[str]]:
    """The data lines of a text VCF (plain, gzip or bgzip) as written, in record order, without
    their line ends; nothing for BCF. Writing a record from its own line keeps every value as
    the input had it: htslib's text (``str(record)``) rounds floats to six significant digits
    and blanks values that do not parse. Empty lines are skipped, as htslib cannot read them."""
    vcf_path = Path(vcf_path)
    fmt, compression = sniff_format(vcf_path)
    if fmt != "vcf" or compression not in ("none", "gzip", "bgzf"):
        yield iter(())
        return
    opener = gzip.open if compression != "none" else open
    # lines end at \n only, as htslib reads them: a lone \r inside a line (a stray carriage
    # return in a text value) is part of it; a CRLF line end is dropped with the \n
    with opener(vcf_path, "rb") as fh:
        lines = (ln.rstrip(b"\r\n").decode("utf-8", "surrogateescape") for ln in fh)
        yield (ln for ln in lines if ln.strip() and not ln.lstrip("\ufeff").startswith("#"))


def record_text(rec, raw: Iterator[str]) -> str:
    """``rec``'s data line, without its line end: the next line of ``raw``
    (:func:`data_lines`, read in step with the records) when it is this record's, else
    htslib's text (BCF input)."""
    line = next(raw, None)
    cols = line.split("\t", 5) if line is not None else []
    # the line must be this record's: CHROM, POS, REF and ALT as htslib read them
    if len(cols) < 5 or (cols[0], cols[1], cols[3], cols[4]) != (
            rec.chrom, str(rec.pos), rec.ref, ",".join(rec.alts or ".")):
        line = str(rec).rstrip("\n")
    return line
