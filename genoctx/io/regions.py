"""Genomic regions: 0-based half-open inside, 1-based inclusive only in region strings.

A :class:`Region` is ``contig:[start, end)`` in 0-based half-open coordinates. The only place
where 1-based inclusive coordinates appear is the text form (``chr1:1,000-2,000``), and the only
two functions that convert between the two are :func:`one_based_to_half_open` and
:func:`half_open_to_one_based`. BED files are already 0-based half-open and are read as-is.

Region strings follow samtools:

- ``chr1:1,000-2,000`` — bases 1,000 to 2,000 inclusive (commas allowed)
  → ``Region("chr1", 999, 2000)``
- ``chr1:1000`` and ``chr1:1000-`` — from base 1,000 to the contig end (as htslib reads them);
  ``chr1:1000-1000`` — a single base
- ``chr1`` — the whole contig (needs the contig lengths)
- contig names may contain ``:`` (``HLA-A*01:01``): the whole string is tried as a contig name
  first; ``{HLA-A*01:01}:1-100`` braces remove any ambiguity.
"""

from __future__ import annotations

import gzip
import io
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

from genoctx.errors import InputError, RegionError

_RANGE_RE = re.compile(r"^\s*([0-9][0-9,]*)\s*(?:(-)\s*([0-9][0-9,]*)?)?\s*$")


def one_based_to_half_open(start_1: int, end_1: int) -> tuple[int, int]:
    """1-based inclusive ``[start_1, end_1]`` → 0-based half-open ``[start, end)``."""
    return start_1 - 1, end_1


def half_open_to_one_based(start: int, end: int) -> tuple[int, int]:
    """0-based half-open ``[start, end)`` → 1-based inclusive ``[start_1, end_1]``."""
    return start + 1, end


@dataclass(frozen=True)
class Region:
    """A genomic interval ``contig:[start, end)``, 0-based half-open.

    Args:
        contig: Contig (sequence) name.
        start: 0-based first base.
        end: 0-based one-past-the-last base; ``end == start`` is an empty region.
    """

    contig: str
    start: int
    end: int

    def __post_init__(self) -> None:
        if not self.contig:
            raise RegionError("a region needs a contig name")
        if self.start < 0:
            raise RegionError(f"region {self.contig}: start {self.start} is negative")
        if self.end < self.start:
            raise RegionError(
                f"region {self.contig}: end {self.end} is before start {self.start} "
                "(0-based half-open coordinates)")

    def __len__(self) -> int:
        return self.end - self.start

    def __str__(self) -> str:
        start_1, end_1 = half_open_to_one_based(self.start, self.end)
        contig = f"{{{self.contig}}}" if ":" in self.contig else self.contig
        return f"{contig}:{start_1:,}-{end_1:,}"

    def check(self, lengths: Mapping[str, int]) -> Region:
        """Return ``self`` after checking it against contig lengths.

        Raises:
            RegionError: unknown contig, or the region runs past the contig's end.
        """
        if self.contig not in lengths:
            raise RegionError(f"unknown contig '{self.contig}'; {_known(lengths)}")
        size = lengths[self.contig]
        if self.end > size:
            start_1, end_1 = half_open_to_one_based(self.start, self.end)
            raise RegionError(
                f"region {self.contig}:{start_1:,}-{end_1:,} runs past the end of "
                f"{self.contig} (length {size:,} bp)")
        return self


def _known(lengths: Mapping[str, int], limit: int = 5) -> str:
    names = list(lengths)
    if not names:
        return "the reference has no contigs"
    more = f", ... ({len(names)} in all)" if len(names) > limit else ""
    shown = ", ".join(names[:limit]) + more
    return f"known contigs: {shown}"


def _to_int(text: str, whole: str) -> int:
    digits = text.replace(",", "")
    if not (digits.isascii() and digits.isdigit()):  # not "²" or other scripts' digits
        raise RegionError(f"malformed region '{whole}': '{text}' is not a position")
    return int(digits)


def _parse_range(contig: str, spec: str, whole: str,
                 lengths: Mapping[str, int] | None) -> Region:
    """Turn the part after ``:`` (1-based inclusive, commas allowed) into a Region."""
    m = _RANGE_RE.match(spec)
    if not m:
        raise RegionError(
            f"malformed region '{whole}'; expected CONTIG, CONTIG:POS or CONTIG:START-END "
            "(1-based, inclusive, e.g. chr1:1,000-2,000; CONTIG:POS runs to the contig end)")
    start_1 = _to_int(m.group(1), whole)
    if start_1 < 1:
        raise RegionError(f"region '{whole}': positions are 1-based, so the start must be >= 1")
    if m.group(2) is None or m.group(3) is None:  # "chr1:1000" or "chr1:1000-": to the end,
        # as samtools and htslib read them
        if lengths is None or contig not in lengths:
            raise RegionError(f"region '{whole}' runs to the contig end, which needs the "
                              "contig lengths (give a reference)")
        end_1 = lengths[contig]
    else:
        end_1 = _to_int(m.group(3), whole)
    if start_1 > end_1:
        raise RegionError(f"region '{whole}': start {start_1:,} is after end {end_1:,}")
    start, end = one_based_to_half_open(start_1, end_1)
    region = Region(contig, start, end)
    return region.check(lengths) if lengths is not None else region


def _split_braced(text: str) -> tuple[str, str | None] | None:
    """``{name}:range`` or ``{name}`` → (name, range or None); None when not braced."""
    if not text.startswith("{"):
        return None
    close = text.find("}")
    if close < 0:
        raise RegionError(f"malformed region '{text}': unbalanced '{{'")
    name, rest = text[1:close], text[close + 1:]
    if rest == "":
        return name, None
    if not rest.startswith(":"):
        raise RegionError(f"malformed region '{text}': expected ':' after '}}'")
    return name, rest[1:]


