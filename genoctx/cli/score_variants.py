"""``genoctx score-variants``: VCF in → VCF out with model log-likelihood scores and consequences.

Every record is copied with these INFO fields added (declared in the header):

- ``GCX_DLL`` (Number=A, Float): alt − ref log-likelihood of the window, mean of both strands
  (:mod:`genoctx.heads.variant`); windows lie around the bases every spelling of the change
  covers (shared bases trimmed, an indel's repeat included), so equivalent spellings score the
  same while the record keeps its own; not with ``--model none``, which runs no model and
  gives the two fields below alone. An indel's windows differ in length, so its score carries
  the length change (insertions lower, deletions higher: ``benchmarks/variant_length_bias.py``);
  compare it with variants of the same length change;
- ``GCX_CLASS`` (Number=1, String): annotation class at POS, from ``--annotation``, else from the
  genes the decoder predicts (below; so the class and the consequence agree), with the RNA
  classes of the checkpoint's annotation head outside them;
- ``GCX_CONSEQ`` (Number=A, String): consequence of each ALT (:mod:`genoctx.heads.consequence`)
  from ``--annotation``, else from the genes the decoder predicts on the reference around the
  variants (each circle whole with ``--circular`` / ``--circular-declared``, genes across its
  origin included); codons are read in ``--translation-table`` (default 11) unless a CDS of
  the annotation names its own ``transl_table``;
- ``GCX_SCORE`` (Number=A, Float): a supervised head's score, only when one is given
  (:class:`genoctx.heads.variant.VariantHead`; none ships yet, so the CLI never writes it).

A REF that disagrees with the reference gets FILTER ``GCX_REF_MISMATCH`` and no score; a record
on a contig missing from the reference gets ``GCX_UNKNOWN_CONTIG`` (and the run stops with an
error when no variant lies on a reference contig: the wrong reference). An ALT with no one
sequence to score gets ``.`` in GCX_DLL and GCX_CONSEQ, the record kept as it was, and is
counted in the summary: a symbolic ALT or breakend, ``*``, N or IUPAC bases in the ALT, or in
the REF (a REF of N at a reference N). Records are read and written as a stream (scores in
chunks) into a temporary file renamed at the end; ``.gz`` output is bgzipped and
tabix-indexed (``.tbi``; ``.csi`` where a record ends past 2^29, beyond what a ``.tbi`` holds).
"""

from __future__ import annotations

import contextlib
import itertools
import re
import shutil
import sys
import tempfile
from collections.abc import Callable, Collection, Iterator
from dataclasses import dataclass
from pathlib import Path

import typer

from genoctx.cli.common import model_choice
from genoctx.errors import InputError

EPILOG = """Examples:

  genoctx score-variants calls.vcf.gz -R genome.fa -a genes.gff3 -o scored.vcf.gz

  genoctx score-variants brca1.vcf -R NG_005905.2.fa --context 2048 --model ckpt/ > out.vcf
"""

FILTER_MISMATCH = "GCX_REF_MISMATCH"
FILTER_UNKNOWN = "GCX_UNKNOWN_CONTIG"
_OUR_KEYS = ("GCX_DLL", "GCX_CLASS", "GCX_CONSEQ", "GCX_SCORE")
HINT_MAX_BYTES = 64 << 20  # references up to this size are scanned for circular headers
TBI_MAX_END = 1 << 29  # a .tbi index holds records ending at most here; past it, a .csi
MISMATCH_WARN = 0.10  # warn when REF differs from the reference in more of the records,
MISMATCH_WARN_MIN = 3  # and in at least this many (one odd record is no wrong genome build)


@dataclass
class Summary:
    """What one run did (printed at the end of ``genoctx score-variants``)."""

    records: int = 0
    variants: int = 0
    scored: int = 0
    ref_mismatch: int = 0
    unknown_contig: int = 0
    symbolic: int = 0
    ambiguous: int = 0
    ambiguous_ref: int = 0  # ALTs of a REF with an N/IUPAC base (a REF of N at a reference N)
    unannotated: int = 0  # variants on reference contigs the --annotation does not cover
    indexed: bool = False
    index: Path | None = None  # the .tbi or .csi written beside a bgzipped output
    not_indexed: str = ""  # why a bgzipped output has no index (unsorted, htslib failed, a pipe)
    model: bool = True  # False under --model none: ``scored`` counts consequences only

    def line(self) -> str:
        done = (f"{self.scored} scored" if self.model
                else f"{self.scored} annotated (--model none: no GCX_DLL)")
        return (f"{self.records} records, {self.variants} variants, {done}, "
                f"{self.ref_mismatch} ref mismatches, {self.unknown_contig} unknown contigs, "
                f"{self.symbolic} symbolic skipped"
                + (f", {self.ambiguous} ALT with N/IUPAC bases skipped" if self.ambiguous else "")
                + (f", {self.ambiguous_ref} ALT of a REF with N/IUPAC bases skipped"
                   if self.ambiguous_ref else "")
                + (f", {self.unannotated} on contigs without annotation" if self.unannotated
                   else ""))


@dataclass
class _Annotator:
    """Where GCX_CLASS and GCX_CONSEQ come from."""

    klass: Callable[[str, int], str]
    consequence: Callable[[str, int, str, str], str]
    class_source: str
    conseq_source: str
    covered: frozenset | None = None  # contigs an --annotation covers (None: genes predicted)


# ----------------------------------------------------------------------------- header

