"""Annotation writers (GFF3, BED, bedGraph) and a GFF3 gene reader for scoring any tool's output.

All writers are atomic (a failed write leaves no partial file) and deterministic: the same
genes give the same bytes whatever their input order. Inside genoctx coordinates are 0-based
half-open; GFF3 is 1-based inclusive, and the conversion happens only in :func:`_gff_interval`
and :func:`_parse_interval`. BED and bedGraph are 0-based half-open like genoctx itself.

Genes are :class:`genoctx.heads.decoder.GeneCall`; RNA features are any objects with
``contig, start, end, strand, kind, score`` (:class:`genoctx.heads.decoder.RNACall`).
Per-base tracks go to bedGraph (:func:`write_bedgraph_many`) or bigWig (:func:`write_bigwig`);
proteins and coding sequences to FASTA (:func:`write_gene_fasta`, Prodigal's ``-a`` / ``-d``);
everything with the bases as GenBank (:func:`write_genbank`).
Spliced (eukaryotic) genes are :class:`genoctx.heads.spliced_decoder.SplicedGene`, written by
:func:`write_spliced_gff3` (gene → mRNA → exon + CDS) and :func:`write_spliced_bed` (BED12).
"""

from __future__ import annotations

import dataclasses
import lzma
import math
import re
from itertools import pairwise
from pathlib import Path
from urllib.parse import quote, unquote

import numpy as np

from genoctx.errors import InputError
from genoctx.io.atomic import atomic_open
from genoctx.io.fasta import reverse_complement

_SEQID_SAFE = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.:^*$@!+_?-|"
_STRAND = {1: "+", -1: "-", 0: "."}


def _esc_seqid(name: str) -> str:
    return "".join(c if c in _SEQID_SAFE else quote(c, safe="") for c in name)


def _esc_value(v) -> str:
    # GFF3 reserves ; = & , and control characters inside attribute values
    return quote(str(v), safe=" !\"#$'()*+-./:<>?@[\\]^_`{|}~")


def _gff_interval(start: int, end: int) -> tuple[int, int]:
    """0-based half-open → GFF3 1-based inclusive."""
    return start + 1, end


def _fmt_score(p: float) -> str:
    return "." if p is None or not math.isfinite(p) else f"{p:.4f}"


def _attrs(pairs: list[tuple[str, object]]) -> str:
    """``k=v;...``; a tuple value is GFF3's multi-value form, joined by literal commas."""
    return ";".join(f"{k}=" + (",".join(map(_esc_value, v)) if isinstance(v, tuple) else _esc_value(v))
                    for k, v in pairs if v is not None)


def _partial_ends(g) -> tuple[bool, bool, bool, bool]:
    """(5', 3', left, right): which ends of ``g`` run off its sequence, along its strand and in
    forward coordinates (``partial`` is (5', 3'); items without it are complete)."""
    p5, p3 = (bool(v) for v in getattr(g, "partial", (False, False)))
    return (p5, p3, p5, p3) if g.strand != -1 else (p5, p3, p3, p5)


def _partial_attrs(g) -> list[tuple[str, object]]:
    """NCBI-style partial markers; ``partial`` is (5', 3') along the gene's strand. An RNA gene
    says ``partial`` in its attrs, and which ends its sequence cut in ``cut`` (left, right)."""
    if getattr(g, "kind", None) is not None:  # an RNA gene
        info = getattr(g, "attrs", None) or {}
        if str(info.get("partial", "")).lower() != "true":
            return []
        left, right = info.get("cut", (False, False))
        if not (left or right):  # partial (say, aligned only in part) at no known end
            return [("partial", "true")]
    else:
        _, _, left, right = _partial_ends(g)
        if not (left or right):
            return []
    lo, hi = _gff_interval(g.start, g.end)
    return [("partial", "true"), ("start_range", (".", lo) if left else None),
            ("end_range", (hi, ".") if right else None)]


def _sequence_regions(lengths: dict[str, int]) -> list[str]:
    """``##sequence-region`` lines; an empty record has no valid range (1..0) and gets none."""
    return [f"##sequence-region {_esc_seqid(c)} 1 {n}" for c, n in lengths.items() if n > 0]


def forward_parts(g, lengths: dict[str, int] | None = None) -> list[tuple[int, int]]:
    """The forward-strand pieces of an item, in order along the sequence: a spliced gene's CDS
    parts; a gene across the origin of a circular contig (``end`` past the contig's length
    in ``lengths``) as the piece up to the end and the piece from the origin; else one."""
    if getattr(g, "cds", None):
        return list(g.cds)
    n = (lengths or {}).get(g.contig)
    if n is not None and g.end > n:
        return [(g.start, n), (0, g.end - n)]
    return [(g.start, g.end)]


def _circular_regions(lengths: dict[str, int], circular) -> list[str]:
    """GFF3 ``region`` rows marking circular contigs (``Is_circular=true``, as the GFF3
    specification marks them; features across the origin end past the region's length)."""
    return [f"{_esc_seqid(c)}\t.\tregion\t1\t{n}\t.\t+\t.\t"
            + _attrs([("ID", f"{c}:1..{n}"), ("Is_circular", "true")])  # NCBI's region IDs
            for c, n in lengths.items() if c in circular and n > 0]


def _contig_order(lengths: dict[str, int], items: list) -> dict[str, int]:
    missing = sorted({g.contig for g in items} - set(lengths))
    if missing:
        raise InputError(f"no length given for contig(s) {', '.join(missing[:5])}; "
                         "pass every contig's length in `lengths`")
    return {c: i for i, c in enumerate(lengths)}


def _numbered(items: list, order: dict[str, int], prefix) -> list[tuple[str, object]]:
    """(ID, item) with IDs numbered per contig in position order: ``contig_1``, ``contig_2``...
    An item given a locus tag (``attrs["locus_tag"]``, :func:`assign_locus_tags`) has that ID."""
    items = sorted(items, key=lambda g: (order.get(g.contig, 0), g.contig, g.start, g.end,
                                         g.strand, getattr(g, "kind", "")))
    out, count = [], {}
    for g in items:
        tag = _locus_tag(g)
        if tag is not None:
            out.append((tag, g))
            continue
        count[g.contig] = count.get(g.contig, 0) + 1
        out.append((f"{g.contig}_{prefix(g)}{count[g.contig]}", g))
    return out


