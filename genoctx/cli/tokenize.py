"""``genoctx tokenize``: FASTA regions (or a BAM pileup) → context windows of token ids (.npz).

The output holds, for ``W`` windows of ``context`` tokens:

- ``tokens``  [W, context] token ids, the last window of each region padded with ``<pad>`` (0)
- ``starts`` / ``ends`` [W] 0-based half-open genomic interval of each window's valid tokens
- ``contigs`` [W] contig of each window; ``lengths`` [W] valid tokens per window
- ``softmask`` [W, context] bool, lowercase bases (``--kind nucleotide``)
- ``channels`` [W, context, C] float16 and ``channel_names`` [C] (``--kind pileup``)
- ``kind``, ``context``, ``overlap``, ``vocab_size``, ``k`` (k-mer only), ``source``

Windows never cross a region or contig boundary. They hold sequence tokens only: no BOS or EOS
is added (the model puts BOS before a window itself, which is why ``annotate --context`` and
``score-variants --context`` count it and this ``--context`` does not).
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass, field
from enum import Enum
from pathlib import Path

import numpy as np
import typer

from genoctx.cli.common import resolve_targets
from genoctx.errors import GenoctxError, InputError
from genoctx.io.atomic import atomic_open
from genoctx.io.fasta import FastaFile, check_nucleotide
from genoctx.io.regions import Region
from genoctx.progress import progress_bar
from genoctx.tokenize import nucleotide as nt
from genoctx.tokenize.kmer import KmerTokenizer
from genoctx.tokenize.windows import DEFAULT_CONTEXT, count_windows, fill_windows, plan_windows

EPILOG = """Examples:

  genoctx tokenize ce.fa --region CHROMOSOME_I:1-1,009,800 --context 131072 --out ce.npz

  genoctx tokenize genome.fa.gz --regions targets.bed --kind kmer --k 6 --out kmers.npz

  genoctx tokenize reads.bam --kind pileup --reference ce.fa -r CHROMOSOME_I:1-20000 -o p.npz
