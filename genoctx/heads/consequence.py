"""Variant consequences and annotation classes from a gene model (GFF3/GTF/GenBank or predicted).

A :class:`GeneModel` holds transcripts (CDS parts in transcription order, their phase and their
introns) and the class features of :mod:`genoctx.io.annotation`, and reads codons from the
reference. It is built from :func:`genoctx.io.annotation.read_features` output
(:meth:`GeneModel.from_features`) or from the decoder's :class:`~genoctx.heads.decoder.GeneCall`
list (:meth:`GeneModel.from_gene_calls`, see :func:`predict_gene_model`). Labels of a benchmark
are never an input: only gene structure and the reference sequence are.

Consequences (:data:`SEVERITY`, most severe first; a variant touching several transcripts gets
the most severe one):

* ``splice`` — a changed base within 2 bp of an exon boundary inside an intron (donor/acceptor);
* ``nonsense`` / ``stop_lost`` / ``start_lost`` — a stop codon gained earlier than the annotated
  one / the stop codon lost / the start codon (ATG, GTG, TTG at phase 0) changed to anything but
  ATG;
* ``frameshift`` / ``inframe_indel`` — coding length changed by a non-multiple / multiple of 3;
* ``missense`` / ``synonymous`` — amino acids compared in the transcript's genetic code: its
  ``transl_table`` attribute or qualifier where the annotation gives one, else the gene model's
  ``table`` (default 11, the bacterial code: the standard code's amino acids and stops; 4 makes
  TGA tryptophan). A change in an incomplete codon at a partial CDS end cannot be translated
  and is reported as ``missense``;
* ``splice_region`` — 3–8 intronic bases or 1–3 exonic bases from an exon/intron boundary, when
  nothing above applies;
* ``noncoding`` — everything else (UTR, deep intron, RNA genes, intergenic).

Alleles are trimmed of their shared prefix, then suffix (the VCF anchor base), so an insertion
sits between two bases: it is coding when both neighbours are adjacent CDS bases. An indel in a
repeat has several spellings (placements) that give the same sequence; ``genoctx
score-variants`` reports the least severe consequence over all of them
(:func:`genoctx.heads.variant.spellings`), so every spelling gets the same answer, and a change
that one placement shows to leave a feature's bases as they were does not count against it.
Coordinates are 0-based half-open throughout.
"""

from __future__ import annotations

import bisect
import functools
from collections import OrderedDict, defaultdict
from collections.abc import Collection, Iterable
from dataclasses import dataclass, field

import numpy as np

from genoctx.errors import InputError
from genoctx.io.annotation import Feature
from genoctx.io.fasta import reverse_complement

SEVERITY: tuple[str, ...] = ("splice", "nonsense", "frameshift", "stop_lost", "start_lost",
                             "inframe_indel", "missense", "splice_region", "synonymous",
                             "noncoding")
_RANK = {name: i for i, name in enumerate(SEVERITY)}
SPLICE_SITE = 2           # intronic bases of the donor/acceptor sites
SPLICE_REGION_INTRON = 8  # intronic bases of the splice region (from the boundary)
SPLICE_REGION_EXON = 3    # exonic bases of the splice region
START_CODONS = frozenset({"ATG", "GTG", "TTG"})
# Class priority where features overlap (io.annotation / heads.classes): higher wins.
_CLASS_PRIORITY = {"intron": 1, "UTR": 2, "ncRNA": 3, "tRNA": 4, "rRNA": 5, "CDS": 6}


@functools.lru_cache(maxsize=8)
def _codon_table(table_id: int = 11) -> dict[str, str]:
    from Bio.Data.CodonTable import unambiguous_dna_by_id

    table = unambiguous_dna_by_id[table_id]
    return {**table.forward_table, **{c: "*" for c in table.stop_codons}}


def check_table(table_id: int) -> int:
    """``table_id`` if it is an NCBI genetic code Biopython knows, else InputError."""
    from Bio.Data.CodonTable import unambiguous_dna_by_id

    if table_id not in unambiguous_dna_by_id:
        raise InputError(f"translation table {table_id!r} is not an NCBI genetic code (known: "
                         f"{', '.join(map(str, sorted(unambiguous_dna_by_id)))})")
    return table_id