def _escape(text: str) -> str:
    """``text`` for the inside of a quoted VCF header value (VCF 4.3: ``\\`` and ``\"``)."""
    return text.replace("\\", "\\\\").replace('"', '\\"')


def _header_value(text: str) -> str:
    """A value of a structured header line (``<Key=value,...>``): as it is when plain, else
    double-quoted and escaped, so a file name holding ``,`` ``"`` ``<`` ``>`` ``=`` or a space
    cannot break the line (htslib then drops the line, or every line after it)."""
    return text if re.fullmatch(r"[\w.+\-/:@#%~]*", text) else f'"{_escape(text)}"'


def _header_lines(context: int, ann: _Annotator, provenance: str, supervised: bool,
                  scored: bool = True) -> list[str]:
    """Our header lines; ``scored`` False (``--model none``): no GCX_DLL is declared."""
    class_source, conseq_source = _escape(ann.class_source), _escape(ann.conseq_source)
    lines = [
        ('##INFO=<ID=GCX_DLL,Number=A,Type=Float,Description="genoctx: log-likelihood of the '
         f'alt window minus the ref window (up to {context} bases around the bases that '
         'every spelling of the change covers), mean of both strands">')] if scored else []
    lines += [
        ('##INFO=<ID=GCX_CLASS,Number=1,Type=String,Description="genoctx: annotation class at '
         f'POS, from {class_source}">'),
        ('##INFO=<ID=GCX_CONSEQ,Number=A,Type=String,Description="genoctx: consequence of each '
         'ALT (splice, nonsense, frameshift, stop_lost, start_lost, inframe_indel, missense, '
         f'splice_region, synonymous, noncoding) from {conseq_source}; an indel in a repeat: '
         'the least severe over its placements">'),
    ]
    if supervised:
        lines.append('##INFO=<ID=GCX_SCORE,Number=A,Type=Float,Description="genoctx: score of '
                     'the supervised variant head">')
    lines += [(f'##FILTER=<ID={FILTER_MISMATCH},Description="genoctx: REF differs from the '
               'reference FASTA, or runs past the end of its sequence; not scored">'),
              (f'##FILTER=<ID={FILTER_UNKNOWN},Description="genoctx: contig missing from the '
               'reference FASTA; not scored">'),
              f"##genoctx_score_variants=<{provenance}>"]
    return lines


def _output_header(text: str, ours: list[str]) -> str:
    """The input header with earlier genoctx lines dropped and ours before ``#CHROM``."""
    kept = [ln for ln in text.rstrip("\n").split("\n")
            if not (ln.startswith("##genoctx_score_variants=")
                    or any(f"ID={k}," in ln for k in (*_OUR_KEYS, FILTER_MISMATCH, FILTER_UNKNOWN)))]
    return "\n".join(kept[:-1] + ours + kept[-1:]) + "\n"


# ----------------------------------------------------------------------------- records

def _format_float(x: float | None) -> str:
    if x is None:
        return "."
    text = f"{x:.4f}"
    return "0.0000" if text == "-0.0000" else text


def _edit_record(line: str, info: list[str], flt: str | None) -> str:
    """A VCF data line with genoctx INFO entries replaced by ``info`` and FILTER ``flt`` added."""
    cols = line.rstrip("\n").split("\t")
    kept = [x for x in cols[7].split(";") if x and x != "." and x.split("=")[0] not in _OUR_KEYS]
    cols[7] = ";".join(kept + info) or "."
    filters = [x for x in cols[6].split(";")
               if x not in (".", "PASS", FILTER_MISMATCH, FILTER_UNKNOWN)]
    if flt is not None:
        cols[6] = ";".join(filters + [flt])
    elif cols[6] not in (".", "PASS"):
        cols[6] = ";".join(filters) or "."
    return "\t".join(cols) + "\n"


def _ref_ok(fa, rec) -> bool:
    """Whether REF is the reference's bases at POS (as :func:`genoctx.io.vcf.iter_variants`
    counts it: by REF's own length, not INFO/END, which a gVCF block or a symbolic SV sets)."""
    n, end = fa.lengths[rec.chrom], rec.start + len(rec.ref)
    return 0 <= rec.start and end <= n and fa.fetch(rec.chrom, rec.start, end).upper() == \
        rec.ref.upper().encode()


def _record_fields(rec, alleles: dict, fa, ann: _Annotator, supervised, context: int,
                   scored: bool = True) -> tuple[list[str], str | None]:
    """INFO entries and FILTER of one record; ``alleles``: ALT index → (Variant, GCX_DLL);
    ``scored`` False (``--model none``): no GCX_DLL entry."""
    known = rec.chrom in fa.lengths
    flt = FILTER_UNKNOWN if not known else None if _ref_ok(fa, rec) else FILTER_MISMATCH
    # no class where the reference has no base (POS past the end of its sequence)
    klass = ann.klass(rec.chrom, rec.start) if known and rec.start < fa.lengths[rec.chrom] else "."
    if not rec.alts:  # ALT "." (a reference call): the class at the site, no allele to score
        return [f"GCX_CLASS={klass}"], flt
    dll, conseq, score = [], [], []
    for k in range(1, len(rec.alts) + 1):
        v, d = alleles.get(k, (None, None))
        dll.append(_format_float(d))
        ok = v is not None and v.ref_ok
        conseq.append(_consequence(ann, fa, v) if ok else ".")
        if supervised is not None:
            score.append(_format_float(_supervised_score(supervised, fa, v, context) if ok
                                       else None))
    info = [f"GCX_DLL={','.join(dll)}"] if scored else []
    info += [f"GCX_CLASS={klass}", f"GCX_CONSEQ={','.join(conseq)}"]
    if supervised is not None:
        info.append(f"GCX_SCORE={','.join(score)}")
    return info, flt


