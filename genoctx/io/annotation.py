"""Gene annotations (GenBank, GFF3, GTF) and the per-base label tracks trained on.

Everything is 0-based half-open inside; the 1-based inclusive coordinates of GFF/GTF are converted
in :func:`_gff_interval` only (Biopython converts GenBank locations).

:func:`read_features` turns a file into :class:`Feature` objects, one per biological unit:
``gene``; one transcript feature (``mRNA``, ``tRNA``, ``rRNA``, ``ncRNA``, or ``transcript`` for
a transcript that cannot be classed) whose ``parts`` are its exons; per transcript the derived
``exon``, ``intron``, ``five_prime_UTR`` and ``three_prime_UTR`` features (``parts`` again); and
one ``CDS`` feature per coding sequence (all its segments in ``parts``). ``parts`` are always in
transcription order (5'→3' on the feature's strand).

Deliberate handling (the labels of the whole project depend on it):

* **Pseudogenes** — a feature flagged ``/pseudo`` or ``/pseudogene`` (GenBank), typed
  ``pseudogene``/``pseudogenic_*`` or with ``pseudo=true`` or a ``*pseudogene`` biotype (GFF3/GTF),
  or belonging to such a gene, is ``pseudo``. Its bases are marked ``ignore``: a pseudogene is
  neither a gene a caller should find nor intergenic sequence. A GenBank ``gene`` with
  ``/pseudo`` and no CDS (most pseudogenes of E. coli K-12) is ignored over its whole span.
* **Joined CDS** — a CDS with several segments is ``joined`` (not ground truth, bases ``ignore``)
  when it cannot be ordinary splicing: in a prokaryotic GenBank record (taxonomy Bacteria or
  Archaea) every multi-segment CDS (ribosomal slippage, programmed frameshifts, origin
  spanning); elsewhere a CDS whose segments mix strands, run backwards (origin-spanning in a
  circular record, trans-splicing) or are separated by less than :data:`MIN_INTRON` bases.
* **Origin-spanning features** of circular records keep their parts in transcription order
  (``join(4641600..4641652,1..50)`` gives ``[(4641599, 4641652), (0, 50)]``); GFF3 features on a
  circular region (``Is_circular=true``) that end past the region's length are split likewise.
  Their ``start``/``end`` are the envelope of the parts; use ``parts``.
* **Partial CDS** (``<``/``>`` in GenBank, ``partial``/``start_range``/``end_range`` in GFF3) are
  kept and flagged ``partial``; their first codon position comes from ``/codon_start`` (GenBank)
  or the phase column (GFF3/GTF).
* **Codon position** ("phase" in the tracks) of a base is its position 0/1/2 within its codon,
  counted along the CDS's own strand. GenBank: from ``/codon_start`` and the cumulative length of
  the segments. GFF3/GTF: from each segment's own phase column (which also covers annotated
  frameshifts). Where two CDS on the same strand give a base different codon positions (frame
  overlaps, e.g. ATGA stop/start overlaps in operons) the base is marked ``ignore``.
* **GFF3 Parent chains** gene → mRNA → exon/CDS/UTR, with several parents per line (FlyBase) and
  ``protein``/``polypeptide`` parents skipped (TAIR). A CDS whose parent is a gene (NCBI
  prokaryotes) is its own transcript without exons. GTF groups by ``transcript_id``; its
  ``stop_codon`` rows are merged into the CDS (GTF CDS rows exclude the stop codon).
* **Introns** are derived between the merged exons of a transcript (between CDS segments when a
  spliced transcript has no exon rows); ``intron`` rows of the file are not read (they are
  often RNA-seq evidence, not gene models). Joined transcripts get no introns.
* **UTR** = exons minus the CDS envelope: 5' UTR upstream of it on the strand, 3' downstream.
* An ``mRNA``-like transcript without any CDS (TAIR ``mRNA_TE_gene``, chunk-truncated models)
  and any transcript of unknown type without CDS cannot be labelled: its exons are ``ignore``;
  so is a CDS without a strand.

Class priority in :func:`label_tracks` where features overlap:
CDS > rRNA > tRNA > ncRNA > UTR > intron > intergenic; at equal priority the + strand wins.
"""

from __future__ import annotations

import io
import re
import urllib.parse
from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass, field
from itertools import pairwise
from pathlib import Path

import numpy as np

from genoctx.errors import InputError

CLASSES: tuple[str, ...] = ("intergenic", "CDS", "intron", "UTR", "tRNA", "rRNA", "ncRNA")
CLASS_INDEX = {name: i for i, name in enumerate(CLASSES)}
# Painted lowest priority first, so a later kind overwrites an earlier one.
_PAINT_ORDER = ("intron", "UTR", "ncRNA", "tRNA", "rRNA", "CDS")
MIN_INTRON = 10  # shortest real introns are ~20 bp (A. thaliana); frameshift joins are 0-2 bp
_UTR_KINDS = ("five_prime_UTR", "three_prime_UTR")
_GENBANK_SUFFIXES = (".gb", ".gbk", ".gbff", ".genbank", ".gbf")
_GFF_SUFFIXES = (".gff", ".gff3")
_GTF_SUFFIXES = (".gtf",)