def _locus_tag(g) -> str | None:
    return (getattr(g, "attrs", None) or {}).get("locus_tag")


_LOCUS_TAG = re.compile(r"[A-Za-z][A-Za-z0-9_]{0,31}")


def check_locus_tag(prefix: str) -> str:
    """``prefix`` if it can start locus tags (a letter, then up to 31 letters, digits or ``_``:
    no character that GFF3, FASTA headers or GenBank would need to escape), else InputError."""
    if not _LOCUS_TAG.fullmatch(prefix or ""):
        raise InputError(f"locus tag prefix {prefix!r} must be a letter followed by up to 31 "
                         "letters, digits or underscores (e.g. ECOLI or SAMPLE_1)")
    return prefix


def assign_locus_tags(genes: list, rnas: list, lengths: dict[str, int], prefix: str
                      ) -> tuple[list, list]:
    """Copies of ``genes`` and ``rnas`` (in their order) tagged ``PREFIX_00001``,
    ``PREFIX_00002``... across all contigs (in ``lengths`` order, then by position; genes and
    RNA genes in one series), as Prokka's ``--locustag`` does. The writers use the tag as the
    feature's ID (GFF3 ``ID`` and ``locus_tag``, BED name, FASTA header, GenBank
    ``/locus_tag``), so IDs stay unique when the annotations of many genomes are pooled (Roary,
    Panaroo) however their contigs are named.

    Raises:
        InputError: ``prefix`` is not a letter followed by up to 31 letters, digits or ``_``.
    """
    check_locus_tag(prefix)
    order = _contig_order(lengths, list(genes) + list(rnas))
    items = list(genes) + list(rnas)
    series = sorted(range(len(items)), key=lambda i: (
        order[items[i].contig], items[i].start, items[i].end, items[i].strand, i >= len(genes),
        getattr(items[i], "kind", ""), i))
    width = max(5, len(str(len(items))))
    out = list(items)
    for n, i in enumerate(series, 1):
        g = items[i]
        out[i] = dataclasses.replace(g, attrs={**(getattr(g, "attrs", None) or {}),
                                               "locus_tag": f"{prefix}_{n:0{width}d}"})
    return out[:len(genes)], out[len(genes):]


def write_gff3(path: str | Path, genes: list, rna: list, lengths: dict[str, int], *,
               source: str = "genoctx", attrs: dict | None = None, fasta=None,
               circular=()) -> None:
    """Write genes (gene → CDS) and RNAs (gene → tRNA/rRNA/ncRNA) as GFF3.

    Args:
        path: output file (written atomically).
        genes: GeneCall list; ``score`` (a probability) goes in column 6, CDS phase is 0.
        rna: RNACall list (``kind`` is the feature type; ``attrs`` ``product`` and
            ``inference`` are written on the RNA row when present, ``partial`` on the gene and
            RNA rows, with ``start_range``/``end_range`` at the ends ``cut`` names).
        lengths: every contig's length, in the order contigs should appear
            (``##sequence-region`` lines).
        source: column 2.
        attrs: extra attributes added to every gene line (e.g. ``{"model": sha256}``).
        fasta: optional ``fetch(contig, start, end)``: the contigs' bases follow the features
            after a ``##FASTA`` line, as Prokka and Bakta write it (Roary and Panaroo read it).
        circular: names of circular contigs. Each gets a ``region`` row with
            ``Is_circular=true``, and its features may cross the origin: their end lies past
            the contig's length, as the GFF3 specification writes them.
    """
    order = _contig_order(lengths, list(genes) + list(rna))
    extra = sorted((attrs or {}).items())
    lines = ["##gff-version 3"]
    lines += _sequence_regions(lengths)
    lines += _circular_regions(lengths, circular)
    rows = [(i, g, "CDS") for i, g in _numbered(list(genes), order, lambda g: "")]
    rows += [(i, r, r.kind) for i, r in _numbered(list(rna), order, lambda r: r.kind + "_")]
    rows.sort(key=lambda t: (order[t[1].contig], t[1].start, t[1].end, t[0]))
    for gid, g, kind in rows:
        lo, hi = _gff_interval(g.start, g.end)
        n = lengths[g.contig]
        if g.start < 0 or g.end <= g.start or g.end > (
                min(g.start + n, 2 * n) if g.contig in circular else n):
            raise InputError(f"{gid}: interval {g.start}-{g.end} lies outside contig "
                             f"{g.contig} of length {lengths[g.contig]}")
        col = [_esc_seqid(g.contig), source, None, str(lo), str(hi), _fmt_score(g.score),
               _STRAND[g.strand]]
        info = getattr(g, "attrs", None) or {}
        part = _partial_attrs(g)
        gene_attrs = [("ID", gid), ("locus_tag", _locus_tag(g))] + part + extra
        if kind != "CDS":
            gene_attrs.insert(1, ("gene_biotype", kind))
        lines.append("\t".join(col[:2] + ["gene"] + col[3:] + [".", _attrs(gene_attrs)]))
        sub = [("ID", f"{kind.lower()}_{gid}"), ("Parent", gid), ("locus_tag", _locus_tag(g))]
        if kind == "CDS":
            # meta procedure: the pre-trained model of the decoder's bank it started from
            info = getattr(g, "attrs", None) or {}
            # a gene running in from a sequence edge has no start codon (its first codon is
            # only where the sequence begins; Prodigal's start_type=Edge)
            start = None if _partial_ends(g)[0] else (g.start_codon or None)
            sub += [("start_codon", start)] + part + [
                ("bank_model", info.get("model")),
                ("composition_group", info.get("composition_group")),
                ("transl_table", info.get("transl_table"))]
        else:  # RNA genes from a sequence finder say what they are and which tool found them
            sub += [(k, info.get(k)) for k in ("product", "inference")] + part
        phase = "0" if kind == "CDS" else "."
        lines.append("\t".join(col[:2] + [kind] + col[3:] + [phase, _attrs(sub)]))
    with atomic_open(path, "w", newline="\n") as fh:
        fh.write("\n".join(lines) + "\n")
        if fasta is not None:
            _write_fasta_section(fh, lengths, fasta)