def _consequence(ann: _Annotator, fa, variant) -> str:
    """GCX_CONSEQ of ``variant``: the least severe over every placement of its change (an
    indel in a repeat has several spellings, all the same sequence). A placement that leaves
    a feature's bases as they were shows the change does not touch it: deleting an A from
    the AAAA run across a TAA stop codon's end, spelled inside the codon, read 'frameshift',
    and spelled after it, 'noncoding' — which the sequence is. Every spelling now gets the
    same answer."""
    from genoctx.heads.consequence import least_severe
    from genoctx.heads.variant import spellings

    return least_severe(*(ann.consequence(variant.contig, p, r, a)
                          for p, r, a in spellings(fa, variant)))


def _supervised_score(head, fa, variant, context: int) -> float:
    """The head's score of ``variant`` in its normalised spelling, with GCX_DLL's windows (the
    same for every spelling of the change)."""
    from genoctx.heads.variant import change_span, normalize, variant_windows

    ref_ids, alt_ids = variant_windows(fa, change_span(fa, variant), context)
    return float(head(normalize(fa, variant), ref_ids, alt_ids))


# ----------------------------------------------------------------------------- passes

@contextlib.contextmanager
def _rereadable(given: Path):
    """``given`` as a file that htslib can read twice (the run reads it twice: a count, then the
    records): a pipe (``-`` or ``/dev/stdin``) is copied to a temporary file first, and plain gzip
    (which htslib reads but cannot rewind, unlike bgzip) is decompressed into one; a VCF with
    empty lines (hand-edited; htslib stops at the first) or a UTF-8 byte-order mark (a Windows
    editor's; htslib cannot read the header after it) is copied without them. Errors that name
    a temporary copy name ``given`` instead."""
    from genoctx.errors import GenoctxError
    from genoctx.io.fasta import UTF8_BOM, sniff_format
    from genoctx.io.spool import gunzip_copy, rereadable, shown_name
    from genoctx.io.vcf import starts_with_bom

    copies: list[Path] = []
    with tempfile.TemporaryDirectory(prefix="genoctx-vcf-") as tmpdir, \
            rereadable(given, name="input") as vcf:  # standard input (-), a pipe, a device
        fmt, compression = (sniff_format(vcf) if vcf.is_file() and vcf.stat().st_size
                            else (None, None))
        try:
            if compression == "gzip":
                vcf = gunzip_copy(vcf, Path(tmpdir) / "input.vcf")
                copies.append(vcf)
                compression = "none"
            if fmt == "vcf" and compression in ("none", "bgzf") and (
                    starts_with_bom(vcf) or _has_blank_line(vcf, compression)):
                kept = Path(tmpdir) / "input.trimmed.vcf"  # htslib stops at an empty line
                with _open_text(vcf, compression) as src, open(kept, "wb") as dst:
                    first = src.readline()
                    lines = itertools.chain([first.removeprefix(UTF8_BOM)], src)
                    dst.writelines(ln for ln in lines if ln.strip())
                vcf = kept
                copies.append(kept)
            yield vcf
        except GenoctxError as exc:  # name the input as the user gave it, not a copy
            text = str(exc)
            for copy in copies:
                text = text.replace(str(copy), shown_name(given))
            if text == str(exc):
                raise
            raise type(exc)(text) from None


_BLANK_LINE = re.compile(rb"(?m)^[ \t\r]*$")


def _open_text(path: Path, compression: str):
    import gzip

    return gzip.open(path, "rb") if compression == "bgzf" else open(path, "rb")


def _has_blank_line(path: Path, compression: str, piece_size: int = 1 << 20) -> bool:
    """Whether a plain or bgzipped VCF holds an empty (or all-blank) line anywhere (a
    hand-edited file); read in 1-MiB pieces, so memory does not grow with the file."""
    import zlib

    carry = b""
    try:
        with _open_text(path, compression) as fh:
            while piece := fh.read(piece_size):
                data = carry + piece
                cut = data.rfind(b"\n")
                if cut < 0:
                    carry = data
                    continue
                if _BLANK_LINE.search(data, 0, cut):  # the whole lines of this piece
                    return True
                carry = data[cut + 1:]
    except (OSError, EOFError, zlib.error) as exc:
        raise InputError(f"{path}: cannot decompress ({exc})") from None
    return bool(carry) and not carry.strip()  # a last line of only blanks, without its end


@contextlib.contextmanager
def _records(vcf: Path) -> Iterator:
    """The records of a VCF/BCF (pysam), htslib chatter silenced and parse errors as InputError."""
    import pysam

    from genoctx.io.fasta import sniff_format
    from genoctx.io.hts import quiet_htslib

    fmt, _ = sniff_format(vcf)  # missing, empty, a directory: one clear line
    if fmt not in ("vcf", "bcf"):
        raise InputError(f"{vcf} is not VCF or BCF; a VCF starts with a '##fileformat=VCF' line")
    with quiet_htslib():
        try:
            vf = pysam.VariantFile(str(vcf))
        except (ValueError, OSError) as exc:
            from genoctx.io.vcf import header_problem

            raise InputError(f"{vcf}: cannot read the VCF header "
                             f"({header_problem(vcf) or exc})") from None
        with vf:
            yield vf