@dataclass
class Feature:
    """One annotated feature, 0-based half-open; ``parts`` in transcription order.

    ``kind``: ``gene``, ``CDS``, ``mRNA``, ``tRNA``, ``rRNA``, ``ncRNA``, ``transcript`` (cannot
    be classed), ``exon``, ``intron``, ``five_prime_UTR``, ``three_prime_UTR``. ``strand`` is
    +1/-1 (0: unstranded or mixed). ``phase`` is the number of bases before the first complete
    codon of the first part (GFF phase; GenBank ``codon_start - 1``); ``part_phases`` holds the
    phase of every part when the file gives it (GFF3/GTF), else None (codon positions then
    follow the cumulative length). ``attributes`` keeps the source type under ``"type"`` and the
    raw GFF3/GTF attributes (strings) or GenBank qualifiers (lists of strings).
    """

    contig: str
    start: int
    end: int
    strand: int
    kind: str
    parts: list[tuple[int, int]] = field(default_factory=list)
    phase: int = 0
    gene_id: str | None = None
    transcript_id: str | None = None
    pseudo: bool = False
    joined: bool = False
    attributes: dict = field(default_factory=dict)
    partial: bool = False
    part_phases: list[int] | None = None


@dataclass
class Gene:
    """A coding gene for gene-level evaluation (one per distinct CDS)."""

    contig: str
    start: int
    end: int
    strand: int
    kind: str
    pseudo: bool
    joined: bool
    partial: bool
    id: str
    parts: list[tuple[int, int]] = field(default_factory=list)

    @property
    def stop(self) -> int:
        """0-based position of the last base of the stop codon, on the gene's strand.

        For a 3'-partial gene this is the last annotated base, not a stop codon.
        """
        last = self.parts[-1] if self.parts else (self.start, self.end)
        return last[1] - 1 if self.strand > 0 else last[0]


@dataclass
class LabelTracks:
    """Per-base labels of one contig (see the module docstring for the rules).

    ``klass`` is strand-less; with ``rna_strand`` and the two phase tracks it maps onto the
    stranded classes of the annotation head. ``klass`` at ``ignore`` bases is meaningless.
    """

    contig: str
    length: int
    cds_phase_plus: np.ndarray   # int8 [L]: -1 no + strand CDS, else codon position 0/1/2
    cds_phase_minus: np.ndarray  # int8 [L]: same on the - strand, counted along the - strand
    klass: np.ndarray            # uint8 [L]: index into CLASSES
    rna_strand: np.ndarray       # int8 [L]: strand (+1/-1) of the feature that set klass, 0 none
    exon: np.ndarray             # bool [L]: inside an exon of an annotated transcript
    intron: np.ndarray           # bool [L]: inside an intron of an annotated transcript
    ignore: np.ndarray           # bool [L]: not ground truth (pseudo, joined, frame conflicts)


# ----------------------------------------------------------------------------- file handling

def _open_text(path: str | Path) -> io.TextIOBase:
    path = Path(path)
    if not path.is_file():
        raise InputError(f"annotation file {path} does not exist")
    from genoctx.io.fasta import open_text

    return open_text(path)  # plain, gzip, bgzip, xz or bzip2


def annotation_format(path: str | Path) -> str:
    """``genbank``, ``gff3`` or ``gtf``: from the file name, else from the first lines."""
    return _sniff_format(Path(path))


def _sniff_format(path: Path) -> str:
    name = re.sub(r"\.(gz|bgz|xz|bz2)$", "", path.name.lower())
    for fmt, suffixes in (("genbank", _GENBANK_SUFFIXES), ("gff3", _GFF_SUFFIXES),
                          ("gtf", _GTF_SUFFIXES)):
        if name.endswith(suffixes):
            return fmt
    with _open_text(path) as fh:
        for line in fh:
            if line.startswith("LOCUS"):
                return "genbank"
            if line.startswith("##gff-version"):
                return "gff3"
            if line.strip() and not line.startswith("#"):
                cols = line.rstrip("\n").split("\t")
                if len(cols) == 9:
                    return "gtf" if re.search(r'\w+ "', cols[8]) else "gff3"
                break
    raise InputError(f"{path}: not a GenBank, GFF3 or GTF file (name it .gbff/.gff3/.gtf)")


def read_features(path: str | Path) -> dict[str, list[Feature]]:
    """Read GenBank (.gb/.gbk/.gbff), GFF3 or GTF (gzip, xz or bzip2) into features per contig.

    Args:
        path: the annotation file; the format comes from the name, else from the content.

    Returns:
        contig name (GenBank: accession.version) → features sorted by (start, end, kind).
    """
    path = Path(path)
    fmt = _sniff_format(path)
    by_contig = _read_genbank(path) if fmt == "genbank" else _read_gff(path, gtf=fmt == "gtf")
    for feats in by_contig.values():
        feats.sort(key=lambda f: (f.start, f.end, f.kind))
    return by_contig


def read_sequences_genbank(path: str | Path) -> Iterator[tuple[str, bytes]]:
    """Yield (accession.version, sequence bytes) for every record of a GenBank file (gz ok)."""
    from Bio.GenBank.Scanner import GenBankScanner

    with _open_text(path) as fh:
        try:
            for rec in GenBankScanner().parse_records(fh, do_features=False):
                yield rec.id, bytes(rec.seq)
        except Exception as exc:  # Biopython raises ValueError, UndefinedSequenceError, ...
            raise InputError(f"{path}: cannot read GenBank sequence ({exc}); "
                             "is it a GenBank flat file with an ORIGIN section?") from exc


