"""BAM/CRAM alignments: opening with index handling, summary info, and per-base pileup channels.

Pileup channels (:data:`PILEUP_CHANNELS`, one row per reference base of the region):

=================  ===========================================================================
``depth``          A + C + G + T + del: the reads (passing the filters) that show a base of
                   quality >= ``min_baseq`` or a deletion at this position. Read bases that are
                   N (or below ``min_baseq``) and reference skips (``N`` in the CIGAR) are
                   not counted, so depth can be below the number of reads spanning a position.
``A C G T``        read bases of quality >= ``min_baseq`` aligned (CIGAR M/=/X) to the position
                   — exactly pysam's ``AlignmentFile.count_coverage`` with the same filters
                   (but for ``=`` bases, which it drops; see below)
``del``            reads with a deletion (CIGAR D) over the position; a deletion has no base
                   quality, so ``min_baseq`` does not apply to it
``mean_baseq``     mean Phred quality of the counted A/C/G/T bases (0 where there are none)
``strand_plus_frac`` fraction of ``depth`` from forward-strand reads (0 where depth is 0)
=================  ===========================================================================

Read bases stored as ``=`` (equal to the reference: ``samtools calmd -e``) count as the
reference base at their position, so they need the reference FASTA (an error says so without
one); pysam's ``count_coverage`` drops them.

Read filters: a read counts when ``flag & exclude_flags == 0``, ``flag & include_flags ==
include_flags`` and ``mapping_quality >= min_mapq``. The default ``exclude_flags`` 0xF04 drops
unmapped (0x4), secondary (0x100), QC-failed (0x200), duplicate (0x400) and supplementary
(0x800) records. Reads without a stored sequence are skipped (as ``count_coverage`` does); reads
without base qualities count as quality 0 (a :class:`PileupWarning` says how many when
``min_baseq`` > 0 leaves their bases out). Overlapping mates are both counted (no overlap
correction, again as ``count_coverage``).

Speed: reads are fetched once; per read only its CIGAR is walked in Python (a few operations),
and the per-base work — expanding aligned blocks, base lookup, quality filter, accumulation — is
done for many reads at a time with numpy (``np.repeat`` + ``np.bincount``).
"""

from __future__ import annotations

import contextlib
import os
import stat
import warnings
from pathlib import Path

import numpy as np
import pysam

from genoctx.errors import InputError, RegionError
from genoctx.io.atomic import atomic_path
from genoctx.io.fasta import FORMAT_NAMES, FastaFile, sniff_format
from genoctx.io.hts import quiet_htslib
from genoctx.io.regions import Region, parse_region

PILEUP_CHANNELS: tuple[str, ...] = ("depth", "A", "C", "G", "T", "del", "mean_baseq",
                                    "strand_plus_frac")
CHANNEL_INDEX = {name: i for i, name in enumerate(PILEUP_CHANNELS)}
DEFAULT_EXCLUDE_FLAGS = 0xF04  # unmapped | secondary | qcfail | duplicate | supplementary

_ALIGNMENT_FORMATS = {"bam": "BAM", "cram": "CRAM", "sam": "SAM"}
_MATCH_OPS = (0, 7, 8)       # M, =, X: a read base over a reference base
_QUERY_ONLY_OPS = (1, 4)     # I, S: read bases with no reference position
_DEL, _REF_SKIP = 2, 3
# Flush the collected aligned bases into the counts every so many bases: this bounds the
# memory of a pileup besides its [L, C] output (a flush's arrays take ~50 bytes per base:
# 1 << 22 peaked at 217 MiB, 1 << 20 at 54 MiB and ran 2x faster, tracemalloc over 9.85 M
# aligned bases of ex1's chr1 reads repeated 200 times). Counts do not depend on it.
_FLUSH_BASES = 1 << 20
_BASE_CODE = np.full(256, 4, np.uint8)  # A0 C1 G2 T3; 4: not counted (N, other codes)
for _i, _b in enumerate(b"ACGT"):
    _BASE_CODE[_b] = _i
