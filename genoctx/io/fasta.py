"""FASTA reading: random access through a faidx index, or streaming, with strict checks.

Plain, gzip, bgzip, xz and bzip2 files are read; CRLF line ends and lowercase soft-masking are
kept as they are (bytes come back with their case; :mod:`genoctx.tokenize.nucleotide` turns
lowercase into a mask). Every input is sniffed from its content first, so a BAM, GenBank or
empty file given as FASTA fails with one clear line instead of a pysam/htslib message.

Random access (:class:`FastaFile`) has three modes:

- ``indexed``: a plain file with a ``.fai`` (built with ``samtools faidx`` via pysam when it is
  missing and the folder is writable). Bytes are read with ``pread`` and the fai's fixed line
  layout, which is faster than ``pysam.FastaFile.fetch`` and returns bytes, not ``str``.
- ``bgzf``: a bgzip file with ``.fai`` + ``.gzi``, read through ``pysam.FastaFile``.
- ``memory``: everything else (plain gzip, xz, a read-only folder without an index, lines of
  uneven width that faidx refuses) is streamed into memory once.

htslib's faidx silently keeps the first of two records with the same name and drops empty
records, so an index is only trusted after it is checked against the file. A freshly built
index (faidx has just read the whole file anyway) is compared record by record (names and
lengths) with one streaming parse, which also rejects bytes that are not sequence letters.
An existing index older than its file is stale. One that is not (copies keep old dates) is
checked by a few short reads per record: every header must sit exactly where the fai says the
previous record ends, and line ends must sit where its line layout puts them after the first, a
middle and the last lines (a file rewrapped to the same size fails here). A bgzip file's
headers and line ends are read the same way through its ``.gzi``, whose blocks are checked as
they are read. A file that fails a check is indexed again (where its folder is writable) or
streamed into memory instead, and the streaming parser raises the real error (duplicate
names, say).
"""

from __future__ import annotations

import bz2
import contextlib
import gzip
import io
import lzma
import mmap
import os
import re
import secrets
import stat
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Self

import numpy as np

from genoctx.errors import InputError, RegionError
from genoctx.io.regions import Region, parse_region

_CHUNK = 1 << 22
_BGZF_EOF = bytes.fromhex("1f8b08040000000000ff0600424302001b0003000000000000000000")
_DECOMPRESS_ERRORS = (EOFError, zlib.error, gzip.BadGzipFile, lzma.LZMAError, OSError)

# What a file looks like, for error messages and `genoctx info`.
FORMAT_NAMES = {
    "fasta": "FASTA", "genbank": "GenBank", "embl": "EMBL", "bam": "BAM", "cram": "CRAM",
    "sam": "SAM", "vcf": "VCF", "bcf": "BCF", "fastq": "FASTQ", "gff": "GFF",
    "binary": "a binary file", "empty": "an empty file", "unknown": "an unrecognised text file",
}
_FASTA_HINTS = {
    "genbank": "convert it to FASTA first (e.g. Bio.SeqIO.convert(path, 'genbank', out, 'fasta'))",
    "embl": "convert it to FASTA first (e.g. Bio.SeqIO.convert(path, 'embl', out, 'fasta'))",
    "bam": "alignments are read with `genoctx tokenize --kind pileup --reference REF.fa`",
    "cram": "alignments are read with `genoctx tokenize --kind pileup --reference REF.fa`",
    "sam": "alignments are read with `genoctx tokenize --kind pileup --reference REF.fa` "
           "from a sorted, indexed BAM (samtools sort -o x.bam FILE && samtools index x.bam)",
    "fastq": "reads are not a reference; give the FASTA they were aligned to",
}


# --------------------------------------------------------------------------- sniffing

def _compression(raw: bytes) -> str:
    if raw[:2] == b"\x1f\x8b":
        bgzf = len(raw) >= 16 and raw[3] & 4 and raw[12:14] == b"BC"
        return "bgzf" if bgzf else "gzip"
    if raw[:6] == b"\xfd7zXZ\x00":
        return "xz"
    if raw[:3] == b"BZh":
        return "bz2"
    if raw[:4] == b"\x28\xb5\x2f\xfd":
        return "zstd"
    return "none"


def _peek(raw: bytes, compression: str, path: Path) -> bytes:
    """The first (up to 64 KiB of) decompressed bytes. ``raw`` is the file's first 64 KiB;
    when they decompress to nothing (a bzip2 block is up to 900 kB; a gzip file may start with
    an empty member) the file is read on, until there are bytes to look at or it ends."""
    if compression == "none":
        return raw
    opener = {"gzip": gzip.open, "bgzf": gzip.open, "xz": lzma.open, "bz2": bz2.open}[compression]
    try:
        if compression in ("gzip", "bgzf"):
            head = zlib.decompressobj(wbits=31).decompress(raw, 1 << 16)
        elif compression == "xz":
            head = lzma.LZMADecompressor().decompress(raw, max_length=1 << 16)
        else:
            head = bz2.BZ2Decompressor().decompress(raw, max_length=1 << 16)
        if not head.strip():
            with opener(path, "rb") as fh:  # the stream reader crosses blocks and members
                head = fh.read(1 << 16)
    except (zlib.error, lzma.LZMAError, OSError, EOFError) as exc:
        raise InputError(f"{path}: corrupt {compression} data ({exc})") from None
    return head


UTF8_BOM = b"\xef\xbb\xbf"