def most_severe(*consequences: str | None) -> str:
    """The most severe of the given consequences (``noncoding`` when all are None)."""
    found = [c for c in consequences if c is not None]
    return min(found, key=_RANK.__getitem__) if found else "noncoding"


def least_severe(*consequences: str) -> str:
    """The least severe of ``consequences`` (:data:`SEVERITY`)."""
    return max(consequences, key=_RANK.__getitem__)


def translate(codons: str, table: int = 11) -> str:
    """Amino acids of the complete codons of ``codons`` in NCBI genetic code ``table`` (``X``
    for codons with N or IUPAC; ``*`` for stops)."""
    code = _codon_table(table)
    return "".join(code.get(codons[i:i + 3], "X") for i in range(0, len(codons) - 2, 3))


def trim_alleles(pos: int, ref: str, alt: str) -> tuple[int, str, str]:
    """Drop the shared prefix, then the shared suffix: ``(pos, ref, alt)`` of the minimal change."""
    ref, alt = ref.upper(), alt.upper()
    n = 0
    while n < min(len(ref), len(alt)) and ref[n] == alt[n]:
        n += 1
    pos, ref, alt = pos + n, ref[n:], alt[n:]
    m = 0
    while m < min(len(ref), len(alt)) and ref[-1 - m] == alt[-1 - m]:
        m += 1
    return pos, ref[:len(ref) - m], alt[:len(alt) - m]


# ----------------------------------------------------------------------------- intervals

class _Intervals:
    """Static interval lookup: items sorted by start plus a running maximum of their ends."""

    def __init__(self, items: list[tuple[int, int, object]]):
        items = sorted(items, key=lambda x: (x[0], x[1]))
        self._starts = [s for s, _, _ in items]
        self._ends = [e for _, e, _ in items]
        self._reach = np.maximum.accumulate(np.array(self._ends or [0], dtype=np.int64))
        self._items = [p for _, _, p in items]

    def overlapping(self, lo: int, hi: int) -> list:
        """Payloads of items ``[s, e)`` with ``s < hi`` and ``e > lo``, in start order."""
        out = []
        j = bisect.bisect_left(self._starts, hi) - 1
        while j >= 0 and self._reach[j] > lo:
            if self._ends[j] > lo:
                out.append(self._items[j])
            j -= 1
        return out[::-1]


def _hits(lo: int, hi: int, x: int, y: int, strict: bool) -> bool:
    """Does the change ``[lo, hi)`` touch ``[x, y)``? An insertion (``lo == hi``) sits between
    ``lo - 1`` and ``lo``: strictly inside needs both neighbours in ``[x, y)``."""
    if lo < hi:
        return lo < y and x < hi
    return x < lo < y if strict else x <= lo <= y


# ----------------------------------------------------------------------------- transcripts

@dataclass
class _Transcript:
    """One coding (``cds`` non-empty) or spliced non-coding transcript."""

    contig: str
    strand: int
    cds: list[tuple[int, int]]          # transcription order
    phase: int                          # bases before the first complete codon
    introns: list[tuple[int, int]]
    partial5: bool = False              # the 5' end is not a real start
    partial3: bool = False              # the 3' end is not a real stop
    table: int = 11                     # NCBI genetic code of its codons
    offsets: list[int] = field(default_factory=list)

    def __post_init__(self) -> None:
        total, self.offsets = 0, []
        for s, e in self.cds:
            self.offsets.append(total)
            total += e - s

    @property
    def envelope(self) -> tuple[int, int]:
        parts = self.cds + self.introns
        return min(s for s, _ in parts), max(e for _, e in parts)

    def cds_index(self, g: int) -> int | None:
        """Position of genomic base ``g`` in the spliced CDS (transcription order), or None."""
        for (s, e), off in zip(self.cds, self.offsets):
            if s <= g < e:
                return off + (g - s if self.strand > 0 else e - 1 - g)
        return None


@dataclass
class _ClassPart:
    """One part of a feature that gives a base its annotation class."""

    kind: str                # CDS, rRNA, tRNA, ncRNA, UTR, intron
    strand: int
    start: int
    end: int
    first: int = 0           # CDS: codon position of the part's first base (transcription order)

    def name(self, g: int) -> str:
        sign = "+" if self.strand > 0 else "-"
        if self.kind != "CDS":
            return f"{self.kind}{sign}"
        j = g - self.start if self.strand > 0 else self.end - 1 - g
        return f"CDS{sign}{(self.first + j) % 3}"