def flatfile_topologies(path: str | Path) -> list[bool]:
    """Whether each record of a GenBank or EMBL file (gz ok), in file order, says it is
    ``circular`` (GenBank's LOCUS line, EMBL's ID line)."""
    with _open_text(path) as fh:
        return [" circular" in line.replace(";", " ").lower()
                for line in fh if line.startswith(("LOCUS ", "ID "))]


def read_sequences_embl(path: str | Path) -> Iterator[tuple[str, bytes]]:
    """Yield (accession.version, sequence bytes) for every record of an EMBL file (gz ok)."""
    from Bio import SeqIO

    with _open_text(path) as fh:
        try:
            for rec in SeqIO.parse(fh, "embl"):
                yield rec.id, bytes(rec.seq)
        except Exception as exc:  # Biopython raises ValueError, UndefinedSequenceError, ...
            raise InputError(f"{path}: cannot read EMBL sequence ({exc}); is it an EMBL flat "
                             "file with a sequence (SQ) section?") from exc


def read_sequences(path: str | Path, *, unique: bool = True) -> list[tuple[str, bytes]]:
    """``(name, sequence)`` of every record of a GenBank, EMBL (accession.version) or FASTA file
    (any compression genoctx reads), the format told from the content; ``unique=False`` lets
    FASTA names repeat."""
    from genoctx.io.fasta import FORMAT_NAMES, iter_records, sniff_format

    fmt, _ = sniff_format(path)
    if fmt == "genbank":
        return list(read_sequences_genbank(path))
    if fmt == "embl":
        return list(read_sequences_embl(path))
    if fmt == "fasta":
        return list(iter_records(path, unique=unique))
    raise InputError(f"{path} is {FORMAT_NAMES[fmt]}, not FASTA, GenBank or EMBL")


def read_genes(path: str | Path, *, include_pseudo: bool = False,
               include_joined: bool = False) -> list[Gene]:
    """Coding genes for gene-level evaluation: one :class:`Gene` per distinct CDS.

    Args:
        path: GenBank, GFF3 or GTF file.
        include_pseudo: keep CDS flagged pseudo (not ground truth; off by default).
        include_joined: keep joined CDS (slippage, origin-spanning; off by default).

    Returns:
        genes in file contig order, sorted by start within a contig; isoforms sharing the same
        CDS segments appear once.
    """
    genes: list[Gene] = []
    seen: set = set()
    for contig, feats in read_features(path).items():
        for f in feats:
            if f.kind != "CDS" or (f.pseudo and not include_pseudo) or \
                    (f.joined and not include_joined):
                continue
            key = (contig, f.strand, tuple(f.parts))
            if key in seen:
                continue
            seen.add(key)
            gid = f.transcript_id or f.gene_id or f"{contig}:{f.start + 1}-{f.end}"
            genes.append(Gene(contig=contig, start=f.start, end=f.end, strand=f.strand,
                              kind="CDS", pseudo=f.pseudo, joined=f.joined, partial=f.partial,
                              id=gid, parts=list(f.parts)))
    return genes


# ----------------------------------------------------------------------------- intervals