def _content_format(head: bytes) -> str:
    if head.startswith(b"BAM\x01"):
        return "bam"
    if head.startswith((b"BCF\x02", b"BCF\x04")):
        return "bcf"
    if head.startswith(b"CRAM"):
        return "cram"
    text = head.removeprefix(UTF8_BOM).lstrip(b" \t\r\n")  # a text editor's BOM: what follows
    if not text:
        return "empty"
    if b"\x00" in text[:4096]:
        return "binary"
    for prefix, fmt in ((b">", "fasta"), (b"LOCUS", "genbank"), (b"ID   ", "embl"),
                        (b"##fileformat=VCF", "vcf"), (b"##gff-version", "gff")):
        if text.startswith(prefix):
            return fmt
    if text[:4] in (b"@HD\t", b"@SQ\t", b"@RG\t", b"@PG\t", b"@CO\t"):
        return "sam"
    if text.startswith(b"@"):
        return "fastq"
    return "unknown"


def sniff_format(path: str | Path) -> tuple[str, str]:
    """Detect a file's format and compression from its content (magic bytes), not its name.

    Returns:
        ``(format, compression)``: format is one of ``fasta genbank embl bam cram sam vcf bcf
        fastq gff binary unknown``; compression one of ``none gzip bgzf xz bz2 zstd``.

    Raises:
        InputError: the file is missing, a directory, empty, or its compression is corrupt.
    """
    fmt, compression, _ = _sniff(Path(path))
    return fmt, compression


def _sniff(path: Path) -> tuple[str, str, bytes]:
    """:func:`sniff_format`, and the first (up to 64 KiB of) decompressed bytes it read."""
    if not path.exists():
        raise InputError(f"{path} does not exist")
    if path.is_dir():
        raise InputError(f"{path} is a directory, not a file")
    with open(path, "rb") as fh:
        raw = fh.read(1 << 16)
    if not raw:
        raise InputError(f"{path} is empty")
    compression = _compression(raw)
    if compression == "zstd":
        return "unknown", compression, b""
    if compression == "none" and raw.startswith(b"CRAM"):
        return "cram", compression, raw
    head = _peek(raw, compression, path)
    return _content_format(head), compression, head


def _require_fasta(path: Path) -> str:
    """The compression of ``path``; InputError when it is not FASTA."""
    fmt, compression, head = _sniff(Path(path))
    if compression == "zstd":
        raise InputError(f"{path} is zstd-compressed; decompress it or recompress with bgzip")
    if fmt == "empty":
        raise InputError(f"{path} holds no FASTA records (only blank lines)")
    if fmt != "fasta":
        hint = _FASTA_HINTS.get(fmt, "a FASTA file starts with a '>name' header line")
        raise InputError(f"{path} is not FASTA (it looks like {FORMAT_NAMES[fmt]}); {hint}")
    if head.startswith(UTF8_BOM):
        fix = f"sed -i '1s/^\\xEF\\xBB\\xBF//' {path.name}"
        raise InputError(f"{path} starts with a UTF-8 byte-order mark (a Windows editor's) "
                         "before its first '>', which FASTA indexes (samtools faidx) do not "
                         "take; remove it: " + (fix if compression == "none" else
                                                 "decompress it, then " + fix[:-len(path.name)]
                                                 + "FILE"))
    first_line = head.split(b"\n", 1)[0]
    if b"\r" in first_line.rstrip(b"\r"):  # lines end in CR alone: one endless header line
        how = {"none": f"tr '\\r' '\\n' < {path.name} > fixed.fa",
               "gzip": f"gzip -dc {path.name} | tr '\\r' '\\n' > fixed.fa"}
        raise InputError(f"{path}: its lines end in a carriage return alone (classic Mac OS), "
                         "so it reads as one header line; convert it first: "
                         + how.get("gzip" if compression == "bgzf" else compression,
                                   "decompress it, then tr '\\r' '\\n' < it > fixed.fa"))
    return compression


def open_text(path: str | Path, errors: str = "replace") -> io.TextIOBase:
    """``path`` as UTF-8 text (bad bytes replaced, or as ``errors`` says), decompressed by its
    content: plain, gzip, bgzip, xz or bzip2, as the FASTA readers take them; InputError for
    zstd."""
    path = Path(path)
    with open(path, "rb") as fh:
        compression = _compression(fh.read(1 << 16))
    if compression == "zstd":
        raise InputError(f"{path} is zstd-compressed; decompress it (zstd -d) or recompress "
                         "it with gzip")
    return io.TextIOWrapper(_open_stream(path, compression), encoding="utf-8", errors=errors)


def _open_stream(path: Path, compression: str):
    if compression in ("gzip", "bgzf"):
        return gzip.open(path, "rb")
    if compression == "xz":
        return lzma.open(path, "rb")
    if compression == "bz2":
        return bz2.open(path, "rb")
    return open(path, "rb")


_CIRCULAR_TAG = re.compile(rb"(?:^|\s)circular=(?:true|yes)\b|\[topology=circular\]", re.IGNORECASE)


def circular_headers(path: str | Path, block: int = 1 << 22) -> list[str]:
    """Names of the records whose FASTA header says they are circular: Unicycler's
    ``circular=true`` or NCBI's ``[topology=circular]`` (``genoctx annotate`` points to
    ``--circular`` for them). Reads the file once, in blocks, looking only at header lines."""
    path = Path(path)
    out, tail = [], b""
    with _open_stream(path, _require_fasta(path)) as fh:
        while True:
            chunk = fh.read(block)
            data = tail + chunk
            # headers wholly inside data: a '>' at a line start up to its line end
            end = len(data) if not chunk else data.rfind(b"\n") + 1
            for m in re.finditer(rb"(?m)^>([^\n]*)", data[:end]):
                head = m.group(1).rstrip(b"\r")
                fields = head.split(None, 1)
                if len(fields) == 2 and _CIRCULAR_TAG.search(fields[1]):
                    out.append(fields[0].decode("utf-8", errors="replace"))
            tail = data[end:]
            if not chunk:
                return out


# --------------------------------------------------------------------------- streaming