def _survey(vcf: Path, fa, collector, declared: Collection[str] = (),
            counts: dict[str, int] | None = None) -> int:
    """First pass: count the variants, check the contigs and REF, collect gene-prediction
    targets.

    A VCF none of whose records is on a contig of the reference is refused (the wrong FASTA, or
    chr prefixes), unless its header declares a contig the reference has: then it is a part of
    a VCF that fits it (a Snakemake chunk holding only, say, chrM records), and those records
    are filtered ``GCX_UNKNOWN_CONTIG`` as in the whole file. ``counts`` (given) gets the
    variants per contig. Where REF differs from the reference in many records
    (:func:`_warn_mismatches`), a warning asks whether the genome build is the wrong one,
    before the scoring starts."""
    from genoctx.io.vcf import VariantStats, iter_variants

    n, contigs, stats = 0, set(), VariantStats()
    for v in iter_variants(vcf, fa, stats=stats):
        n += 1
        contigs.add(v.contig)
        if counts is not None:
            counts[v.contig] = counts.get(v.contig, 0) + 1
        if collector is not None:
            collector.add(v.contig, v.pos, v.end)
    if contigs and not contigs & set(fa.lengths) and not set(declared) & set(fa.lengths):
        raise InputError(f"none of the VCF's contigs ({', '.join(sorted(contigs)[:5])}) is in "
                         f"the reference ({', '.join(fa.contigs[:5])}); give the FASTA the "
                         "variants were called on (check chr prefixes)")
    _warn_mismatches(stats)
    return n


def _warn_mismatches(stats) -> None:
    """Warn (on stderr, even with --quiet) when REF differs from the reference in more than
    :data:`MISMATCH_WARN` of the records checked (those with an ALT, on a reference contig),
    and in at least :data:`MISMATCH_WARN_MIN` of them."""
    checked = stats.records - stats.no_alt - stats.unknown_contig
    if stats.ref_mismatch >= MISMATCH_WARN_MIN and stats.ref_mismatch > MISMATCH_WARN * checked:
        print(f"genoctx: warning: REF differs from the reference in {stats.ref_mismatch:,} of "
              f"{checked:,} records ({stats.ref_mismatch / checked:.0%}): were the variants "
              "called on another genome build? Those records are filtered "
              f"{FILTER_MISMATCH} and not scored; give the FASTA they were called on",
              file=sys.stderr)


def _warn_lengths(declared: dict[str, int | None], lengths: dict[str, int]) -> None:
    """Warn (on stderr, even with --quiet) when the VCF header's ``##contig`` lengths disagree
    with the reference's: the variants were likely called on another assembly, and their REF
    checks will fail or, worse, pass by chance."""
    off = [(c, n, lengths[c]) for c, n in declared.items()
           if n is not None and c in lengths and n != lengths[c]]
    if off:
        c, n, m = off[0]
        more = f" and {len(off) - 1} more" if len(off) > 1 else ""
        print(f"genoctx: warning: the VCF header says {c} is {n:,} bp, the reference "
              f"{m:,} bp{more}: were the variants called on another assembly?", file=sys.stderr)


def _annotation_lengths(annotation: Path) -> tuple[dict[str, int], dict[str, bytes]]:
    """Contig lengths an annotation states (:func:`genoctx.io.annotation.stated_sequences`),
    and the sequences a GenBank file holds (none from records without ORIGIN)."""
    from genoctx.io.annotation import annotation_format, read_sequences_genbank, stated_sequences

    if annotation_format(annotation) == "genbank":
        with contextlib.suppress(InputError):  # one parse gives both; without bases, below
            sequences = dict(read_sequences_genbank(annotation))
            return {c: len(seq) for c, seq in sequences.items()}, sequences
    return stated_sequences(annotation)[0], {}


def _check_annotation_lengths(annotation: Path, fa) -> dict[str, int]:
    """Warn (on stderr, even with --quiet), as :func:`_warn_lengths` does for the VCF, when the
    annotation states a length for a reference contig that differs from the reference's, or
    (GenBank) holds a sequence of the same length that differs: its coordinates are those of
    another assembly, and consequences would be read in the wrong frame. Returns the lengths
    it states (contig → bp)."""
    import numpy as np

    lengths, sequences = _annotation_lengths(annotation)
    off = [(c, n, fa.lengths[c]) for c, n in lengths.items()
           if c in fa.lengths and n != fa.lengths[c]]
    if off:
        c, n, m = off[0]
        more = f" and {len(off) - 1} more" if len(off) > 1 else ""
        print(f"genoctx: warning: the annotation {annotation.name} says {c} is {n:,} bp, the "
              f"reference {m:,} bp{more}: was it made on another assembly? (its consequences "
              "would be read in the wrong place)", file=sys.stderr)
    diff = []
    for c, seq in sequences.items():
        if c in fa.lengths and len(seq) == fa.lengths[c]:
            ref = np.frombuffer(fa.fetch(c).upper(), np.uint8)
            k = int(np.count_nonzero(np.frombuffer(seq.upper(), np.uint8) != ref))
            if k:
                diff.append((c, k))
    if diff:
        c, k = diff[0]
        more = f" and {len(diff) - 1} more" if len(diff) > 1 else ""
        print(f"genoctx: warning: the sequence of {c} in the annotation {annotation.name} "
              f"differs from the reference's at {k:,} base(s){more} (same length): was it "
              "made on another assembly?", file=sys.stderr)
    return lengths