def _across_origin(f: Feature, length: int | None) -> bool:
    """Whether a feature is one piece up to the end of its circular contig of ``length`` bases
    and one from its start, in transcription order (a gene across the origin, as
    ``genoctx annotate --circular`` and NCBI write them)."""
    if not length or len(f.parts) != 2:
        return False
    first, second = f.parts if f.strand > 0 else f.parts[::-1]
    return first[1] == length and second[0] == 0 and second[1] <= first[0]


def _is_truth(f: Feature, length: int | None = None) -> bool:
    """As :func:`genoctx.io.annotation.label_tracks`: pseudo, unclassable and joined or
    strand-less CDS features are not ground truth (their bases get class '.'). A CDS joined
    only across the origin of its contig (``length`` bases) is: its codons are read across."""
    return not (f.pseudo or f.kind == "transcript"
                or (f.kind == "CDS" and ((f.joined and not _across_origin(f, length))
                                         or f.strand == 0)))


def _first_phase(f: Feature) -> int:
    return f.part_phases[0] if f.part_phases else f.phase


def _class_parts(f: Feature) -> list[_ClassPart]:
    kind = "UTR" if f.kind in ("five_prime_UTR", "three_prime_UTR") else f.kind
    if kind not in _CLASS_PRIORITY or f.strand == 0:
        return []
    out, offset = [], 0
    for i, (s, e) in enumerate(f.parts):
        first = 0
        if kind == "CDS":  # as io.annotation._paint_codon_positions
            first = (-f.part_phases[i]) % 3 if f.part_phases else (offset - f.phase) % 3
        out.append(_ClassPart(kind, f.strand, s, e, first))
        offset += e - s
    return out