def _write_fasta_section(fh, lengths: dict[str, int], fetch) -> None:
    """``##FASTA`` and every non-empty contig's bases (60 a line), one contig in memory at a time.
    Each header is the contig's seqid as column 1 writes it (escaped the same way), so that
    readers that match the two as text (gffutils, and Panaroo through it) find each other."""
    fh.write("##FASTA\n")
    for contig, n in lengths.items():
        if n <= 0:
            continue
        seq = _as_text(fetch(contig, 0, n))
        fh.write(f">{_esc_seqid(contig)}\n")
        fh.writelines(seq[i:i + 60] + "\n" for i in range(0, len(seq), 60))


def write_bed(path: str | Path, genes: list, rna: list,
              lengths: dict[str, int] | None = None) -> None:
    """BED6 of genes and RNAs, sorted by contig name then start (ready for bgzip + tabix).

    Name is the same ID as in the GFF3 (``contig_N`` for genes, ``contig_tRNA_N`` ...); the
    score column is round(1000 · probability). A gene across the origin of a circular contig
    (its end past the contig's length in ``lengths``) is written as two lines with one name,
    the piece up to the contig's end and the piece from its origin: BED has no other way.
    """
    items = list(genes) + list(rna)
    order = {c: i for i, c in enumerate(sorted({g.contig for g in items}))}
    rows = _numbered(list(genes), order, lambda g: "")
    rows += _numbered(list(rna), order, lambda r: r.kind + "_")
    rows = [(gid, dataclasses.replace(g, start=a, end=b) if (a, b) != (g.start, g.end) else g)
            for gid, g in rows for a, b in forward_parts(g, lengths)]
    rows.sort(key=lambda t: (t[1].contig, t[1].start, t[1].end, t[0]))
    with atomic_open(path, "w", newline="\n") as fh:
        fh.write("".join(_bed6(gid, g) + "\n" for gid, g in rows))


def _bed6(gid: str, g) -> str:
    """The first six BED columns of a feature; score = round(1000 · probability), the
    probability taken as the GFF3 writes it (4 decimals), so a BED made from the GFF3 (the
    workflow's merge) has the same scores as annotate's own."""
    if any(c in g.contig for c in "\t\n"):
        raise InputError(f"contig name {g.contig!r} contains a tab or newline; BED cannot hold it")
    text = _fmt_score(g.score)
    s = 0 if text == "." else round(1000 * float(text))
    return f"{g.contig}\t{g.start}\t{g.end}\t{gid}\t{min(max(s, 0), 1000)}\t{_STRAND[g.strand]}"


def _cds_phases(g) -> list[str]:
    """GFF3 phase of each CDS part of a spliced gene (position order): bases to skip at the
    part's 5' end, counted along the gene's own strand."""
    parts = list(g.cds)
    done, phases = 0, {}
    for s, e in (parts if g.strand > 0 else parts[::-1]):  # transcription order
        phases[(s, e)] = str((3 - done % 3) % 3)
        done += e - s
    return [phases[p] for p in parts]


def _check_spliced(gid: str, g, lengths: dict[str, int]) -> None:
    parts = list(g.cds)
    if not parts or any(e <= s for s, e in parts) or any(
            b[0] < a[1] for a, b in pairwise(parts)):
        raise InputError(f"{gid}: CDS parts {parts} must be non-empty, ascending and disjoint")
    if parts[0][0] < 0 or parts[-1][1] > lengths[g.contig]:
        raise InputError(f"{gid}: gene {parts[0][0]}-{parts[-1][1]} lies outside contig "
                         f"{g.contig} of length {lengths[g.contig]}")


def write_spliced_gff3(path: str | Path, genes: list, lengths: dict[str, int], *,
                       source: str = "genoctx", attrs: dict | None = None, fasta=None) -> None:
    """Write spliced genes as GFF3: gene → mRNA → exon and CDS rows (one per part).

    Args:
        path: output file (written atomically).
        genes: :class:`genoctx.heads.spliced_decoder.SplicedGene` list (``cds`` parts ascending,
            0-based half-open, start through stop codon). Decoded genes carry no UTRs, so each
            exon is its CDS part; the CDS phase column is counted along the transcript. A gene
            that runs off its sequence (``partial``, cut to whole codons) says so on its gene,
            mRNA and CDS rows (``partial=true``, ``start_range`` / ``end_range``).
        lengths: every contig's length, in the order contigs should appear.
        source: column 2.
        attrs: extra attributes added to every gene line.
        fasta: optional ``fetch(contig, start, end)``: a ``##FASTA`` section, as in :func:`write_gff3`.
    """
    order = _contig_order(lengths, list(genes))
    extra = sorted((attrs or {}).items())
    lines = ["##gff-version 3"]
    lines += _sequence_regions(lengths)
    for gid, g in _numbered(list(genes), order, lambda g: ""):
        _check_spliced(gid, g, lengths)
        lo, hi = _gff_interval(g.start, g.end)
        col = [_esc_seqid(g.contig), source]
        tail = [str(lo), str(hi), _fmt_score(g.score), _STRAND[g.strand], "."]
        part = _partial_attrs(g)  # a gene running off its sequence (an open end)
        lines.append("\t".join(col + ["gene"] + tail
                                + [_attrs([("ID", gid), ("locus_tag", _locus_tag(g))] + part
                                          + extra)]))
        mrna = f"mrna_{gid}"
        tag = [("locus_tag", _locus_tag(g))]
        lines.append("\t".join(col + ["mRNA"] + tail
                                + [_attrs([("ID", mrna), ("Parent", gid)] + tag + part)]))
        rows = []
        k = len(g.cds)
        for i, ((s, e), phase) in enumerate(zip(g.cds, _cds_phases(g))):
            a, b = _gff_interval(s, e)
            n = i + 1 if g.strand > 0 else k - i  # exons numbered in transcript order (5' → 3')
            rows.append((a, 0, "\t".join(col + ["exon", str(a), str(b), ".", _STRAND[g.strand], ".",
                                                  _attrs([("ID", f"exon_{gid}.{n}"),
                                                          ("Parent", mrna)] + tag)])))
            rows.append((a, 1, "\t".join(col + ["CDS", str(a), str(b), ".", _STRAND[g.strand],
                                                  phase, _attrs([("ID", f"cds_{gid}"),
                                                                 ("Parent", mrna)] + tag
                                                                + part)])))
        lines += [r for _, _, r in sorted(rows)]
    with atomic_open(path, "w", newline="\n") as fh:
        fh.write("\n".join(lines) + "\n")
        if fasta is not None:
            _write_fasta_section(fh, lengths, fasta)