def _warn_unannotated(counts: dict[str, int], fa, covered: frozenset,
                      annotation: Path) -> int:
    """Warn (on stderr, even with --quiet) about the variants on reference contigs the
    annotation does not cover (their class is '.' and their consequence ``noncoding`` for
    want of genes, not for being outside them); returns how many variants that is."""
    missing = {c: k for c, k in counts.items() if c in fa.lengths and c not in covered}
    if missing:
        shown = ", ".join(f"{c} ({k:,})" for c, k in list(missing.items())[:5])
        more = f" and {len(missing) - 5} more" if len(missing) > 5 else ""
        print(f"genoctx: warning: {sum(missing.values()):,} variant(s) lie on contig(s) that "
              f"the annotation {annotation.name} does not cover: {shown}{more}; they get "
              "GCX_CLASS=. and GCX_CONSEQ=noncoding", file=sys.stderr)
    return sum(missing.values())


def _check_model(model: str) -> str | None:
    """The checkpoint's sha256 (``None`` for ``none``), checked without loading it: a wrong
    path or changed weights fail in a fraction of a second, before the VCF is read."""
    if model == "none":
        return None
    from genoctx.model import checkpoint

    return checkpoint.verify_digest(checkpoint.resolve_checkpoint(model))


def _load_model(model: str, device: str, want_head: bool):
    """``(backbone, head or None)``; the head only when wanted and present; ``model``
    ``none``: ``(None, None)``."""
    if model == "none":
        return None, None
    from genoctx.cli.common import resolve_device
    from genoctx.heads.annotation import HEAD_CONFIG, HEAD_WEIGHTS, load_annotation_model
    from genoctx.model import checkpoint
    from genoctx.model.model import GenoCtxModel

    device = resolve_device(device)  # auto: imports torch, so only once the model is needed
    directory = checkpoint.resolve_checkpoint(model)
    if want_head and (directory / HEAD_WEIGHTS).is_file() and (directory / HEAD_CONFIG).is_file():
        return load_annotation_model(model, device=device)
    return GenoCtxModel.from_pretrained(model, device=device), None