def parse_region(text: str, lengths: Mapping[str, int] | None = None) -> Region:
    """Parse a samtools-style region string into a 0-based half-open :class:`Region`.

    Args:
        text: ``chr1:1,000-2,000`` (1-based inclusive), ``chr1:1000`` or ``chr1:1000-`` (both
            run to the contig end, as in samtools), ``chr1`` or ``{name:with:colons}:1-100``.
        lengths: Contig lengths; when given, the contig must exist and the region must fit.

    Returns:
        The region, e.g. ``parse_region("chr1:1,000-2,000") == Region("chr1", 999, 2000)``.

    Raises:
        RegionError: malformed text, unknown contig, start after end, or end past the contig.
    """
    text = text.strip()
    if not text:
        raise RegionError("empty region string; expected e.g. chr1:1,000-2,000")
    braced = _split_braced(text)
    if braced is not None:
        contig, spec = braced
        return _whole_contig(contig, text, lengths) if spec is None else \
            _parse_range(contig, spec, text, lengths)
    if lengths is not None and text in lengths:
        head, _, tail = text.rpartition(":")
        if head in lengths and _RANGE_RE.match(tail):
            raise RegionError(
                f"region '{text}' is ambiguous: it is a contig name and also {head} with a range; "
                f"write {{{text}}} for the contig or {{{head}}}:{tail} for the range")
        return Region(text, 0, lengths[text])
    head, sep, tail = text.rpartition(":")
    if not sep:
        return _whole_contig(text, text, lengths)
    if lengths is not None and head not in lengths:
        raise RegionError(f"unknown contig '{head}' in region '{text}'; {_known(lengths)}")
    return _parse_range(head, tail, text, lengths)


def _whole_contig(contig: str, whole: str, lengths: Mapping[str, int] | None) -> Region:
    if lengths is None:
        raise RegionError(f"region '{whole}' names a whole contig, which needs the contig "
                          "lengths; give START-END or a reference")
    if contig not in lengths:
        raise RegionError(f"unknown contig '{contig}'; {_known(lengths)}")
    return Region(contig, 0, lengths[contig])


def _bed_lines(path: Path) -> Iterator[tuple[int, str]]:
    """Numbered lines of a BED file, plain or gzipped, opened once: a pipe (``--regions
    <(...)``, /dev/stdin) cannot be read a second time."""
    with open(path, "rb") as raw:
        head = raw.read(2)
        fh = io.BufferedReader(_Prefixed(head, raw))
        try:
            binary = gzip.GzipFile(fileobj=fh) if head == b"\x1f\x8b" else fh
            text = io.TextIOWrapper(binary, encoding="utf-8", errors="replace", newline=None)
            yield from enumerate(text, start=1)
        except (EOFError, gzip.BadGzipFile, OSError) as exc:
            if isinstance(exc, (FileNotFoundError, PermissionError)):
                raise
            raise InputError(f"{path}: cannot read BED file ({exc})") from exc


class _Prefixed(io.RawIOBase):
    """A raw stream that gives ``head`` (bytes already read from ``rest``) and then ``rest``."""

    def __init__(self, head: bytes, rest):
        self.head, self.rest = head, rest

    def readable(self) -> bool:
        return True

    def readinto(self, buf) -> int:
        if self.head:
            n = min(len(buf), len(self.head))
            buf[:n], self.head = self.head[:n], self.head[n:]
            return n
        data = self.rest.read(len(buf))
        buf[:len(data)] = data
        return len(data)


def _bed_region(fields: list[str], where: str, lengths: Mapping[str, int] | None) -> Region:
    if len(fields) < 3:
        raise RegionError(f"{where}: a BED line needs at least 3 tab-separated columns "
                          f"(chrom, start, end), found {len(fields)}")
    contig, start_s, end_s = fields[0], fields[1].strip(), fields[2].strip()
    if not all(s.isascii() and s.isdigit() for s in (start_s, end_s)):
        raise RegionError(f"{where}: start '{start_s}' and end '{end_s}' must be non-negative "
                          "integers (BED is 0-based, half-open)")
    start, end = int(start_s), int(end_s)
    if start > end:
        raise RegionError(f"{where}: start {start} is after end {end}")
    region = Region(contig, start, end)
    if lengths is not None:
        try:
            region.check(lengths)
        except RegionError as exc:
            raise RegionError(f"{where}: {exc}") from None
    return region


def read_bed(path: str | Path, lengths: Mapping[str, int] | None = None) -> list[Region]:
    """Read the regions of a BED file (plain or gzipped); BED is 0-based half-open already.

    ``track``/``browser`` lines, ``#`` comments and blank lines are skipped; columns beyond the
    third are ignored. Columns are split on tabs (or on any whitespace when a line has no tab).

    Args:
        path: The BED file.
        lengths: Contig lengths; when given, every region is checked against them.

    Raises:
        InputError: the file is missing or unreadable.
        RegionError: a malformed line, unknown contig or a region past a contig's end (the
            message gives the file and line number).
    """
    path = Path(path)
    if not path.exists():
        raise InputError(f"BED file {path} does not exist")
    if path.is_dir():
        raise InputError(f"BED file {path} is a folder")
    regions = []
    for num, line in _bed_lines(path):
        stripped = line.strip()
        if not stripped or stripped.startswith("#") or stripped.split()[0] in ("track",
                                                                               "browser"):
            continue
        fields = line.rstrip("\n").split("\t") if "\t" in line else stripped.split()
        regions.append(_bed_region(fields, f"{path}:{num}", lengths))
    return regions