# '=' stores a read base equal to the reference base (samtools calmd -e, some exports): it is
# counted as that base, which the reference tells
_SAME_AS_REFERENCE = 5
_BASE_CODE[ord("=")] = _SAME_AS_REFERENCE


# ----------------------------------------------------------------------------- opening

def _alignment_format(path: Path) -> str:
    fmt, _ = sniff_format(path)
    if fmt in _ALIGNMENT_FORMATS:
        return fmt
    if fmt == "unknown" and path.suffix.lower() == ".sam":  # a SAM without header lines
        return "sam"
    raise InputError(f"{path} is not a BAM, CRAM or SAM file (it looks like {FORMAT_NAMES[fmt]})")


_REFERENCE_LINKS: dict[str, str] = {}  # reference -> a link to it in a private temporary folder


def _cram_reference(reference: str | Path) -> str:
    """The reference path to give htslib for a CRAM. htslib builds a missing ``.fai`` (and
    ``.gzi``) beside the FASTA itself, so for a FASTA without one in a folder not to be written
    (:func:`_writable_folder`; root could write there) it gets a link in a temporary folder of
    its own, removed at exit, where the index is built instead."""
    import atexit
    import shutil
    import tempfile

    reference = Path(reference)
    indexed = Path(f"{reference}.fai").is_file() and (
        reference.suffix.lower() not in (".gz", ".bgz") or Path(f"{reference}.gzi").is_file())
    if indexed or _writable_folder(reference.resolve().parent):
        return str(reference)
    key = str(reference.resolve())
    if key not in _REFERENCE_LINKS:
        folder = tempfile.mkdtemp(prefix="genoctx-ref-")
        atexit.register(shutil.rmtree, folder, True)
        link = Path(folder) / reference.name
        link.symlink_to(reference.resolve())
        _REFERENCE_LINKS[key] = str(link)
    return _REFERENCE_LINKS[key]


def _open(path: Path, fmt: str, reference: str | None,
          index: Path | None = None) -> pysam.AlignmentFile:
    mode = {"bam": "rb", "cram": "rc", "sam": "r"}[fmt]
    kwargs = {"reference_filename": _cram_reference(reference)} if fmt == "cram" else {}
    if index is not None:
        kwargs["index_filename"] = str(index)
    with quiet_htslib():  # htslib's "could not retrieve index" is handled here
        try:
            return pysam.AlignmentFile(str(path), mode, **kwargs)
        except (ValueError, OSError) as exc:
            raise InputError(f"{path}: cannot read {_ALIGNMENT_FORMATS[fmt]} ({exc})") from None


def _sort_order(af: pysam.AlignmentFile) -> str:
    return af.header.to_dict().get("HD", {}).get("SO", "unknown")


def _writable_folder(folder: Path) -> bool:
    """Writable, and not marked read-only: root passes ``os.access`` on a folder whose mode
    forbids writing (a shared read-only data folder), so the mode bits are checked too."""
    return os.access(folder, os.W_OK) and bool(folder.stat().st_mode & stat.S_IWUSR)


def _build_index(path: Path, fmt: str, idx: Path | None = None) -> None:
    """Index ``path`` into ``idx`` (default FILE.bai, FILE.crai for CRAM; a ``.csi`` name gets a
    CSI index), written to a temporary name, then renamed. An existing index is rebuilt where it
    is, as htslib would go on loading it before an index written under another name."""
    if idx is None:
        idx = Path(f"{path}{'.crai' if fmt == 'cram' else '.bai'}")
    csi = ["-c"] if idx.suffix == ".csi" else []
    try:
        with quiet_htslib(), atomic_path(idx, suffix=idx.suffix) as tmp:
            # quiet: htslib names the first unsorted read
            pysam.index(*csi, "-o", str(tmp), str(path))
    except OSError as exc:
        raise InputError(f"{path} has no index and it cannot be written beside it ({exc}); "
                         "copy the file to a writable folder and index it there") from None
    except pysam.SamtoolsError:
        raise InputError(
            f"{path} could not be indexed; it is probably not sorted by coordinate. Sort it "
            f"first: samtools sort -o sorted.bam {path.name} (pysam.sort), then index") from None