_SEQUENCE_LETTERS = np.zeros(256, bool)  # what a sequence holds: letters, gaps, stops
_SEQUENCE_LETTERS[list(b"-*." + bytes(range(65, 91)) + bytes(range(97, 123)))] = True
_SEQUENCE_BYTES = _SEQUENCE_LETTERS.copy()  # and its lines: blanks and line ends, dropped
_SEQUENCE_BYTES[list(b" \t\v\f\r\n")] = True


def _first_non_letter(bases: np.ndarray) -> int | None:
    """Index of the first byte of ``bases`` (uint8) that is no sequence letter, else None;
    letters pass with one vector test, the rest is looked at only when there is any."""
    odd = ((bases | 0x20) - 0x61) > 25  # not a letter (uint8 wraps below 'a')
    if not odd.any() or not bytes(bases[odd]).translate(None, b"-*."):
        return None
    return int(np.flatnonzero(~_SEQUENCE_LETTERS[bases])[0])


def _show_byte(byte: int) -> str:
    """A byte as an error message names it."""
    names = {0x20: "a blank", 0x09: "a tab", 0x0D: "a carriage return", 0x0A: "a line end",
             0x00: "a NUL byte"}
    if byte in names:
        return names[byte]
    if 0x20 < byte < 0x7F:
        return f"'{chr(byte)}'"
    return f"the byte 0x{byte:02X} ({'not ASCII' if byte > 0x7F else 'a control character'})"


def _not_a_letter(path: Path, name: str, byte: int, line: int, column: int,
                  base: int) -> InputError:
    """The error for a byte in a sequence line that is no sequence letter."""
    hint = ("; a '>' begins a header only at the start of a line" if byte == 0x3E else "")
    return InputError(f"{path}, line {line:,}, column {column:,}: record '{name}' holds "
                      f"{_show_byte(byte)} at base {base:,}, which is not a sequence letter"
                      f"{hint}; correct or remove it (sequence lines hold letters, '-', '*' "
                      "and '.')")


def _clean_sequence(raw: bytes, name: str, path: Path, line: int) -> tuple[bytes, bool, int]:
    """Drop line ends (and stray blanks) from a record's body; refuse non-sequence bytes.

    Args:
        raw: The body, from the line after the header to the next header.
        line: The line number of its first line in the file (for the error message).

    Returns:
        The sequence, whether blanks were dropped (faidx miscounts such lines), and the number
        of line ends in ``raw``.
    """
    seq = raw.replace(b"\n", b"")
    newlines = len(raw) - len(seq)
    if b"\r" in seq:
        seq = seq.replace(b"\r", b"")
    x = np.frombuffer(seq, np.uint8)
    # Letters pass; anything else is looked at once more (gaps, stops, blanks).
    if not np.count_nonzero(((x | 0x20) - 0x61) > 25):
        return seq, False, newlines
    stripped = seq.translate(None, b" \t\v\f")
    if stripped.translate(None, b"-*." + bytes(range(65, 91)) + bytes(range(97, 123))):
        at = int(np.flatnonzero(~_SEQUENCE_BYTES[np.frombuffer(raw, np.uint8)])[0])
        line_start = raw.rfind(b"\n", 0, at) + 1
        base = len(raw[:at].translate(None, b" \t\v\f\r\n")) + 1
        raise _not_a_letter(path, name, raw[at], line + raw.count(b"\n", 0, at),
                            at - line_start + 1, base)
    return stripped, len(stripped) != len(seq), newlines


def _header_name(line: bytes, path: Path, number: int) -> str:
    fields = line.rstrip(b"\r").split(None, 1)
    if not fields:
        raise InputError(f"{path}: record {number} has an empty name (a '>' line with nothing "
                         "after it)")
    return fields[0].decode("utf-8", errors="replace")


def _parse_stream(fh, path: Path) -> Iterator[tuple[str, tuple[bytes, bool]]]:
    """Records from a decompressed binary stream; lines of any length, no quadratic copies."""
    name, parts, header, at_line_start, count = None, [], None, True, 0
    line = 1  # the line where ``parts`` begin, for error messages
    while chunk := fh.read(_CHUNK):
        pos = 0
        while pos < len(chunk):
            if header is not None:  # inside a '>' line: read to its end
                nl = chunk.find(b"\n", pos)
                header += chunk[pos:] if nl < 0 else chunk[pos:nl]
                if nl < 0:
                    break
                if name is not None:
                    seq, blanks, newlines = _clean_sequence(b"".join(parts), name, path, line)
                    yield name, (seq, blanks)
                else:  # blank lines before the first header
                    newlines = sum(part.count(b"\n") for part in parts)
                line += newlines + 1
                count += 1
                name, parts, header = _header_name(header, path, count), [], None
                pos, at_line_start = nl + 1, True
                continue
            if at_line_start and chunk[pos] == 0x3E:  # '>'
                header, pos = b"", pos + 1
                continue
            nxt = chunk.find(b"\n>", pos)
            end = len(chunk) if nxt < 0 else nxt + 1
            body = chunk[pos:end]
            if name is None and body.strip():
                raise InputError(f"{path}: sequence before the first '>' header; not FASTA")
            parts.append(body)
            pos, at_line_start = end, chunk[end - 1] == 0x0A
    if header is not None:  # the file ends in a header line without a line end
        if name is not None:
            seq, blanks, newlines = _clean_sequence(b"".join(parts), name, path, line)
            yield name, (seq, blanks)
            line += newlines + 1
        count += 1
        name, parts = _header_name(header, path, count), []
    if name is not None:
        yield name, _clean_sequence(b"".join(parts), name, path, line)[:2]