class GeneModel:
    """Transcripts and class features of a genome, with the reference to read codons from.

    Args:
        features: contig → features, as from :func:`genoctx.io.annotation.read_features`.
        fasta: the reference (a :class:`~genoctx.io.fasta.FastaFile`) the features lie on.
        table: NCBI genetic code of CDS features that name none (``transl_table``).

    Raises:
        InputError: a feature runs off its contig (annotation and reference differ), or a
            genetic code is unknown.
    """

    def __init__(self, features: dict[str, list[Feature]], fasta, table: int = 11):
        self.fasta = fasta
        self.table = check_table(table)
        self.num_transcripts = 0
        self._tx: dict[str, _Intervals] = {}
        self._classes: dict[str, _Intervals] = {}
        self._cds_cache: OrderedDict[int, str] = OrderedDict()
        for contig, feats in features.items():
            if contig not in fasta.lengths:
                continue
            _check_bounds(contig, feats, fasta.lengths[contig])
            n = fasta.lengths[contig]
            txs = _transcripts(contig, feats, self.table, n)
            self.num_transcripts += len(txs)
            self._tx[contig] = _Intervals([(*t.envelope, t) for t in txs])
            self._classes[contig] = _Intervals(
                [(p.start, p.end, p) for f in feats if _is_truth(f, n) for p in _class_parts(f)]
                + [(s, e, None) for f in feats if not _is_truth(f, n) for s, e in f.parts])
        self.contigs = frozenset(self._tx)

    @classmethod
    def from_features(cls, features: dict[str, list[Feature]], fasta,
                      table: int = 11) -> GeneModel:
        """A gene model from :func:`~genoctx.io.annotation.read_features` output."""
        return cls(features, fasta, table)

    @classmethod
    def from_gene_calls(cls, calls: Iterable, fasta, table: int = 11) -> GeneModel:
        """A gene model from decoder :class:`~genoctx.heads.decoder.GeneCall` objects, called
        in genetic code ``table``.

        A call is one unspliced CDS; a 5'-partial call keeps the frame of its stop codon. A call
        across the origin of a circular contig (``end`` past the contig's length, as
        ``call_genes_multi(circular=...)`` makes it) is read as its two pieces, as the GFF3 of
        ``genoctx annotate --circular`` is.
        """
        features: dict[str, list[Feature]] = defaultdict(list)
        for n, g in enumerate(calls):
            partial5, partial3 = bool(g.partial[0]), bool(g.partial[1])
            length = fasta.lengths.get(g.contig)
            parts, start, end = [(g.start, g.end)], g.start, g.end
            if length is not None and g.end > length:  # across the origin: transcription order
                parts = [(g.start, length), (0, g.end - length)]
                if g.strand < 0:
                    parts.reverse()
                start, end = 0, length
            features[g.contig].append(Feature(
                contig=g.contig, start=start, end=end, strand=g.strand, kind="CDS",
                parts=parts, phase=(g.end - g.start) % 3 if partial5 else 0,
                transcript_id=f"call{n}", partial=any(g.partial), joined=len(parts) > 1,
                attributes={"type": "gene_call", "partial5": partial5,
                            "partial3": partial3}))
        return cls(dict(features), fasta, table)

    # ---- queries -----------------------------------------------------------------------------
    def klass(self, contig: str, pos: int) -> str:
        """Annotation class of base ``pos`` (names of :data:`genoctx.heads.classes.CLASSES`).

        ``'.'`` where a feature that is not ground truth (pseudogene, joined CDS) covers the base
        or two same-strand CDS disagree on its codon position, as in the training labels.
        """
        index = self._classes.get(contig)
        if index is None:
            return "."
        parts = index.overlapping(pos, pos + 1)
        if any(p is None for p in parts):
            return "."
        if not parts:
            return "intergenic"
        for strand in (1, -1):  # codon positions must agree on each strand
            if len({p.name(pos) for p in parts if p.kind == "CDS" and p.strand == strand}) > 1:
                return "."
        top = max(_CLASS_PRIORITY[p.kind] for p in parts)
        best = [p for p in parts if _CLASS_PRIORITY[p.kind] == top]
        chosen = [p for p in best if p.strand > 0] or best
        return chosen[0].name(pos)

    def consequence(self, contig: str, pos: int, ref: str, alt: str) -> str:
        """Consequence of replacing ``ref`` at 0-based ``pos`` by ``alt`` (see module docstring)."""
        p, r, a = trim_alleles(pos, ref, alt)
        if not r and not a:
            return "noncoding"
        index = self._tx.get(contig)
        if index is None:
            return "noncoding"
        lo, hi = p, p + len(r)
        near = index.overlapping(lo - SPLICE_REGION_INTRON, hi + SPLICE_REGION_INTRON)
        return most_severe(*(self._on_transcript(t, p, r, a) for t in near))

    # ---- per transcript ----------------------------------------------------------------------
    def _on_transcript(self, tx: _Transcript, p: int, r: str, a: str) -> str | None:
        splice = _splice_effect(tx, p, p + len(r))
        if splice == "splice" or not tx.cds:
            return splice
        edits = _cds_edits(tx, p, r, a)
        if isinstance(edits, str):
            return most_severe(splice, edits)
        if not edits:
            return splice
        return most_severe(splice, _protein_effect(tx, self._cds_sequence(tx), edits))

    def _cds_sequence(self, tx: _Transcript) -> str:
        key = id(tx)
        seq = self._cds_cache.get(key)
        if seq is None:
            pieces = [self.fasta.fetch(tx.contig, s, e).decode("ascii", "replace").upper()
                      for s, e in tx.cds]
            seq = "".join(pieces if tx.strand > 0 else [reverse_complement(x) for x in pieces])
            self._cds_cache[key] = seq
            if len(self._cds_cache) > 256:
                self._cds_cache.popitem(last=False)
        else:
            self._cds_cache.move_to_end(key)
        return seq


def _check_bounds(contig: str, feats: list[Feature], length: int) -> None:
    for f in feats:
        for s, e in f.parts:
            if s < 0 or e > length:
                raise InputError(
                    f"{f.kind} {f.transcript_id or f.gene_id or ''} at {contig}:{s + 1}-{e} lies "
                    f"outside {contig} (length {length}) of the reference; the annotation does "
                    "not match the reference sequence")