_PRIVATE_INDEXES: dict[tuple, Path] = {}  # (file, mtime, size) -> its index built for this run


class IndexNote(UserWarning):
    """An alignment file was indexed for this run only (:func:`open_alignment`)."""


def _private_index(path: Path, fmt: str, why: str) -> Path:
    """An index of ``path`` in a temporary folder of this process (removed at exit), for a
    file whose own folder cannot take one; built once per process and file version. BAM gets
    a CSI index (no 2^29 limit on positions), CRAM a CRAI. Says so with an
    :class:`IndexNote`, as each new process indexes the whole file again."""
    import atexit
    import shutil
    import tempfile

    st = path.stat()
    key = (str(path.resolve()), st.st_mtime_ns, st.st_size)
    if key not in _PRIVATE_INDEXES:
        folder = Path(tempfile.mkdtemp(prefix="genoctx-index-"))
        atexit.register(shutil.rmtree, folder, True)
        idx = folder / f"{path.name}{'.crai' if fmt == 'cram' else '.csi'}"
        _build_index(path, fmt, idx)
        _PRIVATE_INDEXES[key] = idx
        warnings.warn(f"{path} {why} and its folder is read-only: indexed it in a temporary "
                      "folder for this run, which each run does again; index it once where it "
                      "can be written (samtools index / pysam.index) to skip that", IndexNote,
                      stacklevel=3)
    return _PRIVATE_INDEXES[key]


def _index_file(path: Path, fmt: str) -> Path | None:
    """The index htslib loads for ``path``: the first that exists of FILE.csi, FILE.bai and
    the same with the file's suffix replaced (htslib 1.2x tries a CSI before a BAI, whatever
    their ages), or FILE.crai for a CRAM; None when there is none."""
    names = ((".crai",) if fmt == "cram" else (".csi", ".bai"))
    candidates = [c for ext in names for c in (Path(f"{path}{ext}"), path.with_suffix(ext))]
    return next((c for c in candidates if c.is_file()), None)


def _stale_index(path: Path, idx: Path | None) -> bool:
    """True when ``idx`` is older than ``path`` by more than a second (the file was rewritten
    after it was indexed: its offsets point anywhere)."""
    return idx is not None and idx.stat().st_mtime < path.stat().st_mtime - 1.0


def _index_references(idx: Path) -> int | None:
    """The number of references an index was made for: in a BAI the int32 after the magic
    ``BAI\\1``; in a CSI (bgzipped) the int32 after the magic, min_shift, depth, l_aux and
    l_aux bytes of meta data. None for a .crai (it stores no count) or a file too damaged to
    tell (htslib then does not load it either)."""
    import gzip
    import struct

    try:
        if idx.suffix == ".bai":
            with open(idx, "rb") as fh:
                head = fh.read(8)
            if len(head) == 8 and head[:4] == b"BAI\1":
                return struct.unpack("<i", head[4:])[0]
        elif idx.suffix == ".csi":
            with gzip.open(idx, "rb") as fh:
                head = fh.read(16)
                if len(head) == 16 and head[:4] == b"CSI\1":
                    l_aux = struct.unpack("<i", head[12:])[0]
                    rest = fh.read(l_aux + 4) if l_aux >= 0 else b""
                    if len(rest) == l_aux + 4:
                        return struct.unpack("<i", rest[l_aux:])[0]
    except (OSError, EOFError):  # not gzip, or cut short: not an index htslib can load
        return None
    return None