def _iter_checked(path: Path, unique: bool = True) -> Iterator[tuple[str, bytes, bool]]:
    """Records with the blanks flag of :func:`_clean_sequence`; see :func:`iter_records`."""
    compression = _require_fasta(path)
    seen: set[str] = set()
    count = 0
    try:
        with _open_stream(path, compression) as fh:
            for name, (seq, blanks) in _parse_stream(fh, path):
                if unique:
                    if name in seen:
                        raise InputError(f"{path}: duplicate record name '{name}'; record "
                                         "names must be unique")
                    seen.add(name)
                count += 1
                yield name, seq, blanks
    except _DECOMPRESS_ERRORS as exc:
        if isinstance(exc, (FileNotFoundError, PermissionError)):
            raise
        raise InputError(f"{path}: the {compression} stream is truncated or corrupt ({exc}); "
                         "re-download or re-compress it") from None
    if not count:
        raise InputError(f"{path} holds no FASTA records")


def iter_records(path: str | Path, *, unique: bool = True) -> Iterator[tuple[str, bytes]]:
    """Stream ``(name, sequence)`` from a FASTA file: plain, gzip, bgzip, xz or bzip2.

    Names are the first word of each header; sequences are raw bytes with line ends removed and
    case kept. One record is held in memory at a time.

    Args:
        path: The FASTA file.
        unique: Refuse duplicate names (the default). Sequence collections whose headers are
            free text (e.g. the promoter sets) repeat first words; pass False to read them.

    Raises:
        InputError: not FASTA, truncated/corrupt compression, no records, duplicate names
            (when ``unique``), non-sequence bytes in a record.
    """
    for name, seq, _ in _iter_checked(Path(path), unique):
        yield name, seq


def sequence_stats(seq: bytes) -> dict:
    """Composition of one sequence: length, non-ACGT count, soft-masked count, GC fraction.

    ``n_count`` counts every byte that is not A/C/G/T (or U, RNA's T) in either case (N and
    IUPAC codes); ``iupac`` those of them that are not N either (R, Y, ... and other letters
    such as X); ``softmasked`` counts lowercase letters; ``gc`` is (G+C)/(A+C+G+T+U), ignoring
    N, or None when there are no A/C/G/T/U bases.
    """
    x = np.frombuffer(seq, np.uint8)
    upper = x & 0xDF
    at = sum(np.count_nonzero(upper == b) for b in b"ATU")
    gc = np.count_nonzero(upper == 0x43) + np.count_nonzero(upper == 0x47)
    n = np.count_nonzero(upper == 0x4E)
    soft = np.count_nonzero((x - 0x61) < 26)
    return {"length": len(seq), "n_count": int(len(seq) - at - gc),
            "iupac": int(len(seq) - at - gc - n), "softmasked": int(soft),
            "gc": (gc / (at + gc)) if at + gc else None}


# Letters that are no nucleotide code (IUPAC has A C G T U R Y K M S W B D H V N) but are amino
# acids; X, gaps and stops are left out, since masked or aligned DNA may hold them.
_AMINO_ONLY = b"EFIJLOPQZefijlopqz"
PROTEIN_SHARE = 0.05


# IUPAC nucleotide codes and their complements, both cases (S, W and N are their own)
_IUPAC = "ACGTURYKMBDHVNSW"
_IUPAC_COMPLEMENT = "TGCAAYRMKVHDBNSW"
_COMPLEMENT_STR = str.maketrans(_IUPAC + _IUPAC.lower(),
                                _IUPAC_COMPLEMENT + _IUPAC_COMPLEMENT.lower())
_COMPLEMENT_BYTES = bytes.maketrans((_IUPAC + _IUPAC.lower()).encode(),
                                    (_IUPAC_COMPLEMENT + _IUPAC_COMPLEMENT.lower()).encode())


def reverse_complement(seq: str | bytes) -> str | bytes:
    """The reverse complement of a nucleotide sequence, of the same type (str or bytes).

    IUPAC codes are complemented (R/Y, K/M, B/V, D/H swap; S, W and N stay; U reads as T's
    partner A), case is kept, and anything else (a gap, ``*``) stays as it is.

    >>> reverse_complement("ACGTNr"), reverse_complement(b"aaRT")
    ('yNACGT', b'AYtt')
    """
    if isinstance(seq, str):
        return seq.translate(_COMPLEMENT_STR)[::-1]
    return bytes(seq).translate(_COMPLEMENT_BYTES)[::-1]


def check_nucleotide(name: str, seq: bytes, source: str | Path) -> None:
    """Refuse a record that reads as protein rather than DNA.

    A record is refused when at least :data:`PROTEIN_SHARE` of its letters are amino-acid
    letters that no nucleotide code uses (E, F, I, J, L, O, P, Q, Z). Rarer strays are left to
    the callers, which read every letter other than A/C/G/T as N.

    Raises:
        InputError: naming the record and the letters found.
    """
    why = protein_evidence(seq)
    if why:
        raise InputError(f"{source}: record '{name}' looks like a protein sequence ({why}); "
                         "genoctx reads DNA FASTA")


def protein_evidence(seq: bytes) -> str | None:
    """Why ``seq`` reads as protein (``"140 of 200 letters are amino-acid codes such as E,
    F"``: at least :data:`PROTEIN_SHARE` of its letters are ones no nucleotide code uses), or
    None."""
    if not seq:
        return None
    rest = seq.translate(None, _AMINO_ONLY)
    if len(seq) - len(rest) < PROTEIN_SHARE * len(seq):
        return None
    found = sorted({chr(b).upper() for b in set(seq) if b in _AMINO_ONLY})
    return (f"{len(seq) - len(rest)} of {len(seq)} letters are amino-acid codes such as "
            f"{', '.join(found[:5])}")