"""


class Kind(str, Enum):
    nucleotide = "nucleotide"
    kmer = "kmer"
    pileup = "pileup"


@dataclass
class _Outputs:
    """Preallocated output arrays, filled region by region."""

    tokens: np.ndarray
    softmask: np.ndarray | None = None
    channels: np.ndarray | None = None
    channel_names: list[str] | None = None
    starts: list[np.ndarray] = field(default_factory=list)
    ends: list[np.ndarray] = field(default_factory=list)
    contigs: list[str] = field(default_factory=list)
    lengths: list[np.ndarray] = field(default_factory=list)


def _record(out: _Outputs, r: Region, plan: list[tuple[int, int]], bases) -> None:
    """Genomic starts/ends of the windows; ``bases`` maps token offsets to base offsets."""
    tok_start = np.array([s for s, _ in plan], dtype=np.int64)
    tok_end = np.array([e for _, e in plan], dtype=np.int64)
    out.starts.append(r.start + bases(tok_start))
    out.ends.append(r.start + bases(tok_end))
    out.lengths.append(tok_end - tok_start)
    out.contigs += [r.contig] * len(plan)


def _fill_sequence(fa: FastaFile, targets: list[Region], kind: Kind, tok: KmerTokenizer | None,
                   context: int, overlap: int, bar) -> _Outputs:
    num = [len(r) if tok is None else tok.num_tokens(len(r)) for r in targets]
    num_windows = sum(count_windows(n, context, overlap) for n in num)
    dtype = np.uint8 if tok is None else np.int32
    _check_memory(num_windows, context, np.dtype(dtype).itemsize + (kind is Kind.nucleotide),
                  max(num, default=0), overlap, targets)
    plans = [plan_windows(n, context, overlap) for n in num]
    out = _Outputs(tokens=np.full((num_windows, context), nt.PAD, dtype=dtype))
    if kind is Kind.nucleotide:
        out.softmask = np.zeros((num_windows, context), dtype=bool)
    bar.update(total=num_windows)
    row = 0
    for r, plan in zip(targets, plans):
        rows = slice(row, row + len(plan))
        # a protein FASTA is refused, as annotate and embed refuse it (its first 64 kb tell)
        check_nucleotide(r.contig, fa.fetch(r.contig, r.start, min(r.end, r.start + 65_536)),
                         fa.path)
        # Token ids straight from the file: one read-and-translate pass (see FastaFile).
        ids = fa.fetch_array(r.contig, r.start, r.end, table=nt.ENCODE_TABLE)
        if tok is None:
            mask = fa.fetch_array(r.contig, r.start, r.end, table=nt.SOFTMASK_TABLE)
            fill_windows(mask.view(bool), plan, out.softmask[rows])
            _record(out, r, plan, lambda t: t)
        else:
            ids = tok.from_base_ids(ids)
            _record(out, r, plan, lambda t, n=len(r): tok.base_offsets(t, n))
        fill_windows(ids, plan, out.tokens[rows])
        row += len(plan)
        bar.advance(len(plan))
    return out


def _fill_pileup(bam: Path, reference: Path, targets: list[Region], context: int,
                 overlap: int, bar, **filters) -> _Outputs:
    import warnings

    from genoctx.io.bam import IndexNote, PileupWarning
    from genoctx.tokenize.pileup import tokenize_pileup

    num_windows = sum(count_windows(len(r), context, overlap) for r in targets)
    longest = max(len(r) for r in targets)
    # the windows' tokens alone, before the first pileup tells the channels, and the arrays
    # the pileup of the longest region holds while it is computed
    _check_memory(num_windows, context, 1, longest, overlap, targets,
                  working=longest * PILEUP_BYTES_PER_BASE)
    plans = [plan_windows(len(r), context, overlap) for r in targets]
    out, row = None, 0
    bar.update(total=num_windows)
    for r, plan in zip(targets, plans):
        with warnings.catch_warnings(record=True) as said:
            warnings.simplefilter("always", PileupWarning)
            warnings.simplefilter("always", IndexNote)
            ids, channels, names = tokenize_pileup(str(bam), str(reference), r, **filters)
        # reads whose bases the filters leave out, where the user would not know; an index
        # built for this run only
        for w in said:
            if issubclass(w.category, (PileupWarning, IndexNote)):
                typer.echo(f"note: {w.message}", err=True)
            else:
                warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
        if len(ids) != len(r) or channels.shape[0] != len(r):
            raise GenoctxError(f"pileup of {r} returned {len(ids)} tokens for {len(r)} bases")
        if out is None:
            _check_memory(num_windows, context, ids.dtype.itemsize + 2 * channels.shape[1],
                          longest, overlap, targets, working=longest * PILEUP_BYTES_PER_BASE)
            out = _Outputs(tokens=np.full((num_windows, context), nt.PAD, dtype=ids.dtype),
                           channels=np.zeros((num_windows, context, channels.shape[1]),
                                             dtype=np.float16),
                           channel_names=list(names))
        rows = slice(row, row + len(plan))
        fill_windows(ids, plan, out.tokens[rows])
        fill_windows(channels, plan, out.channels[rows])  # cast to float16 as it is copied
        _record(out, r, plan, lambda t: t)
        row += len(plan)
        bar.advance(len(plan))
    return out


def _vocab_size(kind: Kind, tok: KmerTokenizer | None) -> int:
    """Rows an embedding table needs for these token ids (pileup ids run past the bases')."""
    if kind is Kind.pileup:
        from genoctx.tokenize.pileup import PILEUP_VOCAB_SIZE

        return PILEUP_VOCAB_SIZE
    return nt.VOCAB_SIZE if tok is None else tok.vocab_size


# bytes each window costs besides its tokens: its plan entry (a tuple of two ints), start, end
# and length (int64) and its contig's list entry (the name itself: 4 bytes per character)
WINDOW_BYTES = 160
# bytes a pileup holds per base of the region being computed, besides the output windows: the
# raw float32 [L, 8] counts, the float32 [L, 9] normalised channels, copies of the covered rows
# while they are computed, int64 tokens. Measured with /usr/bin/time (max RSS) of
# `genoctx tokenize READS --kind pileup --reference ce.fa -r CHROMOSOME_I -q -o x.npz`, every
# one of its 1,009,800 bases covered (100-bp reads cut from ce.fa every 50 bp): 235,332 KB,
# against 80,376 KB over CHROMOSOME_I:1-1000 (the same output arrays at the default --context):
# 157 bytes a base, less the 18 of float16 channels written into the windows: 139. Uncovered
# bases cost less (numpy's zeroed pages stay unmapped: the real C. elegans reads, 276 bases
# covered, 16 in all). Rounded up, as the check is to refuse what would not fit.
PILEUP_BYTES_PER_BASE = 160


def _check_memory(num_windows: int, context: int, bytes_per_token: int, longest: int,
                  overlap: int, targets: list[Region], working: int = 0) -> None:
    """Refuse, before planning or allocating, windows that would not fit in this machine's
    memory, with ``working`` bytes held at once besides them (a region's pileup arrays)."""
    import os

    name = 4 * max((len(r.contig) for r in targets), default=0)
    windows = num_windows * (context * bytes_per_token + WINDOW_BYTES + name)
    need = windows + working
    try:
        have = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (AttributeError, ValueError, OSError):  # no such query here: do not guess
        return
    if need > have // 2:
        if working > windows:  # the longest region's pileup, not the windows, is the bulk
            fix = (f"split the longest region ({longest:,} bp) into smaller ones (--regions "
                   f"BED): its pileup holds ~{working / longest:.0f} bytes a base while it is "
                   "computed")
        elif overlap * 2 > context:  # windows step by context - overlap: the overlap makes them
            fix = (f"give a smaller --overlap (windows start every --context - --overlap = "
                   f"{context - overlap:,} tokens)")
        else:
            fix = (f"give a smaller --context (the longest region here is {longest:,} tokens; "
                   "every window is padded to --context)")
        what = f"{num_windows:,} windows of {context:,} tokens" + (
            f" and the pileup of a {longest:,}-bp region" if working else "")
        raise InputError(f"{what} need {need / 2**30:.1f} GiB, more than half of this "
                         f"machine's {have / 2**30:.1f} GiB: {fix}")


def _arrays(out: _Outputs, kind: Kind, tok: KmerTokenizer | None, context: int, overlap: int,
            source: Path) -> dict[str, np.ndarray]:
    arrays = {
        "tokens": out.tokens,
        "starts": np.concatenate(out.starts).astype(np.int64),
        "ends": np.concatenate(out.ends).astype(np.int64),
        "contigs": np.array(out.contigs, dtype=str),
        "lengths": np.concatenate(out.lengths).astype(np.int64),
        "kind": np.array(kind.value), "context": np.array(context),
        "overlap": np.array(overlap), "source": np.array(str(source)),
        "vocab_size": np.array(_vocab_size(kind, tok)),
    }
    if out.softmask is not None:
        arrays["softmask"] = out.softmask
    if out.channels is not None:
        arrays["channels"] = out.channels
        arrays["channel_names"] = np.array(out.channel_names, dtype=str)
    if tok is not None:
        arrays["k"] = np.array(tok.k)
    return arrays


def _contigs_of_the_reads(bam: Path, targets: list[Region], quiet: bool) -> list[Region]:
    """The reference's records that the alignments' header also has (a reference may hold
    more: decoys, organelles); a note names the others."""
    from genoctx.io.bam import alignment_contigs

    named = set(alignment_contigs(bam))  # the header only: the index is checked when read
    kept = [t for t in targets if t.contig in named]
    if not kept:
        raise InputError(f"no record of the reference is a contig of {bam.name}'s header; is "
                         "--reference the FASTA the reads were aligned to?")
    left = [t.contig for t in targets if t.contig not in named]
    if left and not quiet:
        typer.echo(f"note: {len(left)} reference record(s) are not in the reads' header and "
                   f"are left out ({', '.join(left[:3])}{', ...' if len(left) > 3 else ''})",
                   err=True)
    return kept


def _check_paths(input: Path, out: Path, kind: Kind, reference: Path | None) -> None:
    from genoctx.io.spool import is_stream

    if str(out) == "-":
        raise InputError("--out -: give --out /dev/stdout to write the .npz to standard output")
    if out.is_dir():
        raise InputError(f"--out {out} is a directory; give a file name such as tokens.npz")
    if not is_stream(out) and out.suffix.lower() != ".npz":
        raise InputError(f"--out {out}: tokenize writes a .npz archive; give a name ending .npz")
    if input.is_file():  # a pipe is read once: its format is checked where it is read
        from genoctx.io.fasta import FORMAT_NAMES, sniff_format

        fmt, _ = sniff_format(input)
        aligned = fmt in ("bam", "cram", "sam")
        # a pileup reads regions through an index, which a SAM cannot have: it is named as
        # one to convert here, as open_alignment refuses it
        sam = (f", from a sorted, indexed BAM (samtools sort -o {input.stem}.bam {input.name} "
               "&& samtools index)") if fmt == "sam" else ""
        if aligned and kind is not Kind.pileup:
            raise InputError(f"{input} is {FORMAT_NAMES[fmt]}: aligned reads are tokenized with "
                             f"--kind pileup --reference REF.fa (the FASTA they are aligned to)"
                             f"{sam}")
        if kind is Kind.pileup and fmt in ("fasta", "genbank", "embl"):
            raise InputError(f"--kind pileup reads aligned reads (a sorted BAM or CRAM), and "
                             f"{input} is {FORMAT_NAMES[fmt]}: give the reads as INPUT and this "
                             "file as --reference, or drop --kind pileup")
    if kind is Kind.pileup and reference is None:
        raise InputError("--kind pileup needs --reference REF.fa (the FASTA the reads are "
                         "aligned to)")
    if kind is not Kind.pileup and reference is not None:
        raise InputError("--reference is only used with --kind pileup; INPUT is the FASTA")


def tokenize(
    input: Path = typer.Argument(..., help="FASTA (plain, gzip, bgzip, xz, bzip2); a BAM/CRAM with "
                                 "--kind pileup."),
    out: Path = typer.Option(..., "--out", "-o", help="Output .npz file (written atomically)."),
    region: list[str] = typer.Option(None, "--region", "-r", help="Region, 1-based inclusive "
                                     "(chr1:1,000-2,000 or a whole contig); repeatable."),
    regions: Path = typer.Option(None, "--regions", help="BED file of regions (0-based)."),
    kind: Kind = typer.Option(Kind.nucleotide, "--kind", help="Token kind."),
    k: int | None = typer.Option(None, "--k", help="Bases per token for --kind kmer "
                                 "(default 6)."),
    reference: Path = typer.Option(None, "--reference", help="Reference FASTA for --kind "
                                   "pileup."),
    context: int = typer.Option(DEFAULT_CONTEXT, "--context", help="Tokens per window "
                                "(sequence tokens; no BOS is added)."),
    overlap: int = typer.Option(0, "--overlap", help="Tokens shared by consecutive windows."),
    min_baseq: int = typer.Option(None, "--min-baseq", show_default=False,
                                  help="--kind pileup: lowest base quality counted (default 13; "
                                  "reads without qualities count as 0)."),
    min_mapq: int = typer.Option(None, "--min-mapq", show_default=False,
                                 help="--kind pileup: lowest mapping quality of a counted read "
                                 "(default 0)."),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="No progress bar."),
) -> None:
    """Tokenize a FASTA (whole file, --region or --regions) into windows of token ids."""
    from genoctx.cli.common import refuse_overwriting_inputs

    refuse_overwriting_inputs([out], {"input": input, "--reference": reference,
                                      "--regions": regions})
    _check_paths(input, out, kind, reference)
    if k is not None and kind is not Kind.kmer:
        raise InputError("--k is the k-mer size of --kind kmer; add --kind kmer or drop --k")
    if kind is not Kind.pileup and (min_baseq, min_mapq) != (None, None):
        raise InputError("--min-baseq and --min-mapq filter the reads of --kind pileup")
    min_baseq = 13 if min_baseq is None else min_baseq
    min_mapq = 0 if min_mapq is None else min_mapq
    if min_baseq < 0 or min_mapq < 0:
        raise InputError(f"--min-baseq and --min-mapq must be 0 or more (got {min_baseq}, "
                         f"{min_mapq})")
    if context > DEFAULT_CONTEXT:
        raise InputError(f"--context is at most {DEFAULT_CONTEXT:,} tokens (got {context:,})")
    plan_windows(0, context, overlap)  # validates context/overlap before any reading
    tok = KmerTokenizer(6 if k is None else k) if kind is Kind.kmer else None
    from genoctx.io.spool import rereadable

    with rereadable(input) as given, \
            rereadable(reference, name="reference") if kind is Kind.pileup \
            else contextlib.nullcontext(None) as ref, \
            FastaFile(ref if kind is Kind.pileup else given) as fa:
        targets = resolve_targets(fa, region, regions)
        if kind is Kind.pileup and not (region or regions):
            targets = _contigs_of_the_reads(given, targets, quiet)
        with progress_bar(f"tokenize {input.name}", total=None, quiet=quiet) as bar:
            if kind is Kind.pileup:
                result = _fill_pileup(given, fa.path, targets, context, overlap, bar,
                                      min_baseq=min_baseq, min_mapq=min_mapq)
            else:
                result = _fill_sequence(fa, targets, kind, tok, context, overlap, bar)
    if result is None or len(result.tokens) == 0:
        raise InputError("nothing to tokenize: every region is empty")
    arrays = _arrays(result, kind, tok, context, overlap, input)
    with atomic_open(out, "wb") as fh:
        np.savez_compressed(fh, **arrays)
    if not quiet:
        typer.echo(f"wrote {len(result.tokens)} windows of {context} tokens to {out}", err=True)


def register(app: typer.Typer) -> None:
    """Add ``genoctx tokenize`` to the app."""
    app.command("tokenize", epilog=EPILOG)(tokenize)