def _foreign_index(path: Path, idx: Path | None, n_header: int) -> str | None:
    """Why ``idx`` is not the index of ``path`` (made for another number of references than the
    header's @SQ lines: an index left beside a replaced file, or a damaged one), else None.
    htslib does not check this: an index with fewer references than the header crashes pysam's
    index statistics and fetches past them read nothing."""
    n_idx = None if idx is None else _index_references(idx)
    if n_idx is None or n_idx == n_header:
        return None
    return (f"the index {idx} does not belong to {path}: it was made for {n_idx:,} "
            f"reference(s) and the header has {n_header:,} (@SQ lines)")


@contextlib.contextmanager
def _closing_quietly(af: pysam.AlignmentFile):
    """Close ``af`` at the end without letting a failing close (htslib on damaged data: "Closing
    failed") replace the error that says what was wrong."""
    try:
        yield af
    finally:
        with contextlib.suppress(OSError):
            af.close()


def open_alignment(path: str | Path, reference: str | Path | None = None) -> pysam.AlignmentFile:
    """Open a BAM or CRAM for random access, building its index when it is missing.

    Args:
        path: a coordinate-sorted BAM or CRAM.
        reference: the FASTA the reads were aligned to (required for CRAM).

    Returns:
        an open, indexed ``pysam.AlignmentFile``.

    A missing index, or one made for another file, is built beside the file; where the
    folder is read-only (shared data), in a temporary folder for this run instead, with an
    :class:`IndexNote` warning.

    Raises:
        InputError: missing file, not BAM/CRAM, CRAM without reference, SAM (not indexable),
            or unsorted (the message gives the fix).
    """
    path = Path(path)
    fmt = _alignment_format(path)
    if fmt == "sam":
        raise InputError(
            f"{path} is SAM, which cannot be indexed for region access; convert it to a sorted, "
            f"indexed BAM: samtools sort -o {path.stem}.bam {path.name} && samtools index "
            f"{path.stem}.bam (pysam.sort / pysam.index)")
    if fmt == "cram" and reference is None:
        raise InputError(f"{path} is CRAM, which needs the reference FASTA to decode: pass "
                         "reference=REF.fa (--reference)")
    af = _open(path, fmt, reference)
    if af.has_index():
        # An index older than its file (rewritten after indexing), or made for another file
        # (another number of references), is built again where it can be. In a read-only
        # folder an old one is used as htslib would (damage then reads as such); a foreign
        # one is refused, as it reads nothing or crashes htslib.
        idx = _index_file(path, fmt)
        foreign = _foreign_index(path, idx, len(af.references))
        writable = _writable_folder(path.parent)
        if not foreign and not (writable and _stale_index(path, idx)):
            return af
        af.close()
        if not writable:  # a foreign index (a stale one was used above)
            return _open(path, fmt, reference, _private_index(
                path, fmt, f"has an index made for another file ({idx.name})"))
        _build_index(path, fmt, idx)  # beside the file, replacing the old index
        return _open(path, fmt, reference)
    so = _sort_order(af)
    af.close()
    if so in ("queryname", "unsorted"):
        raise InputError(f"{path} is sorted by {so}, not by coordinate; sort it first: "
                         f"samtools sort -o sorted.bam {path.name} (pysam.sort), then index")
    if not _writable_folder(path.parent):
        return _open(path, fmt, reference, _private_index(path, fmt, "has no index"))
    _build_index(path, fmt, _index_file(path, fmt))  # a damaged one is replaced where it is
    return _open(path, fmt, reference)


def _open_header(path: Path, fmt: str) -> pysam.AlignmentFile:
    """``path`` opened for its header only: no index is loaded or built, and a CRAM needs no
    reference (no read is decoded)."""
    mode = {"bam": "rb", "cram": "rc", "sam": "r"}[fmt]
    try:
        return pysam.AlignmentFile(str(path), mode, check_sq=False)
    except (ValueError, OSError) as exc:
        raise InputError(f"{path}: cannot read {_ALIGNMENT_FORMATS[fmt]} ({exc})") from None