def fasta_info(path: str | Path, *, unique: bool = True) -> list[dict]:
    """Per-record composition of a FASTA file (streamed).

    Args:
        path: The FASTA file.
        unique: Refuse duplicate record names (see :func:`iter_records`).

    Returns:
        One dict per record, in file order: ``name``, ``length``, ``n_count`` (N and IUPAC
        codes), ``softmasked`` (lowercase bases), ``gc`` (see :func:`sequence_stats`).
    """
    return [{"name": name, **sequence_stats(seq)}
            for name, seq in iter_records(path, unique=unique)]


# --------------------------------------------------------------------------- faidx index

@dataclass(frozen=True)
class _FaiEntry:
    name: str
    length: int
    offset: int
    linebases: int
    linewidth: int

    def lines(self, start: int, end: int) -> tuple[int, int]:
        """File offsets ``[a, b)`` of the whole lines that hold bases ``[start, end)``."""
        line0, line1 = start // self.linebases, (end - 1) // self.linebases + 1
        return self.offset + line0 * self.linewidth, self.offset + line1 * self.linewidth

    def bases_in(self, buf, start: int, end: int) -> np.ndarray:
        """Bases ``[start, end)`` out of ``buf``, the bytes of :meth:`lines` (a short last line
        padded to the full width): line ends dropped by one reshape, a view of ``buf`` where
        the bases lie within one line."""
        lb, lw = self.linebases, self.linewidth
        line0 = start // lb
        rows = np.frombuffer(buf, np.uint8).reshape(-1, lw)[:, :lb]
        return rows.reshape(-1)[start - line0 * lb:end - line0 * lb]

    def data_end(self) -> int:
        """File offset one past the record's last line end."""
        full, rest = divmod(self.length, self.linebases)
        return self.offset + full * self.linewidth + (rest + self.linewidth - self.linebases
                                                      if rest else 0)


def _read_fai(fai: Path) -> list[_FaiEntry] | None:
    entries = []
    try:
        for line in fai.read_text().splitlines():
            f = line.split("\t")
            name, (length, offset, lb, lw) = f[0], map(int, f[1:5])
            if length < 1 or lb < 1 or lw - lb not in (1, 2) or offset < 0:
                return None
            entries.append(_FaiEntry(name, length, offset, lb, lw))
    except (OSError, ValueError, UnicodeDecodeError):
        return None
    return entries or None


def _plain_index_consistent(path: Path, entries: list[_FaiEntry]) -> bool:
    """Every header sits exactly where the previous record ends, nothing follows the last, and
    each record's lines end where the fai's line layout says (see :func:`_lines_consistent`).

    A few short reads per record; catches stale indexes (a file rewrapped to the same size
    included), duplicate names and empty records that faidx dropped, and text between records.
    """
    with open(path, "rb") as fh, mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) as mm:
        return _layout_consistent(lambda a, b: mm[a:b], len(mm), entries)


def _bgzf_index_consistent(path: Path, entries: list[_FaiEntry]) -> bool:
    """:func:`_plain_index_consistent` for a bgzip file, reading its uncompressed bytes through
    its ``.gzi`` (a short read per record, one or two blocks of at most 64 kB each); False
    when the ``.gzi`` does not lead to readable blocks either."""
    try:
        with _BgzfReader(path, Path(f"{path}.gzi")) as reader:
            return _layout_consistent(reader.read, reader.size(), entries)
    except (OSError, ValueError, EOFError, zlib.error):
        return False


def _layout_consistent(read: Callable[[int, int], bytes], size: int,
                       entries: list[_FaiEntry]) -> bool:
    pos = 0
    for e in sorted(entries, key=lambda e: e.offset):
        gap = e.offset - pos
        if not 0 < gap <= 1 << 16:
            return False
        head = read(pos, e.offset).lstrip(b"\r\n")
        if head.count(b"\n") != 1 or not head.endswith(b"\n") or not head.startswith(b">"):
            return False
        words = head[1:].split(None, 1)
        if not words or words[0].decode("utf-8", "replace") != e.name:
            return False
        if not _lines_consistent(read, size, e):
            return False
        pos = e.data_end()
        if pos - (e.linewidth - e.linebases) > size:
            return False
    return pos >= size or not read(pos, pos + (1 << 12)).strip()