def write_spliced_bed(path: str | Path, genes: list) -> None:
    """BED12 of spliced genes (one block per CDS part; thickStart/End = the CDS), sorted by
    contig name then start; names are the GFF3 gene IDs of :func:`write_spliced_gff3`."""
    order = {c: i for i, c in enumerate(sorted({g.contig for g in genes}))}
    rows = sorted(_numbered(list(genes), order, lambda g: ""),
                  key=lambda t: (t[1].contig, t[1].start, t[1].end, t[0]))
    lines = []
    for gid, g in rows:
        sizes = ",".join(str(e - a) for a, e in g.cds) + ","
        starts = ",".join(str(a - g.start) for a, _ in g.cds) + ","
        lines.append(f"{_bed6(gid, g)}\t{g.start}\t{g.end}\t0\t{len(g.cds)}\t{sizes}\t{starts}")
    with atomic_open(path, "w", newline="\n") as fh:
        fh.write("".join(line + "\n" for line in lines))


def _coding_sequence(g, fetch, lengths: dict[str, int] | None = None) -> str:
    """The gene's coding sequence along its own strand, in whole codons (upper case).

    ``fetch(contig, start, end)`` returns forward-strand bases. A 5'-partial gene (it runs in
    from a sequence edge) loses the bases before its first whole codon, counted from the stop
    side; a 3'-partial one the bases after its last whole codon. A gene across the origin of a
    circular contig is read in its two pieces (:func:`forward_parts`).
    """
    parts = forward_parts(g, lengths)
    nt = "".join(_as_text(fetch(g.contig, a, b)) for a, b in parts).upper()
    if g.strand < 0:
        nt = reverse_complement(nt)
    p5, p3, _, _ = _partial_ends(g)
    extra = len(nt) % 3
    if extra:
        nt = nt[extra:] if p5 and not p3 else nt[:len(nt) - extra]
    return nt


def _as_text(seq) -> str:
    return seq.decode("ascii", errors="replace") if isinstance(seq, bytes | bytearray) else str(seq)