def alignment_contigs(path: str | Path) -> list[str]:
    """The contig names of an alignment file's header (@SQ SN), in order; its index is not
    read (:func:`bam_info` reads the index's counts too, which a foreign index makes fail)."""
    path = Path(path)
    with _open_header(path, _alignment_format(path)) as af:
        return list(af.references)


def bam_info(path: str | Path) -> dict:
    """Summary of an alignment file, without modifying it.

    Returns:
        ``format``, ``sort_order`` (header SO, or ``unknown``), ``sorted`` (True when the header
        says coordinate or an index exists, False when it says otherwise, else None),
        ``has_index``, ``references`` (name, length, mapped, unmapped per contig; counts from the
        index, None without one), total ``mapped`` / ``unmapped`` (None without an index).

    Raises:
        InputError: not an alignment file, or an index beside it made for another file (its
            number of references is not the header's); the index is not rebuilt here.
    """
    path = Path(path)
    fmt = _alignment_format(path)
    with _open_header(path, fmt) as af:
        has_index = fmt != "sam" and af.has_index()
        foreign = has_index and _foreign_index(path, _index_file(path, fmt), len(af.references))
        if foreign:  # its statistics would crash htslib (fewer references) or be another file's
            raise InputError(f"{foreign}; remove it, or index the file again (samtools index "
                             f"{path.name}, or pysam.index)")
        stats = {}
        if has_index and fmt != "cram":  # a .crai carries no counts (pysam reports zeros)
            try:
                stats = {s.contig: s for s in af.get_index_statistics()}
            except (ValueError, AttributeError):
                stats = {}
        refs = [{"name": n, "length": ln,
                 "mapped": stats[n].mapped if n in stats else None,
                 "unmapped": stats[n].unmapped if n in stats else None}
                for n, ln in zip(af.references, af.lengths)]
        so = _sort_order(af)
        total_mapped = sum(s.mapped for s in stats.values()) if stats else None
        total_unmapped = (sum(s.unmapped for s in stats.values()) + af.nocoordinate
                          if stats else None)
    sorted_ = True if so == "coordinate" or has_index else (
        False if so in ("queryname", "unsorted") else None)
    return {"path": str(path), "format": _ALIGNMENT_FORMATS[fmt], "sort_order": so,
            "sorted": sorted_, "has_index": has_index, "references": refs,
            "mapped": total_mapped, "unmapped": total_unmapped}


# ----------------------------------------------------------------------------- pileup

def _resolve_region(af: pysam.AlignmentFile, region: Region | str, path: Path) -> Region:
    lengths = dict(zip(af.references, af.lengths))
    try:
        r = region if isinstance(region, Region) else parse_region(region, lengths)
        return r.check(lengths)
    except RegionError as exc:
        raise RegionError(f"{path}: {exc}") from None


def open_reference(reference: str | Path) -> FastaFile:
    """The reference FASTA; its .fai is built only in a folder not marked read-only."""
    reference = Path(reference)
    return FastaFile(reference, build_index=_writable_folder(reference.resolve().parent))


def _check_reference(reference: str | Path, region: Region) -> None:
    """The reference must hold the region (it may be shorter than the header's contig, as a
    chunk of a chromosome is)."""
    with open_reference(reference) as fa:
        if region.contig not in fa.lengths:
            raise RegionError(f"contig '{region.contig}' of the alignments is not in the "
                              f"reference {reference}; is it the FASTA the reads were aligned to?")
        if region.end > fa.lengths[region.contig]:
            raise RegionError(f"region {region} runs past the end of {region.contig} in the "
                              f"reference {reference} ({fa.lengths[region.contig]:,} bp)")


class _NoReferenceForEquals(Exception):
    """Read bases stored as ``=`` and no reference to tell which base they are."""


def _fetch(reference: str | Path, region: Region) -> bytes:
    """The reference bytes of ``region``."""
    with open_reference(reference) as fa:
        return fa.fetch(region.contig, region.start, region.end)