def _annotator(fa, annotation: Path | None, collector, backbone, head, batch_size: int,
               quiet: bool, params=None, table: int = 11,
               circular: bool | Collection[str] = False) -> _Annotator:
    from genoctx.heads.consequence import GeneModel, predict_gene_model, whole_circles
    from genoctx.io.annotation import read_features
    from genoctx.progress import progress_bar

    if annotation is not None:
        features = read_features(annotation)
        if features and not set(features) & set(fa.lengths):
            raise InputError(f"none of the contigs of {annotation} ({', '.join(list(features)[:5])})"
                             f" is in the reference ({', '.join(fa.contigs[:5])}); the annotation "
                             "must be on the reference's sequences")
        stated = _check_annotation_lengths(annotation, fa)
        if not features and not stated:
            raise InputError(f"--annotation {annotation} holds no features and names no "
                             f"sequence (a header alone?): {_ANNOTATION_HINT}")
        genes = GeneModel.from_features(features, fa, table)
        source = f"the annotation {annotation.name}"
        return _Annotator(genes.klass, genes.consequence, source, source,
                          frozenset(features) | frozenset(stated))
    ring = frozenset(fa.lengths) if circular is True else frozenset(circular or ())
    targets = whole_circles(collector.regions(), fa.lengths, ring)
    with progress_bar("predicting genes", total=sum(len(t) for t in targets), quiet=quiet) as bar:
        pred = predict_gene_model(fa, targets, backbone=backbone, head=head,
                                  batch_size=max(1, batch_size // 4), progress=bar.advance,
                                  params=params, circular=ring)
    conseq_source = ("genes predicted on the reference by the genoctx bacterial decoder "
                     "(unspliced; for a eukaryote give --annotation)")
    klass_source = conseq_source + (" (RNA classes from the model's annotation head)"
                                    if head is not None else "")
    circles = sorted(ring & {t.contig for t in targets})
    if circles:  # which sequences were read as circles (genes may cross their origin)
        conseq_source += (f", circular sequences read whole: {', '.join(circles[:5])}".replace(
                              '"', "'")
                          + (f" and {len(circles) - 5} more" if len(circles) > 5 else ""))
    return _Annotator(pred.klass, pred.genes.consequence, klass_source, conseq_source)


def score_vcf(vcf: Path, reference: Path, out: Path | None, *, model: str = "embedded",
              context: int = 1024, annotation: Path | None = None, batch_size: int = 16,
              device: str = "cpu", quiet: bool = True, supervised=None,
              translation_table: int = 11, circular: bool | Collection[str] = False,
              reference_name: str | None = None) -> Summary:
    """Score every variant of ``vcf`` and write the annotated VCF to ``out`` (None: stdout).

    Args:
        circular: without ``annotation``, the reference contigs that are whole circular
            replicons (True: all; or a collection of names): each one holding a variant is
            decoded whole and closed, its genes may cross the origin (as ``genoctx annotate
            --circular``). An annotation carries its own genes across the origin, so giving
            both is an error.
        translation_table: NCBI genetic code for consequences: of the predicted genes (11 or 4,
            the decoder's), or of the annotation's CDS that name no ``transl_table`` (any).
        reference_name: how the header's provenance names the reference (None: its file
            name).
        supervised: the ``GCX_SCORE`` hook, a :class:`genoctx.heads.variant.VariantHead`
            (None: no such field).

        model: ``embedded``, a checkpoint directory, or ``none``: no model runs, so no
            ``GCX_DLL``; ``GCX_CLASS`` and ``GCX_CONSEQ`` come from ``annotation`` or from
            genes the decoder predicts from the sequence alone.

    Returns:
        The run's :class:`Summary`.
    """
    from genoctx.heads.consequence import TargetCollector
    from genoctx.io.fasta import FastaFile
    from genoctx.io.hts import bytes_kept
    from genoctx.io.vcf import RecordOrder, VariantStats

    vcf = Path(vcf)
    if context < 1 or batch_size < 1:
        raise InputError(f"--context and --batch-size must be at least 1 (got {context}, "
                         f"{batch_size})")
    if out is not None and str(out) != "-":
        from genoctx.cli.common import refuse_overwriting_inputs

        refuse_overwriting_inputs([Path(out), Path(f"{out}.tbi"), Path(f"{out}.csi")],
                                  {"input VCF": vcf, "--reference": reference,
                                   "--annotation": annotation})
    if out is not None and Path(out).is_dir():
        raise InputError(f"--out {out} is a folder; give the output VCF's file name")
    if out is not None and Path(out).name.lower().endswith(".bcf"):
        raise InputError(f"--out {out}: BCF output is not written; give a .vcf or .vcf.gz "
                         "name (bcftools view -Ob converts)")
    _check_table(translation_table, annotation)
    _check_circular(circular, annotation)
    _check_annotation_file(annotation)
    with contextlib.ExitStack() as stack:
        stack.enter_context(bytes_kept())  # Latin-1 in the header or INFO: written back as read
        # the output is opened first: one that cannot be written fails before any work
        sink, compressed = stack.enter_context(_output(out))
        vcf = stack.enter_context(_rereadable(vcf))
        with _records(vcf) as vf:  # missing / not VCF / unreadable header: fail before work
            declared = {c: vf.header.contigs[c].length for c in vf.header.contigs}
        fa = stack.enter_context(FastaFile(reference))
        _warn_lengths(declared, fa.lengths)
        sha = _check_model(model)
        collector = TargetCollector(fa.lengths) if annotation is None else None
        counts: dict[str, int] = {}
        # the VCF is surveyed before the model loads (torch, weights: seconds), so that the
        # wrong reference or chr prefixes are named at once
        total = _survey(vcf, fa, collector, declared, counts)
        backbone, head = _load_model(model, device, want_head=annotation is None)
        params = None
        if annotation is None:
            import dataclasses

            from genoctx.heads.decoder import DecoderParams

            params = DecoderParams()
            if head is not None:  # the checkpoint's decoder settings
                from genoctx.heads.annotate import decoder_params
                from genoctx.model.checkpoint import resolve_checkpoint

                params = decoder_params(resolve_checkpoint(model))
            params = dataclasses.replace(params, translation_table=translation_table)
        ann = _annotator(fa, annotation, collector, backbone, head, batch_size, quiet, params,
                         translation_table, circular)
        unannotated = (_warn_unannotated(counts, fa, ann.covered, Path(annotation))
                       if ann.covered is not None else 0)
        scored = backbone is not None
        provenance = (f"Version={_version()},"
                      + (f"Model=sha256:{sha[:16]},Context={context}," if scored else "Model=none,")
                      + f"Reference={_header_value(reference_name or Path(reference).name)}")
        stats, summary, layout = VariantStats(), Summary(model=scored), RecordOrder()
        with _records(vcf) as vf:
            sink.write(_output_header(str(vf.header), _header_lines(
                context, ann, provenance, supervised is not None, scored)))
            summary.scored = _write_records(vf, sink, vcf, fa, backbone, ann, stats, total,
                                            context=context, batch_size=batch_size,
                                            quiet=quiet, supervised=supervised, layout=layout)
    summary.records, summary.variants = stats.records, stats.variants
    summary.ref_mismatch, summary.unknown_contig = stats.ref_mismatch, stats.unknown_contig
    summary.symbolic, summary.ambiguous = stats.symbolic, stats.ambiguous
    summary.ambiguous_ref = stats.ambiguous_ref
    summary.unannotated = unannotated
    from genoctx.io.spool import is_stream

    if compressed and is_stream(out):
        summary.not_indexed = "a pipe or device is not indexed"
    elif compressed:
        summary.index, summary.not_indexed = _index(Path(out), layout)
        summary.indexed = summary.index is not None
    return summary


def _check_table(table: int, annotation: Path | None) -> None:
    """Any NCBI code for a given annotation; the decoder's codes when genes are predicted."""
    from genoctx.heads.consequence import check_table
    from genoctx.heads.decoder import check_options

    if annotation is None:
        check_options("auto", table)
    else:
        check_table(table)


_ANNOTATION_HINT = ("give the GFF3, GTF or GenBank file of the reference's genes, or leave out "
                    "--annotation to have genes predicted on the reference")


def _check_annotation_file(annotation: Path | None) -> None:
    """Refuse, before any work, an --annotation that cannot hold genes: missing, a folder, a
    device or pipe (``/dev/null`` reads as nothing; the file is read more than once), or an
    empty file."""
    if annotation is None:
        return
    path = Path(annotation)
    if not path.exists():
        why = "does not exist"
    elif path.is_dir():
        why = "is a folder"
    elif not path.is_file():
        why = "is a device or a pipe, not a file"
    elif path.stat().st_size == 0:
        why = "is empty"
    else:
        return
    raise InputError(f"--annotation {annotation} {why}: {_ANNOTATION_HINT}")


def _check_circular(circular, annotation: Path | None) -> None:
    if circular and annotation is not None:
        raise InputError("--circular and --circular-declared shape the genes genoctx predicts; "
                         "an --annotation brings its own (a gene across the origin as a GFF3 end "
                         "past the contig's length, or a GenBank join): drop one of them")


def _write_records(vf, sink, vcf, fa, backbone, ann, stats, total: int, *, context: int,
                   batch_size: int, quiet: bool, supervised, layout=None
                   ) -> int:
    """Second pass: score the variants in chunks and write each record as its turn comes;
    ``layout`` (a :class:`~genoctx.io.vcf.RecordOrder`, given) is told where each record
    lies.

    Returns the variants scored; without a model (``backbone`` None), those annotated (their
    REF matches the reference).
    """
    from genoctx.heads.variant import score_variants
    from genoctx.io.vcf import data_lines, iter_variants, record_text
    from genoctx.progress import progress_bar

    scored = 0
    with progress_bar("scoring variants" if backbone is not None else "annotating variants",
                      total=total, quiet=quiet) as bar:
        variants = iter_variants(vcf, fa, stats=stats)
        stream = (score_variants(backbone, fa, variants, context=context,
                                 batch_size=batch_size, progress=bar.advance)
                  if backbone is not None else _unscored(variants, bar.advance))
        pending = next(stream, None)
        with data_lines(vcf) as raw:
            for index, rec in enumerate(vf):
                alleles = {}
                while pending is not None and pending[0].record_index == index:
                    alleles[pending[0].allele_index] = pending
                    scored += (pending[1] is not None if backbone is not None
                               else pending[0].ref_ok)
                    pending = next(stream, None)
                info, flt = _record_fields(rec, alleles, fa, ann, supervised, context,
                                           backbone is not None)
                sink.write(_edit_record(record_text(rec, raw), info, flt))
                if layout is not None:
                    layout.add(rec.chrom, rec.start, rec.stop)
        assert pending is None, "variants left over after the last record"
    return scored


def _unscored(variants, progress, every: int = 256) -> Iterator:
    """``(variant, None)`` for each variant, as :func:`genoctx.heads.variant.score_variants`
    streams them when no model runs; ``progress`` is told every ``every`` variants."""
    n = 0
    for v in variants:
        yield v, None
        n += 1
        if n == every:
            progress(n)
            n = 0
    if n:
        progress(n)


# ----------------------------------------------------------------------------- output

@contextlib.contextmanager
def _output(out: Path | None):
    """A text sink: a temp file renamed onto ``out`` on success (bgzip for ``.gz``), or stdout.

    Text is written as UTF-8 with ``surrogateescape``, so bytes of the input that are not UTF-8
    (read by :func:`genoctx.io.hts.bytes_kept`) are written back unchanged."""
    from genoctx.io.atomic import atomic_path

    text = {"encoding": "utf-8", "errors": "surrogateescape"}
    if out is None:
        with tempfile.TemporaryDirectory() as tmpdir:
            tmp = Path(tmpdir) / "out.vcf"
            with open(tmp, "w", **text) as fh:
                yield fh, False
            sys.stdout.flush()
            stdout = getattr(sys.stdout, "buffer", None)
            with open(tmp, "rb") as fh:  # as written: a \r inside a line stays in it
                if stdout is not None:
                    shutil.copyfileobj(fh, stdout)
                    stdout.flush()
                else:  # a text-only stream (a test's StringIO)
                    sys.stdout.write(fh.read().decode(**text))
        return
    out = Path(out)
    compressed = out.name.lower().endswith((".gz", ".bgz"))
    with atomic_path(out) as tmp:
        if compressed:
            import io

            import pysam

            with pysam.BGZFile(str(tmp), "wb") as raw, io.TextIOWrapper(raw, **text) as fh:
                yield fh, True
        else:
            with open(tmp, "w", **text) as fh:
                yield fh, False


def _index(out: Path, layout) -> tuple[Path | None, str]:
    """Index ``out`` (a bgzipped VCF whose records ``layout``, a
    :class:`~genoctx.io.vcf.RecordOrder`, describes): a ``.tbi``, or a
    ``.csi`` where a record ends past 2^29, which a ``.tbi`` cannot hold. Returns ``(index,
    "")``, or ``(None, why)`` without an index: the records are not sorted, or htslib failed
    (a full disk, say). A stale index (.tbi or .csi, which htslib would read for the new file)
    is removed first either way."""
    import pysam

    from genoctx.io.hts import quiet_htslib

    tbi, csi = Path(f"{out}.tbi"), Path(f"{out}.csi")
    for stale in (tbi, csi):
        with contextlib.suppress(FileNotFoundError):
            stale.unlink()
    if layout.problem is not None:
        return None, "records not sorted by position; bcftools sort would sort them"
    want = csi if layout.max_end > TBI_MAX_END else tbi
    try:
        with quiet_htslib():
            pysam.tabix_index(str(out), preset="vcf", force=True, csi=want is csi)
    except OSError as exc:
        return None, (f"htslib could not write {want.name} ({exc}); check the folder's space "
                      f"and permissions, then run tabix -p vcf{' --csi' if want is csi else ''} "
                      f"{out}")
    if not want.is_file():
        return None, f"htslib wrote no {want.name}"
    return want, ""


def _version() -> str:
    from genoctx import __version__

    return __version__


# ----------------------------------------------------------------------------- command

def score_variants_cmd(
    variants: Path = typer.Argument(..., help="Input VCF or BCF (plain, bgzip or gzip); - reads "
                                    "standard input."),
    reference: Path = typer.Option(..., "--reference", "-R",
                                   help="Reference FASTA the variants were called on."),
    out: Path | None = typer.Option(None, "--out", "-o", help="Output VCF; .vcf.gz is bgzipped "
                                    "and tabix-indexed, .tbi or (positions past 2^29) .csi "
                                    "(default: plain VCF on stdout)."),
    context: int = typer.Option(1024, "--context", help="Bases of sequence around each variant "
                                "(equal flanks; clipped at contig ends)."),
    annotation: Path | None = typer.Option(None, "--annotation", "-a", help="Gene models "
                                           "(GFF3, GTF or GenBank) for GCX_CLASS and GCX_CONSEQ; "
                                           "default: genes predicted on the reference by the "
                                           "bacterial decoder (unspliced: for a eukaryote give "
                                           "one, e.g. from genoctx annotate --mode eukaryote) "
                                           "and the model head's RNA classes outside them."),
    model: str = typer.Option("embedded", "--model", callback=model_choice,
                              help="'embedded' (shipped), a "
                              "checkpoint directory, or 'none': no model runs, so no GCX_DLL "
                              "(GCX_CLASS and GCX_CONSEQ from --annotation or from genes "
                              "predicted on the sequence alone)."),
    device: str = typer.Option("auto", "--device", help="auto, cpu or cuda."),
    batch_size: int = typer.Option(16, "--batch-size", help="Windows per model call."),
    translation_table: int = typer.Option(11, "--translation-table", "-g", help="Genetic code "
                                          "for GCX_CONSEQ: 11 or 4 (TGA = Trp: Mycoplasma) for "
                                          "predicted genes; any NCBI code with --annotation, "
                                          "where a CDS's own transl_table wins."),
    circular: bool = typer.Option(False, "--circular", help="Without --annotation: every "
                                  "reference sequence is a whole circular replicon, so genes are "
                                  "predicted on each one whole and may cross its origin (as "
                                  "genoctx annotate --circular)."),
    circular_declared: bool = typer.Option(False, "--circular-declared", help="As --circular, "
                                           "but only for the reference sequences whose FASTA "
                                           "headers say they are circular: circular=true "
                                           "(Unicycler) or \\[topology=circular] (NCBI)."),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="No progress bar and no summary."),
) -> None:
    """Score the variants of a VCF with the model's log-likelihood; add consequences (VCF out)."""
    if circular and circular_declared:
        raise InputError("--circular makes every sequence a circle, --circular-declared only the "
                         "sequences that say they are: give one of them")
    _check_circular(circular or circular_declared, annotation)
    if str(variants) == "-" and str(reference) == "-":
        raise InputError("the VCF and --reference cannot both be standard input (-)")
    from genoctx.io.spool import is_stream, rereadable

    # the output header names the reference as given (standard input as "stdin"), not its copy
    shown = ("stdin" if str(reference) == "-" else str(reference)) if is_stream(reference) \
        else Path(reference).name
    with rereadable(reference, name="reference.fa") as ref:
        _score_variants(variants, ref, out, model, context, annotation, batch_size, device,
                        translation_table, circular, circular_declared, quiet, shown)