def _lines_consistent(read: Callable[[int, int], bytes], size: int, e: _FaiEntry) -> bool:
    """The line ends the fai's layout puts in record ``e`` are there: after its first line,
    a middle line and the last full line (so the last line starts where the fai says), and
    after its last line (or the file ends there). A file rewrapped to other widths, or with
    lines of uneven width, fails here; four reads of one or two bytes, whatever the length."""
    newline = b"\n" if e.linewidth - e.linebases == 1 else b"\r\n"
    lines = -(-e.length // e.linebases)
    if lines > 1:
        for i in (0, (lines - 1) // 2, lines - 2):
            at = e.offset + i * e.linewidth + e.linebases
            if read(at, at + len(newline)) != newline:
                return False
    at = e.offset + (lines - 1) * e.linewidth + e.length - (lines - 1) * e.linebases
    tail = read(at, at + len(newline))
    return tail == newline or (at + len(tail) >= size and newline.startswith(tail))


class _BgzfReader:
    """Uncompressed bytes ``[a, b)`` of a bgzip file, found through its ``.gzi`` (htslib's
    layout: a little-endian uint64 count, then (compressed, uncompressed) offset pairs of the
    non-empty blocks after the first).

    The ``.gzi`` is checked as it is used, so that one made for another file (which htslib
    follows into an error, or into another file's offsets) raises ValueError instead: its
    offsets must increase and lie inside the file, every block read must start at its offset
    and hold as many bytes as the next offset says, and only empty blocks (the end-of-file
    marker) may follow the last indexed one.
    """

    def __init__(self, path: Path, gzi: Path):
        raw = gzi.read_bytes()
        if len(raw) < 8:
            raise ValueError("short .gzi")
        (n,) = np.frombuffer(raw[:8], "<u8")
        if len(raw) != 8 + 16 * int(n):
            raise ValueError("the .gzi's length does not match its count")
        pairs = np.frombuffer(raw[8:], "<u8").reshape(-1, 2).astype(np.int64)
        compressed = np.concatenate([[0], pairs[:, 0]])
        uncompressed = np.concatenate([[0], pairs[:, 1]])
        if (np.diff(compressed) <= 0).any() or (np.diff(uncompressed) < 0).any():
            raise ValueError("the .gzi's offsets do not increase")
        self._fh = open(path, "rb")  # noqa: SIM115 - closed by __exit__ or below
        try:
            if compressed[-1] >= os.fstat(self._fh.fileno()).st_size:
                raise ValueError("the .gzi points past the end of the file")
            self._compressed = compressed.tolist()
            self._uncompressed = uncompressed.tolist()
            self._cached: tuple[int, bytes, int] = (-1, b"", 0)  # (offset, block, next offset)
            self._size = self._uncompressed[-1] + len(self._block_at(self._compressed[-1])[0])
            self._fh.seek(self._block_at(self._compressed[-1])[1])
            while (block := self._next_block()) is not None:  # after the last indexed block
                if block:
                    raise ValueError("a block after the .gzi's last holds data")
        except BaseException:
            self._fh.close()
            raise

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc) -> None:
        self._fh.close()

    def _block_at(self, offset: int) -> tuple[bytes, int]:
        """The block at compressed ``offset`` and the offset of the next (records often share
        a block: the last one is kept)."""
        if self._cached[0] != offset:
            self._fh.seek(offset)
            block = self._next_block()
            if block is None:
                raise ValueError("the .gzi points at the end of the file")
            self._cached = (offset, block, self._fh.tell())
        return self._cached[1], self._cached[2]

    def _next_block(self) -> bytes | None:
        """The uncompressed bytes of the block at the file position (empty for the end-of-file
        marker); None at the end of the file."""
        head = self._fh.read(18)  # gzip header with BGZF's extra field: BSIZE at bytes 16-17
        if not head:
            return None
        if len(head) < 18 or head[:4] != b"\x1f\x8b\x08\x04" or head[12:14] != b"BC":
            raise ValueError("not a BGZF block")
        rest = self._fh.read(int.from_bytes(head[16:18], "little") + 1 - 18)
        return zlib.decompress(head + rest, 31)

    def _indexed_block(self, k: int) -> bytes:
        """The ``k``-th indexed block, checked against the next offset."""
        block = self._block_at(self._compressed[k])[0]
        after = self._uncompressed[k + 1] if k + 1 < len(self._uncompressed) else self._size
        if len(block) != after - self._uncompressed[k]:
            raise ValueError("the .gzi's offsets do not match the file's blocks")
        return block

    def read(self, a: int, b: int) -> bytes:
        import bisect

        k = max(0, bisect.bisect_right(self._uncompressed, a) - 1)
        out = []
        while k < len(self._compressed) and self._uncompressed[k] < b:
            at = self._uncompressed[k]
            out.append(self._indexed_block(k)[max(0, a - at):b - at])
            k += 1
        return b"".join(out)

    def size(self) -> int:
        """The uncompressed size: the last indexed block's start plus its length."""
        return self._size


def _stream_layout(path: Path) -> list[tuple[str, int, bool]]:
    """``(name, length, blanks)`` of every record, streamed; raises like :func:`iter_records`."""
    return [(name, len(seq), blanks) for name, seq, blanks in _iter_checked(path)]


def _build_index(path: Path, compression: str,
                 accept: Callable[[list[_FaiEntry]], bool]) -> list[_FaiEntry] | None:
    """Build ``.fai`` (and ``.gzi``) with samtools faidx into temporary files; move them beside
    ``path`` only when ``accept`` approves the entries. None when faidx fails or is refused."""
    import pysam

    tag = secrets.token_hex(4)
    tmp_fai = path.with_name(f".{path.name}.{tag}.fai.tmp")
    tmp_gzi = path.with_name(f".{path.name}.{tag}.gzi.tmp")
    args = [str(path), "--fai-idx", str(tmp_fai)]
    if compression == "bgzf":
        args += ["--gzi-idx", str(tmp_gzi)]
    old = pysam.set_verbosity(0)
    try:
        pysam.faidx(*args)
        entries = _read_fai(tmp_fai)
        if entries is None or not accept(entries):
            return None
        if compression == "bgzf":
            _not_older(tmp_gzi, path)
            os.replace(tmp_gzi, f"{path}.gzi")
        _not_older(tmp_fai, path)
        os.replace(tmp_fai, f"{path}.fai")
        return entries
    except (pysam.SamtoolsError, OSError):
        return None
    finally:
        pysam.set_verbosity(old)
        for tmp in (tmp_fai, tmp_gzi):
            with contextlib.suppress(FileNotFoundError):
                tmp.unlink()


def _folder_writable(folder: Path) -> bool:
    """Writable by intent: root passes ``os.access`` everywhere, so a folder without any
    write bit (a read-only data folder) counts as read-only for root too."""
    try:
        mode = folder.stat().st_mode
    except OSError:
        return False
    return os.access(folder, os.W_OK) and bool(mode & (stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH))


def _index_fresh(data: Path, *indexes: Path) -> bool:
    """Every index exists and is not older than ``data`` (an older one was made before the
    file last changed)."""
    mtime = data.stat().st_mtime_ns
    return all(p.is_file() and p.stat().st_mtime_ns >= mtime for p in indexes)


def _not_older(index: Path, data: Path) -> None:
    """Give a just-built ``index`` the mtime of ``data`` when ``data``'s is later (a file dated
    in the future, a clock ahead on a network disk), or it would count as stale at every open."""
    mtime = data.stat().st_mtime_ns
    if index.stat().st_mtime_ns < mtime:
        os.utime(index, ns=(mtime, mtime))


def _check_bgzf_eof(path: Path) -> None:
    with open(path, "rb") as fh:
        fh.seek(max(0, path.stat().st_size - len(_BGZF_EOF)))
        if fh.read() != _BGZF_EOF:
            raise InputError(f"{path} is truncated (no BGZF end-of-file block); re-create it "
                             "with bgzip")


# --------------------------------------------------------------------------- random access

class FastaFile:
    """Random access to a FASTA file; use as a context manager.

    Args:
        path: Plain, gzip, bgzip, xz or bzip2 FASTA.
        build_index: Build a missing or inconsistent ``.fai``/``.gzi`` beside a plain or bgzip
            file when the folder is writable. Without an index the file is read into memory.

    Attributes:
        contigs: Record names in file order.
        lengths: Record name → length in bases.
        mode: ``indexed``, ``bgzf`` or ``memory`` (see the module docstring).

    Example:
        >>> with FastaFile("ce.fa") as fa:
        ...     fa.fetch_region("CHROMOSOME_I:1-10")
        b'GCCTAAGCCT'
    """

    def __init__(self, path: str | Path, *, build_index: bool = True):
        self.path = Path(path)
        self.compression = _require_fasta(self.path)
        self._fd: int | None = None
        self._pysam = None
        self._seqs: dict[str, bytes] = {}
        self._entries: dict[str, _FaiEntry] = {}
        entries = None
        if self.compression == "bgzf":
            _check_bgzf_eof(self.path)
        if self.compression in ("none", "bgzf"):
            entries = self._usable_index(build_index)
        if entries is None or not self._open_indexed(entries):
            self.mode = "memory"
            self._seqs = dict(iter_records(self.path))
            self.lengths = {name: len(seq) for name, seq in self._seqs.items()}
        self.contigs = list(self.lengths)

    def _usable_index(self, build: bool) -> list[_FaiEntry] | None:
        fai = Path(f"{self.path}.fai")
        entries = _read_fai(fai) if fai.is_file() else None
        if entries is not None and self._existing_index_ok(entries, fai):
            return entries
        if not (build and _folder_writable(self.path.parent)):
            return None
        # faidx has just read the whole file; one parse checks what it let through.
        return _build_index(self.path, self.compression, lambda new: _stream_layout(
            self.path) == [(e.name, e.length, False) for e in new])

    def _existing_index_ok(self, entries: list[_FaiEntry], fai: Path) -> bool:
        """An index older than the file is stale: the file changed after it was made (a
        rewrapped file may even keep its size and headers). One as new is checked against
        the file, since copies (cp -p, rsync -a) keep old dates."""
        if self.compression == "none":
            return _index_fresh(self.path, fai) and _plain_index_consistent(self.path, entries)
        return (_index_fresh(self.path, fai, Path(f"{self.path}.gzi"))
                and _bgzf_index_consistent(self.path, entries))

    def _open_indexed(self, entries: list[_FaiEntry]) -> bool:
        """Open for random access; False when htslib refuses the index (read into memory)."""
        self._entries = {e.name: e for e in entries}
        self.lengths = {e.name: e.length for e in entries}
        if self.compression == "none":
            self.mode = "indexed"
            self._fd = os.open(self.path, os.O_RDONLY)
            return True
        import pysam

        from genoctx.io.hts import quiet_htslib

        self.mode = "bgzf"
        try:
            with quiet_htslib():
                self._pysam = pysam.FastaFile(str(self.path), filepath_index=f"{self.path}.fai",
                                              filepath_index_compressed=f"{self.path}.gzi")
        except (OSError, ValueError):
            return False
        return True

    # -- reading

    def _check(self, contig: str, start: int, end: int | None) -> tuple[int, int]:
        if contig not in self.lengths:
            Region(contig, 0, 0).check(self.lengths)  # raises with the known contigs
        size = self.lengths[contig]
        end = size if end is None else end
        if not 0 <= start <= end:
            raise RegionError(f"{contig}: bad interval [{start}, {end}) (0-based half-open; "
                              "need 0 <= start <= end)")
        if end > size:
            Region(contig, start, end).check(self.lengths)  # raises with the length
        return start, end

    def _read_lines(self, e: _FaiEntry, start: int, end: int, table: bytes | None) -> np.ndarray:
        """Bases [start, end) of a plain indexed record, line ends dropped by one reshape.

        Only the bytes from the first base to the last are read: a few bases of a record
        written on one line (unwrapped FASTA, a 4.6-Mb line for E. coli) read those bases,
        not the whole line, as a variant's REF check does once per record. Bytes not read
        (past a short file's end too) keep the line-end filler, which the letter check
        below refuses."""
        a, b = e.lines(start, end)
        lb, lw = e.linebases, e.linewidth
        first = start % lb
        one_line = (end - 1) // lb == start // lb
        if one_line:  # no line end between the bases
            raw = bytearray(b"\n") * (end - start)
            os.preadv(self._fd, [raw], a + first)
            bases = np.frombuffer(raw, np.uint8)
        else:
            raw = bytearray(b"\n") * (b - a)  # whole lines, for the reshape
            last = ((end - 1) // lb - start // lb) * lw + (end - 1) % lb + 1
            os.preadv(self._fd, [memoryview(raw)[first:last]], a + first)
            bases = e.bases_in(raw, start, end)  # a view of raw where it can be: raw is ours
        i = _first_non_letter(bases)
        if i is not None:
            self._refuse(e, start + i, int(bases[i]))
        if table is None:
            return bases
        if one_line:
            return np.frombuffer(raw.translate(table), np.uint8)
        return e.bases_in(raw.translate(table), start, end)

    def _refuse(self, e: _FaiEntry, at: int, byte: int,
                read: Callable[[int, int], bytes] | None = None) -> None:
        """Raise for ``byte``, read as base ``at`` (0-based) of record ``e``: a line end means
        the .fai does not describe the file; anything else is a bad byte in the file, named by
        its line (counted on this error path only, through ``read(a, b)``, the file's bytes
        ``[a, b)``, uncompressed) and column."""
        if read is None:
            def read(a: int, b: int) -> bytes:
                return os.pread(self._fd, b - a, a)

        if byte in b"\r\n":
            raise InputError(
                f"{self.path}: record '{e.name}' reads a line end at base {at + 1:,} through its "
                f"index: {self.path.name}.fai does not describe this file (its lines are not "
                f"all as long as the index says, or it was made from an older file); remove "
                f"{self.path.name}.fai and read the file again")
        pos = e.offset + at // e.linebases * e.linewidth + at % e.linebases
        line, done = 1, 0
        while done < pos:
            chunk = read(done, done + min(_CHUNK, pos - done))
            if not chunk:
                break
            line, done = line + chunk.count(b"\n"), done + len(chunk)
        raise _not_a_letter(self.path, e.name, byte, line, at % e.linebases + 1, at + 1)

    def fetch_array(self, contig: str, start: int = 0, end: int | None = None, *,
                    table: bytes | None = None) -> np.ndarray:
        """Like :meth:`fetch`, as a writable uint8 array.

        Args:
            table: A 256-byte translation table applied while reading (one pass), e.g.
                ``nucleotide.ENCODE_TABLE`` to get token ids straight from the file.
        """
        start, end = self._check(contig, start, end)
        if start == end:
            return np.empty(0, np.uint8)
        if self.mode == "indexed":
            return self._read_lines(self._entries[contig], start, end, table)
        if self.mode == "bgzf":
            data = bytearray(self._bgzf_fetch(contig, start, end))
        else:
            data = bytearray(self._seqs[contig][start:end])
        return np.frombuffer(data if table is None else data.translate(table), np.uint8)

    def fetch(self, contig: str, start: int = 0, end: int | None = None) -> bytes:
        """Bases ``[start, end)`` (0-based half-open) of ``contig`` as raw bytes, case kept.

        Raises:
            RegionError: unknown contig, or the interval is invalid or runs off the end.
        """
        start, end = self._check(contig, start, end)
        if self.mode == "memory":
            return self._seqs[contig][start:end]
        if self.mode == "bgzf":
            return self._bgzf_fetch(contig, start, end)
        return self.fetch_array(contig, start, end).tobytes()

    def _bgzf_fetch(self, contig: str, start: int, end: int) -> bytes:
        """Bases ``[start, end)`` through htslib, checked as the plain indexed path checks
        them: htslib passes any printable byte (a digit, '@'), and a non-ASCII one stops its
        decoding; either is named by line and column."""
        from genoctx.io.hts import quiet_htslib

        try:
            with quiet_htslib():  # htslib's own line would come before ours
                seq = self._pysam.fetch(contig, start, end).encode("ascii")
        except UnicodeError:
            seq = None
        except ValueError as e:  # htslib could not read the blocks: a damaged file
            raise InputError(f"{self.path}: cannot read {contig}:{start + 1:,}-{end:,} ({e}); "
                             "the file is damaged, or its .fai/.gzi are not its own: remove "
                             f"{self.path.name}.fai and {self.path.name}.gzi and read it "
                             "again") from None
        if (seq is not None and len(seq) == end - start
                and _first_non_letter(np.frombuffer(seq, np.uint8)) is None):
            return seq
        self._refuse_bgzf(self._entries[contig], start, end)
        raise AssertionError("unreachable")  # _refuse_bgzf raises

    def _refuse_bgzf(self, e: _FaiEntry, start: int, end: int) -> None:
        """Find the byte htslib gave or choked on in ``[start, end)`` of record ``e`` by
        reading the file's own bytes, and raise for it (see :meth:`_refuse`)."""
        a, b = e.lines(start, end)
        with _BgzfReader(self.path, Path(f"{self.path}.gzi")) as reader:
            raw = bytearray(reader.read(a, b))
            raw += b"\n" * (b - a - len(raw))  # a short last line
            bases = e.bases_in(raw, start, end)
            i = _first_non_letter(bases)
            if i is None:  # what htslib gave differs from the bytes: not this file's index
                raise InputError(f"{self.path}: {e.name}:{start + 1:,}-{end:,} reads differently "
                                 f"through htslib and through its index: remove "
                                 f"{self.path.name}.fai and {self.path.name}.gzi and read it "
                                 "again")
            self._refuse(e, start + i, int(bases[i]), reader.read)

    def resolve(self, region: Region | str) -> Region:
        """A region string (1-based, ``chr1:1,000-2,000``) or Region, checked against lengths."""
        if isinstance(region, Region):
            return region.check(self.lengths)
        return parse_region(region, self.lengths)

    def fetch_region(self, region: Region | str) -> bytes:
        """Bases of a region string or :class:`Region` as raw bytes."""
        r = self.resolve(region)
        return self.fetch(r.contig, r.start, r.end)

    # -- lifecycle

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None
        if self._pysam is not None:
            self._pysam.close()
            self._pysam = None

    def __enter__(self) -> FastaFile:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __del__(self) -> None:
        with contextlib.suppress(Exception):
            self.close()

    def __contains__(self, contig: object) -> bool:
        return contig in self.lengths

    def __repr__(self) -> str:
        return f"FastaFile({str(self.path)!r}, mode={self.mode!r}, contigs={len(self.contigs)})"