class _Accumulator:
    """Per-base channels of one region, fed with batches of aligned blocks.

    Counts are added straight into the ``[L, C]`` output at the touched positions only, so a
    sparse megabase region costs no dense passes over L but one over a bool mask of the
    touched positions (1 byte per base of the region, whatever the depth: a list of their
    positions cost 8 bytes per aligned base). Sums are float32,
    exact for integer counts below 2**24 (quality sums: depth below ~180,000 at Q93).

    ``reference`` gives the region's reference bytes; it is called (once) only when a read
    base is ``=``, so reads with their bases spelled out cost no reference fetch.
    """

    def __init__(self, start: int, length: int, min_baseq: int, reference=None):
        self.start, self.n, self.min_baseq = start, length, min_baseq
        self.reference, self.ref_codes = reference, None
        self.reads_without_quality = 0
        self.out = np.zeros((length, len(PILEUP_CHANNELS)), np.float32)
        self.flat = self.out.reshape(-1)
        self.touched = np.zeros(length, bool)  # rows with a counted base or a deletion

    @staticmethod
    def _expand(starts: np.ndarray, lens: np.ndarray) -> np.ndarray:
        """Concatenated ranges ``[s, s + n)`` for every (s, n), without a Python loop."""
        total = int(lens.sum())
        if total == 0:
            return np.empty(0, np.int64)
        block_first = np.cumsum(lens) - lens  # index of each block's first element
        return np.arange(total, dtype=np.int64) + np.repeat(starts - block_first, lens)

    def _add(self, pos: np.ndarray, channel: int | np.ndarray, weights=None) -> None:
        """out[pos, channel] += weights (1 each by default), duplicates summed."""
        if len(pos) == 0:
            return
        key = pos * len(PILEUP_CHANNELS) + channel
        lo = int(key.min())
        span = int(key.max()) - lo + 1
        if span <= 8 * len(key):  # dense: one bincount over the touched span
            self.flat[lo:lo + span] += np.bincount(key - lo, weights, minlength=span)
        else:  # sparse (few reads over a long region): group the keys instead
            uniq, inverse = np.unique(key, return_inverse=True)
            self.flat[uniq] += np.bincount(inverse, weights)

    def add_matches(self, seq: np.ndarray, qual: np.ndarray, ref0: list, q0: list, lens: list,
                    plus: list) -> None:
        lens_b = np.asarray(lens, np.int64)
        q0_b = np.asarray(q0, np.int64)
        q_idx = self._expand(q0_b, lens_b)
        pos = q_idx + np.repeat(np.asarray(ref0, np.int64) - q0_b, lens_b) - self.start
        base = _BASE_CODE[seq[q_idx]]
        same = np.flatnonzero(base == _SAME_AS_REFERENCE)
        if len(same):
            base[same] = self._reference_codes()[np.clip(pos[same], 0, self.n - 1)]
        q = qual[q_idx]
        keep = (pos >= 0) & (pos < self.n) & (base < 4) & (q >= self.min_baseq)
        fwd = np.repeat(np.asarray(plus, bool), lens_b)[keep]
        pos, base, q = pos[keep], base[keep], q[keep]
        self._add(pos, CHANNEL_INDEX["A"] + base.astype(np.int64))
        self._add(pos, CHANNEL_INDEX["mean_baseq"], q)
        self._add(pos[fwd], CHANNEL_INDEX["strand_plus_frac"])
        self.touched[pos] = True

    def _reference_codes(self) -> np.ndarray:
        """The region's reference bases as codes A0 C1 G2 T3 (4: N or another code, which an
        '=' base over it is not counted as, as an N read base is not)."""
        if self.ref_codes is None:
            if self.reference is None:
                raise _NoReferenceForEquals
            self.ref_codes = _BASE_CODE[np.frombuffer(self.reference().upper(), np.uint8)]
            self.ref_codes[self.ref_codes == _SAME_AS_REFERENCE] = 4
        return self.ref_codes

    def add_deletions(self, ref0: list, lens: list, plus: list) -> None:
        lens_b = np.asarray(lens, np.int64)
        pos = self._expand(np.asarray(ref0, np.int64), lens_b) - self.start
        keep = (pos >= 0) & (pos < self.n)
        fwd = np.repeat(np.asarray(plus, bool), lens_b)[keep]
        pos = pos[keep]
        self._add(pos, CHANNEL_INDEX["del"])
        self._add(pos[fwd], CHANNEL_INDEX["strand_plus_frac"])
        self.touched[pos] = True

    def channels(self) -> np.ndarray:
        """Turn the sums at touched rows into depth, mean quality and strand fraction."""
        rows = np.flatnonzero(self.touched)  # sorted, as np.unique gave them
        if len(rows) == 0:
            return self.out
        block = self.out[rows]
        n_bases = block[:, 1:5].sum(axis=1)
        depth = n_bases + block[:, 5]
        block[:, 0] = depth
        block[:, 6] = np.divide(block[:, 6], n_bases, out=np.zeros_like(n_bases),
                                where=n_bases > 0)
        block[:, 7] = np.divide(block[:, 7], depth, out=np.zeros_like(depth), where=depth > 0)
        self.out[rows] = block
        return self.out