def _score_variants(variants, reference, out, model, context, annotation, batch_size, device,
                    translation_table, circular, circular_declared, quiet,
                    reference_name: str | None = None) -> None:
    from genoctx.cli.common import check_device_name, resolve_device
    from genoctx.io.fasta import circular_headers

    rings: list[str] = []
    # the hint alone reads a bacterial-sized reference's headers, never a large genome's
    hint = not quiet and reference.is_file() and reference.stat().st_size <= HINT_MAX_BYTES
    if annotation is None and not circular and (circular_declared or hint):
        rings = circular_headers(reference)
        if rings and not circular_declared:  # a hint only
            typer.echo(f"note: {len(rings)} reference sequence(s) are circular ({rings[0]}"
                       + (", ..." if len(rings) > 1 else "") + "): add --circular-declared "
                       "(those sequences) or --circular (all) to predict genes across their "
                       "origin", err=True)
        if circular_declared and not rings and not quiet:
            typer.echo("note: no reference sequence says it is circular; all are read as "
                       "lines", err=True)
    if out is not None and str(out) == "-":  # as samtools and bcftools: standard output
        out = None
    summary = score_vcf(variants, reference, out, model=model, context=context,
                        annotation=annotation, batch_size=batch_size,
                        # cuda without one is refused up front; auto is resolved (torch
                        # imported) when the model loads, after the inputs are checked
                        device=(resolve_device(device) if device.startswith("cuda")
                                else check_device_name(device)), quiet=quiet,
                        translation_table=translation_table,
                        circular=frozenset(rings) if circular_declared else circular,
                        reference_name=reference_name)
    if out is not None and out.name.lower().endswith((".gz", ".bgz")) and not summary.indexed:
        typer.echo(f"genoctx: warning: {out} is not tabix-indexed ({summary.not_indexed})",
                   err=True)
    if not quiet:
        where = f"; wrote {out}" if out is not None else ""
        if summary.index is not None and summary.index.suffix == ".csi":
            where += f" and {summary.index.name} (a CSI index: positions past 2^29)"
        typer.echo(f"genoctx: {summary.line()}{where}", err=True)


def register(app: typer.Typer) -> None:
    app.command("score-variants", epilog=EPILOG)(score_variants_cmd)