def _protein(nt: str, partial5: bool, table: int) -> str:
    """Translation of whole codons ``nt``; a complete gene's start codon reads M."""
    from Bio.Seq import Seq

    # A codon with an IUPAC code is X unless every reading codes the same amino acid (CTN and
    # YTA are L); other letters read as N. A gene's ambiguous codon is never its stop (the
    # decoder reads through it), so one whose readings all stop (TRA) is X too.
    odd = [m.start() // 3 for m in re.finditer("[^ACGT]", nt)]
    if odd:
        nt = re.sub("[^ACGTRYKMSWBDHVN]", "N", nt)
    body = str(Seq(nt).translate(table=table))
    if odd:
        aa = list(body)
        for i in odd:
            if i < len(aa) and aa[i] == "*":
                aa[i] = "X"
        body = "".join(aa)
    return "M" + body[1:] if body and not partial5 else body


def write_gene_fasta(path: str | Path, genes: list, lengths: dict[str, int], fetch, *,
                     protein: bool, translation_table: int = 11) -> None:
    """Write each gene's protein (``protein=True``, Prodigal's ``-a``) or coding sequence
    (Prodigal's ``-d``) as FASTA, 60 letters a line, in the order and with the IDs of the GFF3
    writers (``contig_1``, ...).

    Headers follow Prodigal's: ``>ID # start # end # strand # ID=...;partial=LR;start_type=...;
    score=...`` (1-based inclusive coordinates; ``partial`` flags the left and right ends in
    forward coordinates, 1 = runs off the sequence). Proteins are translated in
    ``translation_table`` (a gene's own ``attrs["transl_table"]`` wins); the start codon of a
    complete gene reads M whatever it is (GTG, TTG), and a complete gene ends with ``*``.
    Non-ACGT bases give X.

    Args:
        genes: :class:`genoctx.heads.decoder.GeneCall` or spliced genes (``cds`` parts).
        lengths: every contig's length, in output order.
        fetch: ``fetch(contig, start, end)`` → forward-strand bases (bytes or str).
    """
    order = _contig_order(lengths, list(genes))
    lines = []
    for gid, g in _numbered(list(genes), order, lambda g: ""):
        nt = _coding_sequence(g, fetch, lengths)
        p5, _, left, right = _partial_ends(g)
        info = getattr(g, "attrs", None) or {}
        fields = [("ID", gid), ("partial", f"{int(left)}{int(right)}")]
        body = _protein(nt, p5, int(info.get("transl_table", translation_table))) if protein else nt
        start_codon = "Edge" if p5 else (getattr(g, "start_codon", None) or nt[:3])
        fields += [("start_type", start_codon), ("score", _fmt_score(g.score))]
        lo, hi = _gff_interval(g.start, g.end)
        lines.append(f">{gid} # {lo} # {hi} # {g.strand} # "  # values escaped as in GFF3
                     + ";".join(f"{k}={_esc_value(v)}" for k, v in fields))
        lines += [body[i:i + 60] for i in range(0, len(body), 60)]
    with atomic_open(path, "w", newline="\n") as fh:
        fh.write("".join(line + "\n" for line in lines))


def write_genbank(path: str | Path, genes: list, rnas: list, targets: list, fetch, *,
                  translation_table: int = 11, circular=()) -> None:
    """Write the annotation as GenBank flat file: one record per annotated sequence, with its
    bases, ``gene`` + ``CDS`` features (``/locus_tag`` = the GFF3 ID, ``/translation``,
    ``/transl_table``, ``/inference``, the score in ``/note``) and RNA genes (``tRNA``,
    ``tmRNA``, ``rRNA``, ``ncRNA`` with ``/product``). Genes that run off a sequence end get
    ``<``/``>`` locations; spliced genes get ``gene``, ``mRNA`` and ``CDS`` joins.

    A target that covers its whole contig becomes a record named as the contig; a region of a
    contig becomes a record named ``contig:start-end`` (1-based, inclusive) in the region's own
    coordinates, as if the region had been given alone; whitespace in a name becomes ``_``.
    Records are written one at a time.

    Args:
        genes: :class:`genoctx.heads.decoder.GeneCall` or spliced genes, in contig coordinates.
        rnas: RNA features (``kind``, ``attrs`` ``product`` / ``inference``).
        targets: ``(contig, start, end, contig_length)`` of each annotated sequence, in order.
        fetch: ``fetch(contig, start, end)`` → forward-strand bases.
        circular: names of circular contigs: a whole one is a ``circular`` record, and a gene
            across its origin is located ``join(start..length,1..end)``.
    """
    import warnings

    from Bio import BiopythonWarning, SeqIO
    from Bio.Seq import Seq
    from Bio.SeqRecord import SeqRecord

    lengths = {}
    for contig, _, _, n in targets:
        lengths.setdefault(contig, n)
    order = _contig_order(lengths, list(genes) + list(rnas))
    by_contig: dict[str, list[tuple[str, object]]] = {}
    for gid, f in (_numbered(list(genes), order, lambda g: "")
                   + _numbered(list(rnas), order, lambda r: r.kind + "_")):
        by_contig.setdefault(f.contig, []).append((gid, f))
    for items in by_contig.values():
        items.sort(key=lambda t: (t[1].start, t[1].end, t[0]))

    def records():
        for contig, lo, hi, n in targets:
            name = contig if (lo, hi) == (0, n) else f"{contig}:{lo + 1}-{hi}"
            name = re.sub(r"\s+", "_", name)  # a LOCUS line holds no whitespace
            seq = _as_text(fetch(contig, lo, hi)).upper()
            rec = SeqRecord(Seq(seq), id=name, name=name, description=f"{name} annotated by genoctx")
            ring = contig in circular and (lo, hi) == (0, n)
            rec.annotations.update(molecule_type="DNA", topology="circular" if ring else "linear")
            seen = set()
            for fid, f in by_contig.get(contig, ()):
                key = (f.start, f.end, f.strand, getattr(f, "kind", "CDS"),
                       tuple(getattr(f, "cds", ())))
                # inside this target, and once even when two overlapping targets both called it
                if lo <= f.start and (f.end <= hi or ring) and key not in seen:
                    seen.add(key)
                    rec.features += _genbank_features(f, fid, lo, fetch, translation_table,
                                                      {contig: n} if ring else None)
            yield rec

    with atomic_open(path, "w", newline="\n") as fh, warnings.catch_warnings():
        warnings.simplefilter("ignore", BiopythonWarning)  # long LOCUS names are written anyway
        for rec in records():
            SeqIO.write(rec, fh, "genbank")


def _gb_location(a: int, b: int, strand: int, left: bool = False, right: bool = False):
    """A GenBank location; ``left`` / ``right``: that end runs off the sequence (``<`` / ``>``)."""
    from Bio.SeqFeature import AfterPosition, BeforePosition, SimpleLocation

    return SimpleLocation(BeforePosition(a) if left else a, AfterPosition(b) if right else b,
                          strand=strand)


def _genbank_features(f, fid: str, lo: int, fetch, table: int,
                      circle: dict[str, int] | None = None) -> list:
    """gene + CDS (or RNA, or gene + mRNA + CDS) features of one item, shifted by ``lo``;
    ``circle``: ``{contig: length}`` of a whole circular record (genes across its origin)."""
    from Bio.SeqFeature import CompoundLocation
    from Bio.SeqFeature import SeqFeature as Feat

    q = {"locus_tag": [fid]}
    info = getattr(f, "attrs", None) or {}
    kind = getattr(f, "kind", None)
    ring = forward_parts(f, circle)
    across = len(ring) == 2 and not getattr(f, "cds", None)  # across the origin of a circle
    if across:
        where = CompoundLocation([_gb_location(s, e, f.strand)
                                  for s, e in (ring if f.strand > 0 else ring[::-1])])
    if kind is not None:  # an RNA gene
        if not across:
            where = _gb_location(f.start - lo, f.end - lo, f.strand,
                                 *info.get("cut", (False, False)))
        rna = dict(q, **{k: [info[k]] for k in ("product", "inference") if info.get(k)})
        return [Feat(where, type="gene", qualifiers=q), Feat(where, type=kind, qualifiers=rna)]
    cds_parts = list(getattr(f, "cds", None) or [(f.start, f.end)])
    p5, p3, left, right = _partial_ends(f)
    t = int(info.get("transl_table", table))
    full = sum(e - s for s, e in cds_parts)
    cds = dict(q, codon_start=[str(1 + (full % 3 if p5 and not p3 else 0))], transl_table=[str(t)],
               product=["hypothetical protein"], inference=["ab initio prediction:genoctx"],
               translation=[_protein(_coding_sequence(f, fetch, circle), p5, t).rstrip("*")])
    if f.score is not None and math.isfinite(f.score):
        cds["note"] = [f"score={f.score:.4f}"]
    if across:
        return [Feat(where, type="gene", qualifiers=q), Feat(where, type="CDS", qualifiers=cds)]
    span = _gb_location(f.start - lo, f.end - lo, f.strand, left, right)
    if len(cds_parts) == 1:
        return [Feat(span, type="gene", qualifiers=q), Feat(span, type="CDS", qualifiers=cds)]
    last = len(cds_parts) - 1  # a partial gene's first / last part runs off the sequence
    parts = [_gb_location(s - lo, e - lo, f.strand, left and i == 0, right and i == last)
             for i, (s, e) in enumerate(cds_parts)]
    joined = CompoundLocation(parts if f.strand > 0 else parts[::-1])
    return [Feat(span, type="gene", qualifiers=q), Feat(joined, type="mRNA", qualifiers=dict(q)),
            Feat(joined, type="CDS", qualifiers=cds)]


def _runs(values: np.ndarray, digits: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(start, end, value) of runs of equal rounded values, skipping NaN."""
    r = np.round(values.astype(np.float64), digits)
    nan = np.isnan(r)
    key = np.where(nan, np.inf, r)
    cut = np.flatnonzero(key[1:] != key[:-1]) + 1
    starts = np.r_[0, cut]
    ends = np.r_[cut, len(r)]
    keep = ~nan[starts]
    return starts[keep], ends[keep], r[starts[keep]]


def _fmt_value(v: float, digits: int) -> str:
    s = f"{v:.{digits}f}"
    if "." in s:  # trailing zeros of the fraction only: 10 stays 10 at digits=0
        s = s.rstrip("0").rstrip(".")
    return "0" if s == "-0" else s


def _check_track(track) -> np.ndarray:
    track = np.asarray(track)
    if track.ndim != 1:
        raise InputError(f"bedGraph track must be 1-D, got shape {track.shape}")
    return track


def _value_codes(r: np.ndarray, digits: int) -> tuple[list[str], np.ndarray]:
    """Text of each distinct rounded value and each value's index into it.

    Rounded values are integers over ``10**digits`` (``np.round`` computes them so), so when
    they span a modest range the distinct ones are found by a bitmap instead of a sort."""
    scale = 10.0 ** digits
    with np.errstate(invalid="ignore", over="ignore"):
        codes = np.rint(r * scale)
        exact = (len(r) > 0 and bool(np.isfinite(codes).all()) and np.abs(codes).max() < 2 ** 40
                 and bool((codes / scale == r).all()))
    if exact:
        lo = codes.min()
        span = int(codes.max() - lo) + 1
        if span <= 4 * len(r) + (1 << 16):
            at = (codes - lo).astype(np.int64)
            present = np.zeros(span, bool)
            present[at] = True
            index = np.cumsum(present) - 1
            uniq = (np.flatnonzero(present) + lo) / scale
            return [_fmt_value(x, digits) for x in uniq.tolist()], index[at]
    uniq, inv = np.unique(r, return_inverse=True)
    return [_fmt_value(x, digits) for x in uniq.tolist()], inv


def _put_number(m: np.ndarray, x: np.ndarray) -> None:
    """Right-aligned decimal digits of ``x`` (integers >= 0) into the byte columns of ``m``,
    leading zeros left as NUL (compacted away afterwards)."""
    # 32-bit division is about four times faster than 64-bit; positions fit unless >= 2**32
    x = x.astype(np.uint32 if not len(x) or int(x.max()) < 2 ** 32 else np.uint64)
    w = m.shape[1]
    for k in range(w - 1, -1, -1):
        q = x // 10
        d = (x - q * 10).astype(np.uint8)
        d += 48
        if k < w - 1:
            d[x == 0] = 0  # a leading zero
        m[:, k] = d
        x = q


_BEDGRAPH_CHUNK = 1 << 18


def _bedgraph_body(track: np.ndarray, contig: str, start: int, digits: int) -> bytes:
    """bedGraph lines of one contig's track.

    Lines are laid out as rows of a byte matrix, numbers written digit by digit with numpy,
    and the NUL padding squeezed out: about four times faster than formatting each line in
    Python (``benchmarks/writers.py``), which matters for per-base tracks of megabases (every base is its own run when a
    probability changes at each). Values are formatted once per distinct rounded value."""
    if any(c in contig for c in "\t\n \0"):
        raise InputError(f"contig name {contig!r} contains whitespace (or NUL); bedGraph cannot "
                         "hold it")
    if start < 0:
        raise InputError(f"bedGraph start must be >= 0, got {start}")
    s, e, v = _runs(track, digits)
    if not len(s):
        return b""
    text, inv = _value_codes(v, digits)
    raw = [t.encode() + b"\n" for t in text]
    wv = max(map(len, raw))
    table = np.zeros((len(raw), wv), np.uint8)
    for i, b in enumerate(raw):
        table[i, :len(b)] = np.frombuffer(b, np.uint8)
    head = np.frombuffer(contig.encode() + b"\t", np.uint8)
    h, w = len(head), len(str(int(e[-1]) + start))
    a0, b0, v0 = h, h + w + 1, h + 2 * w + 2
    buf = np.empty((min(_BEDGRAPH_CHUNK, len(s)), v0 + wv), np.uint8)
    buf[:, :h] = head
    buf[:, a0 + w] = buf[:, b0 + w] = 9
    out = []
    for lo in range(0, len(s), _BEDGRAPH_CHUNK):
        hi = min(lo + _BEDGRAPH_CHUNK, len(s))
        m = buf[:hi - lo]
        _put_number(m[:, a0:a0 + w], s[lo:hi] + start)
        _put_number(m[:, b0:b0 + w], e[lo:hi] + start)
        m[:, v0:] = table[inv[lo:hi]]
        out.append(m[m != 0].tobytes())
    return b"".join(out)


def write_bedgraph(path: str | Path, track: np.ndarray, contig: str, *, start: int = 0,
                   name: str, append: bool = False, digits: int = 3) -> None:
    """Write a per-base track as bedGraph, merging runs of equal (rounded) values.

    Args:
        track: per-base values, shape [L]; NaN bases are left out.
        contig: chromosome name; ``start`` is the 0-based position of ``track[0]``.
        name: track name for the header line.
        append: add this contig's lines to an existing file (header written only once). The
            file is rewritten each time: for many contigs use :func:`write_bedgraph_many`.
        digits: decimals kept; runs are merged after rounding.
    """
    track = _check_track(track)
    path = Path(path)
    if append and path.exists():
        head = path.read_bytes()
    else:
        head = f'track type=bedGraph name="{name}"\n'.encode()
    body = _bedgraph_body(track, contig, start, digits)
    with atomic_open(path, "wb") as fh:
        fh.write(head)
        fh.write(body)


def write_bedgraph_many(path: str | Path, tracks: list[tuple[str, int, np.ndarray]], *,
                        name: str, digits: int = 3) -> None:
    """One bedGraph of several contigs' tracks ``[(contig, start, values [L]), ...]`` in the
    order given, written atomically in one pass (see :func:`write_bedgraph`)."""
    tracks = [(c, st, _check_track(t)) for c, st, t in tracks]
    with atomic_open(path, "wb") as fh:
        fh.write(f'track type=bedGraph name="{name}"\n'.encode())
        for contig, start, track in tracks:
            fh.write(_bedgraph_body(track, contig, start, digits))


_FIXED_STEP_MIN = 64  # bases of short runs worth a per-base block
_LONG_RUN = 16  # a run this long is cheaper as one interval


def _bigwig_entries(bw, contig: str, start: int, s: np.ndarray, e: np.ndarray,
                    v: np.ndarray) -> None:
    """Add one track's runs ``[s, e) = v`` to an open bigWig, in order. Stretches of short
    runs (a noisy probability track, where most bases are runs of their own) go in as per-base
    fixed-step blocks, about three times faster to write and half the size; long runs and short
    stretches as bedGraph-like intervals. Both read back as the same per-base values."""
    if not len(s):
        return
    import pyBigWig

    # a pyBigWig built without numpy takes lists only
    arr = (lambda x: x) if getattr(pyBigWig, "numpy", 0) else (lambda x: x.tolist())
    long = (e - s) >= _LONG_RUN
    # groups: consecutive runs that touch and are all long or all short
    cut = np.flatnonzero((s[1:] != e[:-1]) | (long[1:] != long[:-1])) + 1
    bounds = np.r_[0, cut, len(s)]
    pending = []

    def flush():
        if pending:
            idx = np.concatenate(pending)
            # chroms as a list: pyBigWig refuses a numpy unicode array of a non-ASCII name
            bw.addEntries([contig] * len(idx),
                          arr((s[idx] + start).astype(np.int64)),
                          ends=arr((e[idx] + start).astype(np.int64)),
                          values=arr(v[idx].astype(np.float64)))
            pending.clear()

    for a, b in zip(bounds[:-1].tolist(), bounds[1:].tolist()):
        lo, hi = int(s[a]), int(e[b - 1])
        if not long[a] and hi - lo >= _FIXED_STEP_MIN:
            flush()
            per_base = np.repeat(v[a:b], e[a:b] - s[a:b]).astype(np.float64)
            bw.addEntries(contig, lo + start, values=arr(per_base), span=1, step=1)
        else:
            pending.append(np.arange(a, b))
    flush()


def write_bigwig(path: str | Path, tracks: list[tuple[str, int, np.ndarray]],
                 lengths: dict[str, int], *, digits: int = 3) -> None:
    """Per-base tracks ``[(contig, start, values [L]), ...]`` as one bigWig (pyBigWig), runs of
    equal rounded values merged as in bedGraph. ``lengths`` gives every contig's length (the
    bigWig header), in file order. Written to a temporary name and renamed when complete."""
    import os

    import pyBigWig

    path = Path(path)
    missing = sorted({c for c, _, _ in tracks} - set(lengths))
    if missing:
        raise InputError(f"no length given for contig(s) {', '.join(missing[:5])}")
    order = {c: i for i, c in enumerate(lengths)}
    tmp = path.with_name(f".{path.name}.tmp{os.getpid()}")
    bw = pyBigWig.open(str(tmp), "w")
    try:
        bw.addHeader([(c, int(n)) for c, n in lengths.items() if n > 0])
        last = (None, 0)
        for contig, start, track in sorted(tracks, key=lambda t: (order[t[0]], t[1])):
            s, e, v = _runs(_check_track(track), digits)
            if start < 0 or start + len(track) > lengths[contig]:
                raise InputError(f"track {contig}:{start}+{len(track)} runs past the contig's "
                                 f"length {lengths[contig]}")
            if last[0] == contig and start < last[1]:
                raise InputError(f"tracks overlap on {contig} near {start}: a bigWig holds one "
                                 "value per base (annotate non-overlapping regions)")
            last = (contig, start + len(track))
            _bigwig_entries(bw, contig, start, s, e, v)
        bw.close()
        bw = None
        os.replace(tmp, path)
    finally:
        if bw is not None:
            bw.close()
        if tmp.exists():
            tmp.unlink()


# ----------------------------------------------------------------------------- reading GFF3

def _parse_interval(lo: str, hi: str, where: str) -> tuple[int, int]:
    """GFF3 1-based inclusive → 0-based half-open."""
    try:
        a, b = int(lo), int(hi)
    except ValueError:
        raise InputError(f"{where}: start/end '{lo}'/'{hi}' are not integers") from None
    if a < 1 or b < a:
        raise InputError(f"{where}: bad interval {lo}-{hi} (GFF3 is 1-based, start <= end)")
    return a - 1, b


def _parse_gff_attrs(text: str) -> dict[str, str]:
    out = {}
    for part in text.strip().split(";"):
        if "=" in part:
            k, v = part.split("=", 1)
            out[unquote(k.strip())] = unquote(v.strip())
    return out


def _partial_of(a: dict, strand: int) -> tuple[bool, bool]:
    """(5', 3') partial flags from NCBI ranges or Prodigal's ``partial=LR`` digits, read as the
    annotation reader reads them (:func:`genoctx.io.annotation.partial_sides`); a bare
    ``partial=true`` marks both ends."""
    from genoctx.io.annotation import partial_sides

    left, right, unplaced = partial_sides(a)
    if unplaced:
        left = right = True
    return (left, right) if strand != -1 else (right, left)


def read_gff3_genes(path: str | Path) -> list:
    """CDS features of a GFF3 file (any tool) as GeneCalls, one per coding sequence.

    CDS rows are grouped as the truth reader (:mod:`genoctx.io.annotation`) groups them: the
    rows under one transcript row (mRNA, ...) are one CDS whatever their IDs; under a gene row
    (bacterial gene → CDS) or a Parent with no row, by ``ID`` (a protein parent, as TAIR10
    adds, does not count); rows with an ID and no Parent by the ID; a row with neither is a
    gene of its own. So the rows of a spliced CDS are one gene whether they carry a shared ID
    (NCBI, Ensembl, genoctx), one ID each, or only ``Parent=`` (TAIR10, FlyBase); a CDS row
    shared by several isoforms belongs to each, and isoforms with the same CDS parts give one call. A CDS under a
    pseudogene (an ancestor whose type or biotype says pseudo, or ``pseudo=true``), or itself
    so marked, gets ``attrs["pseudo"] = "true"``. Plain, gzip, xz or bzip2. Score is column 6 as
    a float (NaN when '.' or not a number); the start codon comes from ``start_codon`` or
    Prodigal's ``start_type`` attribute.
    """
    import zlib

    from genoctx.heads.decoder import GeneCall
    from genoctx.io.fasta import open_text

    path = Path(path)
    if not path.is_file():
        raise InputError(f"GFF3 file {path} not found")
    try:
        with open_text(path, errors="strict") as fh:
            cds, rows_by_id = _read_gff3_cds(fh, path)
    except UnicodeDecodeError:
        raise InputError(f"{path} is not a GFF3 text file (plain, gzip, xz or bzip2)") from None
    except (EOFError, lzma.LZMAError, zlib.error, OSError) as exc:
        if isinstance(exc, (FileNotFoundError, PermissionError)):
            raise
        raise InputError(f"{path}: cannot read ({exc})") from None
    out, seen = [], set()
    for g in _group_cds(cds, rows_by_id):
        a = g["attrs"]
        parts = sorted(g["parts"])
        key = (g["contig"], g["strand"], tuple(parts))
        if key in seen:  # isoforms with the same CDS: one gene, as in the truth
            continue
        seen.add(key)
        extra = {"parts": parts} if len(parts) > 1 else {}
        if "bank_model" in a:  # as the decoder names it (write_gff3 writes attrs["model"] so)
            extra["model"] = a["bank_model"]
        if g["pseudo"]:
            extra["pseudo"] = "true"
        out.append(GeneCall(g["contig"], parts[0][0], max(p[1] for p in parts), g["strand"],
                            g["score"], a.get("start_codon") or a.get("start_type", ""),
                            _partial_of(a, g["strand"]), {**a, **extra}))
    return sorted(out, key=lambda g: (g.contig, g.start, g.end, g.strand))


# parents that are not transcripts (TAIR10's CDS rows name their protein as a second Parent)
_PROTEIN_TYPES = frozenset({"protein", "polypeptide", "mature_protein_region"})
_BIOTYPE_KEYS = ("transcript_biotype", "transcript_type", "biotype", "gene_biotype", "gene_type")


def _is_pseudo(kind: str, a: dict) -> bool:
    """The truth reader's rule (genoctx.io.annotation): a pseudo type, ``pseudo=true``, or a
    biotype naming a pseudogene."""
    return ("pseudo" in kind.lower() or a.get("pseudo", "").lower() == "true"
            or any("pseudogene" in a.get(k, "").lower() for k in _BIOTYPE_KEYS))


def _gff3_ids(text: str, key: str) -> list[str]:
    """The values of a multi-valued attribute (``Parent=a,b``), split before unescaping."""
    for part in text.strip().split(";"):
        k, _, v = part.partition("=")
        if unquote(k.strip()) == key:
            return [unquote(x) for x in v.strip().split(",") if x]
    return []


def _read_gff3_cds(fh, path: Path) -> tuple[list, dict]:
    """The CDS rows of an open GFF3 (``(contig, lo, hi, strand, score, attrs, parents,
    pseudo, lineno)``), and ``{ID: (type, first parent, pseudo)}`` of every row with an ID (to
    tell protein parents and pseudogene ancestors). A score that is not a number reads as NaN
    (it is not needed to score calls)."""
    cds, rows_by_id = [], {}
    for n, line in enumerate(fh, 1):
        if line.startswith("##FASTA"):
            break
        if not line.strip() or line.startswith("#"):
            continue
        col = line.rstrip("\n").split("\t")
        if len(col) != 9:
            raise InputError(f"{path}:{n}: expected 9 tab-separated columns, got {len(col)}")
        a = _parse_gff_attrs(col[8])
        parents = _gff3_ids(col[8], "Parent")
        pseudo = _is_pseudo(col[2], a)
        if "ID" in a:
            rows_by_id.setdefault(a["ID"], (col[2], parents[0] if parents else None, pseudo))
        if col[2] != "CDS":
            continue
        lo, hi = _parse_interval(col[3], col[4], f"{path}:{n}")
        strand = {"+": 1, "-": -1}.get(col[6], 0)
        try:
            score = float(col[5])
        except ValueError:  # '.', or anything else a tool writes there
            score = float("nan")
        cds.append((unquote(col[0]), lo, hi, strand, score, a, parents, pseudo, n))
    return cds, rows_by_id


def _is_transcript(row: tuple | None) -> bool:
    """Whether a parent row (``rows_by_id``'s value) is a transcript: a row whose type is not
    a gene's (:func:`genoctx.io.annotation._is_gene_type`)."""
    from genoctx.io.annotation import _is_gene_type

    return row is not None and not _is_gene_type(row[0])


def _ancestor_pseudo(rid: str | None, rows_by_id: dict) -> bool:
    """Whether row ``rid`` or one of its ancestors (first Parent up) is a pseudogene."""
    seen = set()
    while rid is not None and rid in rows_by_id and rid not in seen:
        seen.add(rid)
        _, parent, pseudo = rows_by_id[rid]
        if pseudo:
            return True
        rid = parent
    return False


def _group_cds(cds: list, rows_by_id: dict) -> list[dict]:
    """CDS rows grouped into coding sequences: ``(contig, transcript, ID)`` as in
    :func:`read_gff3_genes`, in file order."""
    groups: dict = {}
    for contig, lo, hi, strand, score, a, parents, pseudo, n in cds:
        tx = [p for p in parents if rows_by_id.get(p, ("",))[0] not in _PROTEIN_TYPES]
        # under a transcript row (not a gene): one CDS whatever the rows' IDs, as the truth
        # reader takes it; under a gene (bacterial gene → CDS) or no row, by ID
        keys = [(contig, p, "" if _is_transcript(rows_by_id.get(p)) else a.get("ID", ""))
                for p in tx] or [(contig, None, a.get("ID") or f"line{n}")]
        for key in keys:
            g = groups.get(key)
            if g is None:
                g = groups[key] = {"contig": contig, "parts": [], "strand": strand,
                                   "score": score, "attrs": a,
                                   "pseudo": _ancestor_pseudo(key[1], rows_by_id)}
            g["parts"].append((lo, hi))
            g["pseudo"] = g["pseudo"] or pseudo
    return list(groups.values())