class _Batch:
    """Aligned blocks of a batch of reads, with their sequences and qualities concatenated."""

    def __init__(self):
        self.seqs: list[str] = []
        self.quals: list = []
        self.n_bases = 0
        self.m_ref: list[int] = []
        self.m_q: list[int] = []
        self.m_len: list[int] = []
        self.m_plus: list[bool] = []
        self.d_ref: list[int] = []
        self.d_len: list[int] = []
        self.d_plus: list[bool] = []
        self.without_quality = 0  # reads stored without base qualities (QUAL '*')

    def add(self, read: pysam.AlignedSegment, seq: str, cigar: list) -> None:
        plus = not read.is_reverse
        rpos, qpos = read.reference_start, self.n_bases
        for op, n in cigar:
            if op in _MATCH_OPS:
                self.m_ref.append(rpos)
                self.m_q.append(qpos)
                self.m_len.append(n)
                self.m_plus.append(plus)
                rpos += n
                qpos += n
            elif op in _QUERY_ONLY_OPS:
                qpos += n
            elif op == _DEL:
                self.d_ref.append(rpos)
                self.d_len.append(n)
                self.d_plus.append(plus)
                rpos += n
            elif op == _REF_SKIP:
                rpos += n
        qual = read.query_qualities
        self.seqs.append(seq)
        if qual is None:
            self.without_quality += 1
        self.quals.append(qual if qual is not None else bytes(len(seq)))
        self.n_bases += len(seq)

    def flush_into(self, acc: _Accumulator) -> None:
        if self.m_len:
            seq = np.frombuffer("".join(self.seqs).encode("ascii"), np.uint8)
            qual = np.frombuffer(b"".join(self.quals), np.uint8)
            acc.add_matches(seq, qual, self.m_ref, self.m_q, self.m_len, self.m_plus)
        if self.d_len:
            acc.add_deletions(self.d_ref, self.d_len, self.d_plus)
        acc.reads_without_quality += self.without_quality
        self.__init__()