def merge_intervals(parts: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """Ascending, with overlapping or abutting intervals fused."""
    out: list[tuple[int, int]] = []
    for s, e in sorted(parts):
        if out and s <= out[-1][1]:
            out[-1] = (out[-1][0], max(e, out[-1][1]))
        else:
            out.append((s, e))
    return out


def _stranded(parts: list[tuple[int, int]], strand: int) -> list[tuple[int, int]]:
    return sorted(parts, reverse=strand < 0)


def is_clean_splice(parts: list[tuple[int, int]], strand: int) -> bool:
    """Parts (transcription order) that can only be ordinary splicing: one strand, moving
    forward, separated by introns of at least MIN_INTRON bases."""
    if strand == 0:
        return False
    for a, b in pairwise(parts):
        gap = b[0] - a[1] if strand > 0 else a[0] - b[1]
        if gap < MIN_INTRON:
            return False
    return True


def _utr_parts(exons, cds, strand):
    """(5' UTR, 3' UTR) parts: exons minus the CDS envelope, each in transcription order."""
    lo, hi = min(s for s, _ in cds), max(e for _, e in cds)
    up = [(s, min(e, lo)) for s, e in exons if s < lo]
    down = [(max(s, hi), e) for s, e in exons if e > hi]
    five, three = (up, down) if strand > 0 else (down, up)
    return _stranded(five, strand), _stranded(three, strand)


def _rna_class(name: str | None) -> str | None:
    """'tRNA' / 'rRNA' / 'ncRNA' for an RNA feature type or biotype, else None."""
    if not name:
        return None
    n = name.lower()
    if n in ("mrna", "protein_coding"):
        return None
    if "trna" in n:
        return "tRNA"
    if "rrna" in n:
        return "rRNA"
    if n.endswith("rna") or n in ("nc_primary_transcript", "lincrna", "antisense", "ribozyme"):
        return "ncRNA"
    return None


# ----------------------------------------------------------------------------- transcripts

@dataclass
class _Transcript:
    """A transcript being assembled from its rows (GFF3/GTF) or its feature (GenBank)."""

    contig: str
    tid: str
    strand: int
    ttype: str | None = None             # the source type of the transcript row, if any
    biotypes: tuple[str, ...] = ()
    gene_id: str | None = None
    has_row: bool = False                # a real transcript row exists (not a gene, not absent)
    exons: list = field(default_factory=list)
    utrs: list = field(default_factory=list)
    cds: dict = field(default_factory=lambda: defaultdict(list))  # cds id -> [(s, e, phase)]
    stops: list = field(default_factory=list)                    # GTF stop_codon rows
    cds_ends: dict = field(default_factory=dict)  # cds id -> partial [left, right, unplaced]
    pseudo: bool = False
    partial: bool = False
    ordered: list | None = None          # exon parts already in transcription order (GenBank)
    joined: bool = False
    origin: int = 0                      # start of an origin-spanning transcript (+ strand view)
    attributes: dict = field(default_factory=dict)


_BIG = 1 << 62  # sort modulus: coordinates below ``origin`` sort after those above it


def _transcript_kind(t: _Transcript, coding: bool) -> str:
    if coding:
        return "mRNA"
    for name in (t.ttype, *t.biotypes):
        cls = _rna_class(name)
        if cls:
            return cls
    return "transcript"  # mRNA-like without CDS, or unknown: cannot be labelled


def _feature(t: _Transcript, kind: str, parts, **kw) -> Feature:
    lo, hi = min(s for s, _ in parts), max(e for _, e in parts)
    base = {"contig": t.contig, "start": lo, "end": hi, "strand": t.strand, "kind": kind,
            "parts": list(parts), "gene_id": t.gene_id, "transcript_id": t.tid,
            "pseudo": t.pseudo, "partial": t.partial, "attributes": t.attributes}
    base.update(kw)
    return Feature(**base)


def _cds_features(t: _Transcript, gtf: bool) -> list[Feature]:
    out = []
    for cid, segs in t.cds.items():
        if gtf:
            segs = _fuse_stop_codons(segs, t.stops, t.strand)
        segs = sorted(segs, key=lambda x: (x[0] - t.origin) % _BIG, reverse=t.strand < 0)
        parts = [(s, e) for s, e, _ in segs]
        phases = [ph for _, _, ph in segs]
        if None in phases:  # a CDS phase of "." (invalid GFF3, but seen): count along the CDS
            phases = None
        joined = len(parts) > 1 and not is_clean_splice(parts, t.strand)
        left, right, unplaced = t.cds_ends.get(cid, (False, False, False))
        if unplaced and not (left or right):  # partial=true at no named end: both may be
            left = right = True
        ends = _partial_ends(left, right, t.strand)
        extra = {"attributes": {**t.attributes, **ends}} if ends else {}
        out.append(_feature(t, "CDS", parts, phase=phases[0] if phases else 0, part_phases=phases,
                            joined=joined or t.joined, transcript_id=cid or t.tid, **extra))
    return out


def _fuse_stop_codons(segs, stops, strand):
    """GTF CDS rows exclude the stop codon: add each stop_codon row, fused onto an abutting
    CDS segment (keeping that segment's phase) or as a part of its own."""
    segs = list(segs)
    for s, e, ph in stops:
        for i, (cs, ce, cph) in enumerate(segs):
            if (strand > 0 and cs <= s <= ce) or (strand < 0 and cs <= e <= ce):
                segs[i] = (min(cs, s), max(ce, e), cph)
                break
        else:
            segs.append((s, e, ph))
    return segs


def _emit_transcript(t: _Transcript, *, emit_cds: bool, gtf: bool = False) -> list[Feature]:
    """The transcript feature and its exon / intron / UTR (and, for GFF, CDS) features."""
    cds_all = [(s, e) for segs in t.cds.values() for s, e, _ in segs] + \
        [(s, e) for s, e, _ in t.stops]
    coding = bool(cds_all)
    kind = _transcript_kind(t, coding)
    if t.ordered is not None:
        exons = t.ordered
    elif t.exons or t.utrs:
        exons = _stranded(merge_intervals(t.exons or (t.utrs + cds_all)), t.strand)
    elif coding and t.has_row:
        exons = _stranded(merge_intervals(cds_all), t.strand)
    else:
        exons = []
    out = _cds_features(t, gtf) if emit_cds else []
    if not exons:  # a CDS hung directly off a gene (prokaryote GFF3): no transcript
        return out
    out.append(_feature(t, kind, exons, joined=t.joined))
    out.append(_feature(t, "exon", exons, joined=t.joined))
    if not t.joined and t.strand != 0:
        asc = merge_intervals(exons)
        introns = [(a[1], b[0]) for a, b in pairwise(asc)]
        if introns:
            out.append(_feature(t, "intron", _stranded(introns, t.strand)))
        if coding:
            for utr_kind, parts in zip(_UTR_KINDS, _utr_parts(asc, cds_all, t.strand)):
                if parts:
                    out.append(_feature(t, utr_kind, parts))
    return out


# ----------------------------------------------------------------------------- GenBank

def _genbank_location(loc) -> tuple[list[tuple[int, int]], int, bool]:
    """(parts in transcription order, strand (0 when mixed), partial)."""
    from Bio.SeqFeature import ExactPosition

    parts = [(int(p.start), int(p.end)) for p in loc.parts]
    strands = {p.strand for p in loc.parts}
    strand = strands.pop() if len(strands) == 1 else 0
    partial = any(type(pos) is not ExactPosition for p in loc.parts for pos in (p.start, p.end))
    return parts, int(strand or 0), partial


def _genbank_partial_ends(loc, strand: int) -> dict:
    """``{"partial5": ..., "partial3": ...}`` of a partial location (parts in transcription
    order): the 5' end is the first part's start (its end on the minus strand), the 3' end the
    last part's end (its start)."""
    from Bio.SeqFeature import ExactPosition

    first, last = loc.parts[0], loc.parts[-1]
    five = first.end if strand < 0 else first.start
    three = last.start if strand < 0 else last.end
    return {"partial5": type(five) is not ExactPosition,
            "partial3": type(three) is not ExactPosition}


def _first(q: dict, key: str) -> str | None:
    v = q.get(key)
    return v[0] if v else None


def _read_genbank(path: Path) -> dict[str, list[Feature]]:
    from Bio import SeqIO

    out: dict[str, list[Feature]] = {}
    with _open_text(path) as fh:
        try:
            for rec in SeqIO.parse(fh, "genbank"):
                out.setdefault(rec.id, []).extend(_genbank_record_features(rec))
        except (ValueError, AssertionError, IndexError) as exc:
            raise InputError(f"{path}: not a valid GenBank file ({exc})") from exc
    if not out:
        raise InputError(f"{path}: no GenBank records found (expected 'LOCUS' lines)")
    return out


def _genbank_record_features(rec) -> list[Feature]:
    prokaryote = any(t in ("Bacteria", "Archaea") for t in rec.annotations.get("taxonomy", []))
    pseudo_genes = {(_first(f.qualifiers, "locus_tag") or _first(f.qualifiers, "gene"))
                    for f in rec.features if f.type == "gene"
                    and ("pseudo" in f.qualifiers or "pseudogene" in f.qualifiers)}
    pseudo_genes.discard(None)
    feats: list[Feature] = []
    transcripts: list[_Transcript] = []
    cds_by_gene: dict[str | None, list[Feature]] = defaultdict(list)
    for f in rec.features:
        q = f.qualifiers
        parts, strand, partial = _genbank_location(f.location)
        gid = _first(q, "locus_tag") or _first(q, "gene")
        pseudo = "pseudo" in q or "pseudogene" in q or gid in pseudo_genes
        joined = len(parts) > 1 and (prokaryote or not is_clean_splice(parts, strand))
        common = {"contig": rec.id, "start": min(s for s, _ in parts),
                  "end": max(e for _, e in parts), "strand": strand, "parts": parts,
                  "gene_id": gid, "pseudo": pseudo, "joined": joined, "partial": partial,
                  "attributes": {"type": f.type, **q}}
        if f.type == "gene":
            feats.append(Feature(kind="gene", **common))
        elif f.type == "CDS":
            tid = _first(q, "protein_id") or gid
            if partial:  # which ends: '<' / '>' at the first / last part's 5' / 3' end
                common["attributes"].update(_genbank_partial_ends(f.location, strand))
            cds = Feature(kind="CDS", phase=int(_first(q, "codon_start") or 1) - 1,
                          transcript_id=tid, **common)
            feats.append(cds)
            cds_by_gene[gid].append(cds)
        elif f.type in ("5'UTR", "3'UTR"):
            kind = "five_prime_UTR" if f.type == "5'UTR" else "three_prime_UTR"
            feats.append(Feature(kind=kind, **common))
        elif f.type == "mRNA" or _rna_class(f.type):
            transcripts.append(_Transcript(
                contig=rec.id, tid=_first(q, "transcript_id") or gid or f"{f.type}:{parts[0][0]}",
                strand=strand, ttype=f.type, biotypes=tuple(q.get("ncRNA_class", ())),
                gene_id=gid, has_row=True, pseudo=pseudo, partial=partial, ordered=parts,
                joined=joined, attributes=common["attributes"]))
    for t in transcripts:
        lo, hi = min(s for s, _ in t.ordered), max(e for _, e in t.ordered)
        for c in cds_by_gene.get(t.gene_id, ()) if t.ttype == "mRNA" else ():
            if lo <= c.start and c.end <= hi and c.strand == t.strand:
                t.cds[c.transcript_id].extend((s, e, 0) for s, e in c.parts)
        feats.extend(_emit_transcript(t, emit_cds=False))
    return feats


# ----------------------------------------------------------------------------- GFF3 / GTF

_EXON_TYPES = {"exon", "pseudogenic_exon", "noncoding_exon"}
_UTR_TYPES = {"five_prime_UTR", "three_prime_UTR", "UTR", "5UTR", "3UTR", "UTR5", "UTR3",
              "five_prime_utr", "three_prime_utr"}
_PART_TYPES = _EXON_TYPES | _UTR_TYPES | {"CDS", "start_codon", "stop_codon", "intron"}
_PROTEIN_TYPES = {"protein", "polypeptide", "mature_protein_region"}
_MRNA_LIKE = {"mRNA", "transcript", "pseudogenic_transcript", "mRNA_TE_gene",
              "primary_transcript", "processed_transcript", "nc_primary_transcript"}
_BIOTYPE_KEYS = ("transcript_biotype", "transcript_type", "biotype", "gene_biotype", "gene_type")
_STRANDS = {"+": 1, "-": -1, ".": 0, "?": 0}


@dataclass
class _Row:
    contig: str
    type: str
    start: int
    end: int
    strand: int
    phase: int | None
    attrs: dict
    lineno: int


def _gff_interval(start: str, end: str, where: str) -> tuple[int, int]:
    """The one place GFF/GTF 1-based inclusive coordinates become 0-based half-open."""
    try:
        s, e = int(start), int(end)
    except ValueError:
        raise InputError(f"{where}: start/end must be integers, got {start!r}, {end!r}") from None
    if s < 1 or e < s:
        raise InputError(f"{where}: invalid interval {start}..{end} (1-based, start <= end)")
    return s - 1, e


def _parse_attrs(text: str, gtf: bool) -> dict:
    attrs: dict = {}
    for item in text.strip().split(";"):
        item = item.strip()
        if not item:
            continue
        if gtf:
            key, _, value = item.partition(" ")
            value = value.strip().strip('"')
            attrs[key] = value if key not in attrs else attrs[key] + "," + value
        else:
            key, _, value = item.partition("=")
            attrs[urllib.parse.unquote(key.strip())] = value.strip()
    return attrs


def annotation_lengths(path: str | Path) -> dict[str, int]:
    """Contig lengths an annotation file states (:func:`stated_sequences`)."""
    return stated_sequences(path)[0]


def stated_sequences(path: str | Path) -> tuple[dict[str, int], set[str]]:
    """Contig lengths and circular contigs an annotation file states: GenBank LOCUS lines
    (length and topology; a record need not hold its bases: a CONTIG line instead of ORIGIN
    gives the length all the same), or GFF3 ``##sequence-region`` lines and ``region`` /
    ``chromosome`` / ``source`` rows (``Is_circular=true``); empty when a GFF3/GTF states
    none."""
    path = Path(path)
    fmt = _sniff_format(path)
    if fmt != "genbank":
        _, lengths, circular = _gff_rows(path, gtf=fmt == "gtf")
        return lengths, circular
    from Bio.GenBank.Scanner import GenBankScanner

    lengths, circular = {}, set()
    with _open_text(path) as fh:
        try:
            for rec in GenBankScanner().parse_records(fh, do_features=False):
                lengths.setdefault(rec.id, len(rec.seq))
                if rec.annotations.get("topology") == "circular":
                    circular.add(rec.id)
        except Exception as exc:  # noqa: BLE001 - Biopython raises ValueError, IndexError, ...
            raise InputError(f"{path}: not a valid GenBank file ({exc})") from None
    return lengths, circular


def _gff_rows(path: Path, gtf: bool):
    """(rows, region lengths, circular contigs)."""
    rows: list[_Row] = []
    lengths: dict[str, int] = {}
    circular: set[str] = set()
    # GFF3 escapes a seqid's reserved characters (PanSN's '#', '=', ';', non-ASCII) as %XX,
    # as genoctx's own writer does; GTF has no escaping
    seqid = (lambda text: text) if gtf else urllib.parse.unquote
    with _open_text(path) as fh:
        for lineno, line in enumerate(fh, 1):
            if line.startswith("##FASTA"):
                break
            if line.startswith("##sequence-region"):
                bits = line.split()
                if len(bits) == 4 and bits[3].isdigit():
                    lengths[seqid(bits[1])] = int(bits[3])
                continue
            if not line.strip() or line.startswith("#"):
                continue
            cols = line.rstrip("\n").rstrip("\r").split("\t")
            where = f"{path.name}:{lineno}"
            if len(cols) != 9:
                raise InputError(f"{where}: expected 9 tab-separated columns, found {len(cols)}")
            cols[0] = seqid(cols[0])
            s, e = _gff_interval(cols[3], cols[4], where)
            if cols[6] not in _STRANDS:
                raise InputError(f"{where}: strand must be +, - or ., got {cols[6]!r}")
            phase = int(cols[7]) if cols[7] in ("0", "1", "2") else None  # "." = not given
            attrs = _parse_attrs(cols[8], gtf)
            if cols[2] in ("region", "chromosome", "source"):
                lengths.setdefault(cols[0], e)
                if attrs.get("Is_circular", "").lower() == "true":
                    circular.add(cols[0])
            rows.append(_Row(cols[0], cols[2], s, e, _STRANDS[cols[6]], phase, attrs, lineno))
    return rows, lengths, circular


def _is_pseudo_row(row: _Row) -> bool:
    return ("pseudo" in row.type.lower() or row.attrs.get("pseudo", "").lower() == "true"
            or any("pseudogene" in row.attrs.get(k, "").lower() for k in _BIOTYPE_KEYS))


def _is_partial_row(row: _Row) -> bool:
    return (row.attrs.get("partial", "").lower() == "true" or "start_range" in row.attrs
            or "end_range" in row.attrs)


def partial_sides(attrs: dict) -> tuple[bool, bool, bool]:
    """(left, right, unplaced) partial flags of a GFF3 row, in forward coordinates: NCBI's
    ``start_range=.,N`` / ``end_range=N,.``, Prodigal's ``partial=LR`` digits, and ``partial=true``
    without a range (an end not named)."""
    flag = attrs.get("partial", "").strip()
    if re.fullmatch(r"[01]{2}", flag):
        return flag[0] == "1", flag[1] == "1", False
    left = attrs.get("start_range", "").strip().startswith(".")
    right = attrs.get("end_range", "").strip().endswith(".")
    return left, right, flag.lower() == "true" and not (left or right)


def _partial_ends(left: bool, right: bool, strand: int) -> dict:
    """``{"partial5": ..., "partial3": ...}`` (the CDS feature's attributes) from forward-
    coordinate flags; empty when neither end is partial."""
    if not (left or right):
        return {}
    p5, p3 = (right, left) if strand < 0 else (left, right)
    return {"partial5": p5, "partial3": p3}


def _is_gene_type(t: str) -> bool:
    return t.lower().endswith("gene") and t not in _MRNA_LIKE


def _split_origin(row: _Row, lengths, circular) -> list[tuple[int, int, int]]:
    """A row's (start, end, phase) pieces; a row running past the end of a circular contig
    (the GFF3 convention for origin-spanning features) is cut in two at the origin."""
    n = lengths.get(row.contig)
    if row.contig in circular and n and row.end > n:
        pieces = [(row.start, n), (0, row.end - n)]
        if row.strand < 0:
            pieces.reverse()
        first = pieces[0][1] - pieces[0][0]
        second = None if row.phase is None else (row.phase - first) % 3
        return [(*pieces[0], row.phase), (*pieces[1], second)]
    return [(row.start, row.end, row.phase)]


def _read_gff(path: Path, gtf: bool) -> dict[str, list[Feature]]:
    rows, lengths, circular = _gff_rows(path, gtf)
    by_id: dict[str, _Row] = {}
    for r in rows:
        if gtf:
            rid = r.attrs.get("transcript_id") if r.type in ("transcript", "mRNA") else None
        else:
            rid = next(iter(_ids(r, "ID")), None)
        if rid and rid not in by_id:
            by_id[rid] = r
    feats: dict[str, list[Feature]] = defaultdict(list)
    transcripts: dict[str, _Transcript] = {}
    for r in rows:
        if (r.type == "gene") if gtf else _is_gene_type(r.type):
            parts = [(s, e) for s, e, _ in _split_origin(r, lengths, circular)]
            feats[r.contig].append(Feature(
                contig=r.contig, start=min(p[0] for p in parts), end=max(p[1] for p in parts),
                strand=r.strand, kind="gene", parts=parts, joined=len(parts) > 1,
                gene_id=r.attrs.get("ID") or r.attrs.get("gene_id"),
                pseudo=_is_pseudo_row(r), partial=_is_partial_row(r),
                attributes={"type": r.type, **r.attrs}))
        if r.type not in _PART_TYPES or r.type == "intron":
            continue
        for key in _parent_keys(r, by_id, gtf):
            t = transcripts.get(key)
            if t is None:
                t = transcripts[key] = _new_transcript(key, r, by_id, gtf)
            _add_part(t, r, _split_origin(r, lengths, circular))
    part_parents = set(transcripts)
    for r in rows:  # transcript rows without any part rows: a single exon over their span
        rid = next(iter(_ids(r, "ID")), None)
        if (not gtf and rid and rid not in part_parents and not _is_gene_type(r.type)
                and (r.type in _MRNA_LIKE or _rna_class(r.type))):
            t = transcripts[rid] = _new_transcript(rid, r, by_id, gtf)
            t.exons.extend((s, e) for s, e, _ in _split_origin(r, lengths, circular))
    for t in transcripts.values():
        _finish_transcript(t, lengths, circular)
        feats[t.contig].extend(_emit_transcript(t, emit_cds=True, gtf=gtf))
    return dict(feats)


def _parent_keys(r: _Row, by_id: dict, gtf: bool) -> list[str]:
    if gtf:
        return [r.attrs.get("transcript_id") or f"line{r.lineno}"]
    parents = [p for p in _ids(r, "Parent")
               if not (p in by_id and by_id[p].type in _PROTEIN_TYPES)]
    return parents or _ids(r, "ID") or [f"line{r.lineno}"]


def _ids(r: _Row, key: str) -> list[str]:
    """The (unescaped) values of a multi-valued GFF3 attribute such as Parent."""
    return [urllib.parse.unquote(v) for v in r.attrs.get(key, "").split(",") if v]


def _ancestors_pseudo(row: _Row, by_id: dict) -> bool:
    seen = set()
    while row is not None and id(row) not in seen:
        if _is_pseudo_row(row):
            return True
        seen.add(id(row))
        parents = _ids(row, "Parent")
        row = by_id.get(parents[0]) if parents else None
    return False


def _new_transcript(key: str, part: _Row, by_id: dict, gtf: bool) -> _Transcript:
    row = by_id.get(key)
    if gtf:
        src = row or part
        return _Transcript(
            contig=part.contig, tid=key, strand=part.strand, ttype=row.type if row else None,
            biotypes=tuple(src.attrs[k] for k in _BIOTYPE_KEYS if k in src.attrs),
            gene_id=part.attrs.get("gene_id"), has_row=True, pseudo=_is_pseudo_row(src),
            attributes={"type": src.type, **src.attrs})
    is_tx = row is not None and not _is_gene_type(row.type)
    src = row or part
    return _Transcript(
        contig=part.contig, tid=key, strand=src.strand or part.strand,
        ttype=row.type if row else None,
        biotypes=tuple(src.attrs[k] for k in _BIOTYPE_KEYS if k in src.attrs),
        gene_id=next(iter(_ids(row, "Parent")), None) if is_tx else
        (key if row is not None else None),
        has_row=is_tx, pseudo=_ancestors_pseudo(src, by_id), partial=_is_partial_row(src),
        attributes={"type": src.type, **src.attrs})


def _add_part(t: _Transcript, r: _Row, pieces) -> None:
    if _is_pseudo_row(r):
        t.pseudo = True
    if _is_partial_row(r):
        t.partial = True
    if r.type in _EXON_TYPES:
        t.exons.extend((s, e) for s, e, _ in pieces)
    elif r.type in _UTR_TYPES:
        t.utrs.extend((s, e) for s, e, _ in pieces)
    elif r.type == "CDS":
        cid = r.attrs.get("ID", "")
        if t.has_row and t.cds:  # under a transcript (not a gene): one CDS, whatever the IDs
            cid = next(iter(t.cds))
        t.cds[cid].extend(pieces)
        ends = t.cds_ends.setdefault(cid, [False, False, False])  # left, right, unplaced
        left, right, unplaced = partial_sides(r.attrs)
        ends[0], ends[1], ends[2] = ends[0] or left, ends[1] or right, ends[2] or unplaced
        if "transl_table" in r.attrs:  # the CDS's own genetic code wins over its gene's
            t.attributes["transl_table"] = r.attrs["transl_table"]
    elif r.type == "stop_codon":
        t.stops.extend(pieces)


def _finish_transcript(t: _Transcript, lengths: dict, circular: set) -> None:
    """Detect origin-spanning transcripts and put their exons in transcription order."""
    n = lengths.get(t.contig)
    if t.contig not in circular or not n:
        return
    exons = merge_intervals(t.exons or [(s, e) for segs in t.cds.values() for s, e, _ in segs])
    if len(exons) > 1 and exons[0][0] == 0 and exons[-1][1] == n:
        gaps = [b[0] - a[1] for a, b in pairwise(exons)]
        cut = gaps.index(max(gaps)) + 1  # the feature is absent across its largest gap
        rotated = exons[cut:] + exons[:cut]
        if t.exons or t.has_row:
            t.ordered = rotated if t.strand > 0 else rotated[::-1]
        t.origin = rotated[0][0]
        t.joined = True


# ----------------------------------------------------------------------------- label tracks

def label_tracks(features: dict[str, list[Feature]],
                 lengths: dict[str, int]) -> dict[str, LabelTracks]:
    """Per-base label tracks for every contig of ``lengths``.

    Args:
        features: from :func:`read_features`; contigs absent from ``lengths`` are skipped.
        lengths: contig → length of the sequence the labels are for.

    Returns:
        contig → :class:`LabelTracks` (contigs without features are all intergenic).

    Raises:
        InputError: a feature lies outside its contig (annotation and sequence differ).
    """
    return {c: _contig_tracks(c, int(n), features.get(c, [])) for c, n in lengths.items()}


def _is_truth(f: Feature) -> bool:
    """False for features whose bases are masked: pseudo, unclassable transcripts, and CDS that
    are joined or have no strand (a frame cannot be counted along an unknown strand)."""
    return not (f.pseudo or f.kind == "transcript"
                or (f.kind == "CDS" and (f.joined or f.strand == 0)))


def _class_of(kind: str) -> str | None:
    if kind in _UTR_KINDS:
        return "UTR"
    return kind if kind in CLASS_INDEX and kind != "intergenic" else None


def _contig_tracks(contig: str, n: int, feats: list[Feature]) -> LabelTracks:
    t = LabelTracks(contig=contig, length=n,
                    cds_phase_plus=np.full(n, -1, np.int8), cds_phase_minus=np.full(n, -1, np.int8),
                    klass=np.zeros(n, np.uint8), rna_strand=np.zeros(n, np.int8),
                    exon=np.zeros(n, bool), intron=np.zeros(n, bool), ignore=np.zeros(n, bool))
    by_class: dict[str, list[Feature]] = defaultdict(list)
    for f in feats:
        for s, e in f.parts:
            if s < 0 or e > n or s >= e:
                raise InputError(
                    f"{f.kind} {f.transcript_id or f.gene_id or ''} at {contig}:{s + 1}-{e} lies "
                    f"outside {contig} (length {n}); the annotation does not match the sequence")
        if not _is_truth(f):
            for s, e in f.parts:
                t.ignore[s:e] = True
            continue
        if f.kind in ("exon", "intron"):
            track = t.exon if f.kind == "exon" else t.intron
            for s, e in f.parts:
                track[s:e] = True
        cls = _class_of(f.kind)
        if cls:
            by_class[cls].append(f)
    for cls in _PAINT_ORDER:
        for f in sorted(by_class[cls], key=lambda f: f.strand > 0):  # + strand painted last
            for s, e in f.parts:
                t.klass[s:e] = CLASS_INDEX[cls]
                t.rna_strand[s:e] = f.strand
    for f in by_class["CDS"]:
        _paint_codon_positions(t, f)
    return t


def _paint_codon_positions(t: LabelTracks, f: Feature) -> None:
    """Codon position of every base of a CDS; bases given two positions become ``ignore``."""
    track = t.cds_phase_plus if f.strand > 0 else t.cds_phase_minus
    offset = 0
    for i, (s, e) in enumerate(f.parts):
        first = (-f.part_phases[i]) % 3 if f.part_phases else (offset - f.phase) % 3
        pos = ((first + np.arange(e - s)) % 3).astype(np.int8)
        if f.strand < 0:
            pos = pos[::-1]
        cur = track[s:e]  # a view: writes go to the track
        t.ignore[s:e] |= (cur >= 0) & (cur != pos)
        np.copyto(cur, pos, where=cur < 0)
        offset += e - s