def _feature_table(f: Feature, default: int) -> int:
    """The genetic code a CDS names (GFF3 attribute or GenBank qualifier), else ``default``."""
    value = f.attributes.get("transl_table")
    if isinstance(value, list):
        value = value[0] if value else None
    if value is None or str(value).strip() in ("", "."):
        return default
    try:
        return check_table(int(str(value).strip()))
    except ValueError:
        raise InputError(f"CDS {f.transcript_id or f.gene_id or ''} at {f.contig}:{f.start + 1}-"
                         f"{f.end}: transl_table={value!r} is not a number") from None


def _transcripts(contig: str, feats: list[Feature], table: int = 11,
                 length: int | None = None) -> list[_Transcript]:
    """Coding transcripts (one per ground-truth CDS; genetic code ``table`` unless the CDS
    names its own; a CDS across the origin of the contig of ``length`` bases is one) and
    spliced non-coding transcripts."""
    introns: dict[str, list[tuple[int, int]]] = {}
    for f in feats:
        if f.kind == "intron" and _is_truth(f) and f.transcript_id:
            introns.setdefault(f.transcript_id, []).extend(f.parts)
    out, used = [], set()
    for f in feats:
        if f.kind != "CDS" or not _is_truth(f, length):
            continue
        tid = f.transcript_id
        used.add(tid)
        out.append(_Transcript(contig, f.strand, list(f.parts), _first_phase(f),
                               introns.get(tid, []) if tid else [],
                               partial5=bool(f.attributes.get("partial5", False)),
                               partial3=bool(f.attributes.get("partial3", False)),
                               table=_feature_table(f, table)))
    for f in feats:
        if f.kind == "intron" and _is_truth(f) and f.transcript_id not in used:
            used.add(f.transcript_id)
            out.append(_Transcript(contig, f.strand, [], 0, introns.get(f.transcript_id,
                                                                        list(f.parts))))
    return out


def _splice_effect(tx: _Transcript, lo: int, hi: int) -> str | None:
    """``splice`` / ``splice_region`` / None for the change ``[lo, hi)`` on one transcript."""
    region = False
    for s, e in tx.introns:
        if _hits(lo, hi, s, s + SPLICE_SITE, True) or _hits(lo, hi, e - SPLICE_SITE, e, True):
            return "splice"
        windows = ((s + SPLICE_SITE, s + SPLICE_REGION_INTRON),
                   (e - SPLICE_REGION_INTRON, e - SPLICE_SITE),
                   (s - SPLICE_REGION_EXON, s), (e, e + SPLICE_REGION_EXON))
        region = region or any(_hits(lo, hi, x, y, False) for x, y in windows)
    return "splice_region" if region else None


def _cds_edits(tx: _Transcript, p: int, r: str, a: str):
    """Edits ``[(c0, c1, bases)]`` of the spliced CDS (transcription order), ``[]`` when the
    change misses the CDS, or a consequence string for an indel only partly inside it."""
    orient = (lambda s: s) if tx.strand > 0 else reverse_complement
    if not r:  # insertion between p - 1 and p
        i0, i1 = tx.cds_index(p - 1), tx.cds_index(p)
        if i0 is None or i1 is None or abs(i0 - i1) != 1:
            return []
        c = max(i0, i1)
        return [(c, c, orient(a))]
    idx = [tx.cds_index(g) for g in range(p, p + len(r))]
    if len(r) == len(a):  # substitution: each coding base on its own
        return sorted((i, i + 1, orient(b)) for i, b in zip(idx, a) if i is not None)
    coding = [i for i in idx if i is not None]
    if not coding:
        return []
    if len(coding) == len(idx) and max(coding) - min(coding) + 1 == len(coding):
        return [(min(coding), max(coding) + 1, orient(a))]
    # an indel across a CDS end or an exon boundary: judged by the coding bases it removes,
    # and by the start or stop codon it reaches into (it cannot be in frame then)
    total = tx.offsets[-1] + (tx.cds[-1][1] - tx.cds[-1][0])
    found = ["frameshift" if len(coding) % 3 else None]
    if min(coding) < 3 and tx.phase == 0 and not tx.partial5:
        found.append("start_lost")
    if max(coding) >= total - 3 and not tx.partial3:
        found.append("stop_lost")
    if len(found) == 1 and found[0] is None:
        found.append("inframe_indel")
    return most_severe(*found)


def _apply(seq: str, edits: list[tuple[int, int, str]]) -> str:
    out, last = [], 0
    for c0, c1, bases in edits:
        out += [seq[last:c0], bases]
        last = c1
    out.append(seq[last:])
    return "".join(out)