def pileup_channels(path: str | Path, region: Region | str, reference: str | Path | None, *,
                    min_mapq: int = 0, min_baseq: int = 13,
                    exclude_flags: int = DEFAULT_EXCLUDE_FLAGS,
                    include_flags: int = 0) -> np.ndarray:
    """Per-base pileup channels of a region (see the module docstring for their meaning).

    Args:
        path: sorted BAM or CRAM (the index is built when missing, see :func:`open_alignment`).
        region: a :class:`Region` (0-based half-open) or a region string (1-based, inclusive).
        reference: the FASTA the reads were aligned to; it must contain the region
            (required for CRAM, and for reads with bases stored as ``=``; may be None for
            other BAMs).
        min_mapq: minimum mapping quality of a read.
        min_baseq: minimum base quality of a counted A/C/G/T base (deletions are exempt).
        exclude_flags: skip reads with any of these flag bits (default 0xF04).
        include_flags: keep only reads with all of these flag bits.

    Returns:
        float32 ``[L, len(PILEUP_CHANNELS)]`` raw counts/means, L = region length.
    """
    path = Path(path)
    with _closing_quietly(open_alignment(path, reference)) as af:
        r = _resolve_region(af, region, path)
        if reference is not None:
            _check_reference(reference, r)
        acc = _Accumulator(r.start, len(r), min_baseq,
                           None if reference is None else lambda: _fetch(reference, r))
        if len(r) == 0:
            return acc.channels()
        try:
            with quiet_htslib():  # a failure is explained below, in one line
                _pile(af.fetch(r.contig, r.start, r.end), acc, min_mapq, exclude_flags,
                      include_flags)
        except _NoReferenceForEquals:
            raise InputError(f"{path}: reads in {r} store bases as '=' (the same as the "
                             "reference, samtools calmd -e), which only the reference can "
                             "tell: give the FASTA the reads were aligned to (reference=, "
                             "--reference)") from None
        except OSError as exc:
            wrong = _cram_reference_mismatch(af, reference, r.contig) if af.is_cram else None
            idx = _index_file(path, "cram" if af.is_cram else "bam")
            index = f", or its index {idx.name} is not its own" if idx is not None else ""
            raise InputError(wrong or f"{path}: truncated or corrupt alignment data in {r}"
                             f"{index} ({exc})") from None
    if acc.reads_without_quality and min_baseq > 0:
        warnings.warn(f"{path}: {acc.reads_without_quality:,} reads in {r} have no base "
                      f"qualities (QUAL '*'); they count as quality 0, below min_baseq "
                      f"{min_baseq}, so only their deletions are counted (min_baseq 0, "
                      "--min-baseq 0 on the command line, counts their bases)", PileupWarning,
                      stacklevel=2)
    return acc.channels()


class PileupWarning(UserWarning):
    """Something about the reads that leaves bases uncounted (:func:`pileup_channels`)."""


def _cram_reference_mismatch(af: pysam.AlignmentFile, reference, contig: str) -> str | None:
    """Why a CRAM failed to decode ``contig`` when the reason is the reference: the header's
    ``@SQ M5`` (MD5 of the upper-case sequence) against ``reference``'s; None when they agree
    or the header has no M5 (the data itself is then the suspect)."""
    import hashlib

    sq = next((s for s in af.header.to_dict().get("SQ", []) if s.get("SN") == contig), {})
    want = sq.get("M5", "").lower()
    if not want or reference is None:
        return None
    with open_reference(reference) as fa:
        got = hashlib.md5(fa.fetch(contig, 0, fa.lengths[contig]).upper()).hexdigest()
    if got == want:
        return None
    return (f"{af.filename.decode()} was compressed against another reference: {contig} in "
            f"{reference} has MD5 {got}, the CRAM's header says {want} (@SQ M5); give the FASTA "
            "it was made with as --reference")


def _pile(reads, acc: _Accumulator, min_mapq: int, exclude_flags: int,
          include_flags: int) -> None:
    """Filter the reads and feed their aligned blocks to ``acc`` in batches."""
    batch = _Batch()
    for read in reads:
        flag = read.flag
        if flag & exclude_flags or (flag & include_flags) != include_flags \
                or read.mapping_quality < min_mapq:
            continue
        seq, cigar = read.query_sequence, read.cigartuples
        if seq is None or not cigar:
            continue
        batch.add(read, seq, cigar)
        if batch.n_bases >= _FLUSH_BASES:
            batch.flush_into(acc)
    batch.flush_into(acc)