def _protein_effect(tx: _Transcript, cds: str, edits: list[tuple[int, int, str]]) -> str:
    """Consequence of ``edits`` on the translated CDS."""
    delta = sum(len(b) - (c1 - c0) for c0, c1, b in edits)
    if delta % 3:
        return "frameshift"
    f = tx.phase
    c_lo, c_hi = min(c0 for c0, _, _ in edits), max(c1 for _, c1, _ in edits)
    if c_lo < f:
        return "missense"  # the incomplete first codon of a partial CDS: not translatable
    k0 = (c_lo - f) // 3
    k1 = max(k0, -(-(c_hi - f) // 3))
    if f + 3 * k1 > len(cds):
        return "missense"  # the incomplete last codon of a 3'-partial CDS
    alt = _apply(cds, edits)
    ref_codons, alt_codons = cds[f + 3 * k0:f + 3 * k1], alt[f + 3 * k0:f + 3 * k1 + delta]
    ref_aa, alt_aa = translate(ref_codons, tx.table), translate(alt_codons, tx.table)
    found = []
    if k0 == 0 and f == 0 and not tx.partial5 and cds[:3] in START_CODONS:
        kept = alt[:3] == cds[:3] or alt[:3] == "ATG"
        if not kept:
            found.append("start_lost")
        ref_aa = "M" + ref_aa[1:]
        alt_aa = ("M" if kept else "?") + alt_aa[1:]
    ref_stop, alt_stop = ref_aa.find("*"), alt_aa.find("*")
    if alt_stop >= 0 and (ref_stop < 0 or alt_stop < ref_stop):
        found.append("nonsense")
    elif ref_stop >= 0 and alt_stop < 0:
        found.append("stop_lost")
    if delta:
        found.append("inframe_indel")
    found.append("missense" if ref_aa != alt_aa else "synonymous")
    return most_severe(*found)


# ----------------------------------------------------------------------------- predicted genes

GENE_FLANK = 20_000  # bases decoded on each side of the variants (genes span ~1 kb in bacteria)


class TargetCollector:
    """Merge variant spans, widened by ``flank``, into regions to predict genes on."""

    def __init__(self, lengths: dict[str, int], flank: int = GENE_FLANK):
        self.lengths, self.flank = lengths, flank
        self._spans: dict[str, list[list[int]]] = defaultdict(list)

    def add(self, contig: str, start: int, end: int) -> None:
        n = self.lengths.get(contig)
        if n is None:
            return
        lo, hi = max(0, start - self.flank), min(n, end + self.flank)
        spans = self._spans[contig]
        if spans and spans[-1][0] <= lo <= spans[-1][1]:  # sorted VCFs merge as they stream
            spans[-1][1] = max(spans[-1][1], hi)
        else:
            spans.append([lo, hi])

    def regions(self) -> list:
        """Merged regions (:class:`~genoctx.io.regions.Region`), in contig then start order."""
        from genoctx.io.regions import Region

        out = []
        for contig, spans in self._spans.items():
            merged: list[list[int]] = []
            for lo, hi in sorted(spans):
                if merged and lo <= merged[-1][1]:
                    merged[-1][1] = max(merged[-1][1], hi)
                else:
                    merged.append([lo, hi])
            out += [Region(contig, lo, hi) for lo, hi in merged if hi > lo]
        return out


@dataclass
class PredictedAnnotation:
    """Decoder genes (as a :class:`GeneModel`) and, with an annotation head, per-base classes."""

    genes: GeneModel
    calls: list
    class_tracks: dict[str, list[tuple[int, np.ndarray]]]  # contig -> [(start, argmax ids)]

    def klass(self, contig: str, pos: int) -> str:
        """The class at ``pos`` (of a predicted target) from the predicted genes, so that it
        agrees with their consequences: a coding class with its codon position inside a
        predicted gene; elsewhere the head's RNA class (tRNA, rRNA, ncRNA) where it has one,
        else ``intergenic``. ``'.'`` where two predicted genes disagree on the codon position."""
        genes = self.genes.klass(contig, pos)
        if genes == "." and contig not in self.genes._classes:
            genes = "intergenic"  # no gene predicted on this contig
        if genes != "intergenic":
            return genes
        head = self.head_class(contig, pos)
        return head if head.startswith(("tRNA", "rRNA", "ncRNA")) else genes

    def head_class(self, contig: str, pos: int) -> str:
        """The head's most probable class at ``pos``; ``'.'`` without a head or outside targets."""
        from genoctx.heads.classes import CLASSES

        for start, ids in self.class_tracks.get(contig, ()):
            if start <= pos < start + len(ids):
                return CLASSES[int(ids[pos - start])]
        return "."


def whole_circles(targets: list, lengths: dict[str, int], circular: Collection[str]) -> list:
    """``targets`` (:class:`~genoctx.io.regions.Region`) with those on the ``circular`` contigs
    replaced by one target holding the whole contig (after the others, in order of first
    appearance): genes across a circle's origin are found only on the whole circle."""
    from genoctx.io.regions import Region

    ring = set(circular)
    return [t for t in targets if t.contig not in ring] + [
        Region(c, 0, lengths[c]) for c in dict.fromkeys(t.contig for t in targets) if c in ring]


def predict_gene_model(fasta, targets: list, *, backbone=None, head=None, context: int = 8192,
                       overlap: int = 256, batch_size: int = 4, progress=None,
                       params=None, rna: str = "auto",
                       circular: Collection[str] = frozenset()) -> PredictedAnnotation:
    """Genes the decoder predicts on ``targets`` of the reference (the steps of
    :func:`genoctx.heads.annotate.annotate_fasta`), keeping the head's per-base classes.

    Args:
        fasta: the reference (:class:`~genoctx.io.fasta.FastaFile`).
        targets: regions (:class:`~genoctx.io.regions.Region`), e.g. from
            :class:`TargetCollector`; the decoder's statistics are fitted across all of them.
        backbone, head: an annotation model (:func:`genoctx.heads.annotation.load_annotation_model`)
            or None to decode from the sequence alone.
        progress: called with the number of bases done.
        params: decoder settings (:class:`genoctx.heads.decoder.DecoderParams`); pass the
            checkpoint's (:func:`genoctx.heads.annotate.decoder_params`) to get the genes
            ``genoctx annotate`` writes.
        rna: RNA-gene source as in ``genoctx annotate --rna``; CDS calls inside RNA genes found
            by the sequence finders are dropped, as there.
        circular: contigs that are whole circular replicons (``genoctx annotate --circular``):
            each one with a target is decoded whole, closed, and its genes may cross the origin
            (``end`` past its length); its targets are replaced by the whole contig.
    """
    import dataclasses

    from genoctx.heads.annotate import call_bacterial
    from genoctx.heads.annotation import predict_probs
    from genoctx.tokenize import nucleotide as nt

    targets = whole_circles(targets, fasta.lengths, circular)
    ring = {t.contig for t in targets if t.contig in set(circular)}
    records, probs, tracks = [], {}, defaultdict(list)
    for t in targets:
        name = f"{t.contig}:{t.start}-{t.end}"
        seq = fasta.fetch(t.contig, t.start, t.end)
        records.append((name, seq))
        if head is not None:
            p = predict_probs(backbone, head, nt.encode(seq), context=context, overlap=overlap,
                              batch_size=batch_size, progress=progress,
                              circular=t.contig in ring)
            probs[name] = p
            tracks[t.contig].append((t.start, p.argmax(1).astype(np.uint8)))
        elif progress:
            progress(len(t))
    by_name = {f"{t.contig}:{t.start}-{t.end}": t for t in targets}
    whole = frozenset(name for name, t in by_name.items() if t.contig in ring)
    # whole circles are closed; other targets keep open edges, as before
    closed = {name: (name in whole,) * 2 for name in by_name} if whole else False
    calls = [dataclasses.replace(g, contig=by_name[g.contig].contig,
                                 start=g.start + by_name[g.contig].start,
                                 end=g.end + by_name[g.contig].start)
             for g in call_bacterial(records, probs or None, params=params, rna=rna,
                                     closed=closed, circular=whole)[0]
             ] if records else []
    table = params.translation_table if params is not None else 11
    return PredictedAnnotation(GeneModel.from_gene_calls(calls, fasta, table), calls,
                               dict(tracks))
