"""``genoctx annotate``: genes and RNA features of a FASTA → GFF3, BED and bedGraph tracks."""

from __future__ import annotations

import contextlib
import itertools
import tempfile
from pathlib import Path

import typer

from genoctx.cli.common import model_choice
from genoctx.errors import InputError

FORMATS = ("gff3", "bed", "bedgraph", "bigwig", "faa", "ffn", "gbk")

EPILOG = """Examples:

  genoctx annotate data/examples/Yersinia_pestis_pPCP1_NC_005816.fna --out results/pPCP1

  genoctx annotate genome.fa.gz --region chr1:1-1,000,000 --formats gff3 --out chr1_1Mb

  genoctx annotate genome.fa --formats gff3,faa,ffn --out genome  # + proteins, CDS sequences

  genoctx annotate worm_chunk.fa --mode eukaryote --out worm   # spliced genes (exons, CDS)

  genoctx annotate metagenome.fa --out mg   # contigs of many organisms: grouped by composition

  genoctx annotate contigs.fa --procedure meta --out contigs   # metagenomic contigs, each alone

  genoctx annotate plasmids.fa --circular --out plasmids     # complete circular replicons

  genoctx annotate asm.fa --circular-declared --out asm   # Unicycler circles

  genoctx annotate mycoplasma.fa -g 4 --out myco               # genetic code 4 (TGA = Trp)

  zcat genome.fa.gz | genoctx annotate - --formats gff3,faa --out genome   # from a pipe
"""


def annotate(
    input: Path = typer.Argument(..., help="FASTA (plain, gzip, bgzip, xz or bzip2; many "
                                 "records), or GenBank/EMBL (their sequences); - reads standard "
                                 "input."),
    region: list[str] | None = typer.Option(None, "--region", "-r",
                                            help="Region chr:start-end (1-based, inclusive); repeatable."),
    regions: Path | None = typer.Option(None, "--regions", help="BED file of regions."),
    out: str | None = typer.Option(None, "--out", "-o", help="Output prefix (default: the input "
                                   "name without its extension); a folder (an existing one, or "
                                   "one ending in /) gets the files inside it."),
    formats: str | None = typer.Option(None, "--formats",
                                       help="Comma-separated: gff3, bed, bedgraph, bigwig "
                                       "(per-base tracks as .bw), faa (proteins), ffn (coding "
                                       "sequences), gbk (GenBank with the bases). Default: "
                                       "gff3,bed,bedgraph (gff3,bed with --model none)."),
    model: str = typer.Option("embedded", "--model", callback=model_choice,
                              help="'embedded' (shipped), a checkpoint "
                              "directory, or 'none' (sequence-only decoding)."),
    device: str = typer.Option("auto", "--device", help="auto, cpu or cuda."),
    context: int = typer.Option(8192, "--context", help="Tokens the model reads per window: BOS + "
                                 "(context - 1) bases; a multiple of 128 (the attention block) is fastest."),
    overlap: int = typer.Option(256, "--overlap", help="Bases shared by neighbouring windows."),
    batch_size: int = typer.Option(None, "--batch-size", show_default=False,
                                   help="Windows per model call (default: 4 on the CPU; on a "
                                        "GPU 64 at the default context, as many as hold "
                                        "524,224 bases)."),
    mode: str = typer.Option("prokaryote", "--mode", help="prokaryote (genes without introns, "
                             "tRNA/rRNA/ncRNA) or eukaryote (spliced genes from the model)."),
    rna: str = typer.Option("auto", "--rna", help="RNA genes from: auto (ARAGORN + barrnap when "
                            "installed, else the model), tools, model or none."),
    procedure: str = typer.Option("auto", "--procedure", "-p", help="Gene statistics: single "
                                  "(self-trained on all records together), meta (each record "
                                  "from the best pre-trained model of the bank, then adapted), "
                                  "groups (the records split into organisms by G+C and "
                                  "tetranucleotide profiles, each group self-trained, or meta "
                                  "under 150 kb) or auto (meta under 150 kb in all, groups when "
                                  "the records' composition says they are of different "
                                  "organisms, else single)."),
    translation_table: int = typer.Option(11, "--translation-table", "-g", help="Genetic code "
                                          "of the genes: 11 (bacteria, archaea) or 4 (TGA = Trp: "
                                          "Mycoplasma, Spiroplasma, Ureaplasma)."),
    orf_scorer: bool = typer.Option(True, "--orf-scorer/--no-orf-scorer", help="Weigh each "
                                    "ORF with the cross-genome ORF scorer fitted on bacterial "
                                    "genomes (default), or decode from the genome's own "
                                    "statistics alone (Prodigal-like; docs/results.md shows "
                                    "where that is better, e.g. some archaea)."),
    domain: str = typer.Option("auto", "--domain", help="The genome's domain: auto (named by "
                               "its 16S/23S rRNA genes, bacteria without one), bacteria or "
                               "archaea. Archaea are decoded without the ORF scorer (fitted on "
                               "bacteria) and their rRNA genes found with barrnap's archaeal "
                               "profiles. Give it for a region or a few contigs of a genome "
                               "that may hold no rRNA gene."),
    min_score: float = typer.Option(0.0, "--min-score", help="Leave out gene calls whose "
                                    "probability (the GFF3 score) is below this (0: keep "
                                    "every call). What a weak call is worth depends on how the "
                                    "reference was annotated: docs/annotate.md, 'Gene "
                                    "probabilities and --min-score'."),
    threads: int = typer.Option(0, "--threads", "-t", help="Processes for gene calling: the "
                                "RNA-gene finders beside the decoder, records side by side under "
                                "meta or in eukaryote mode; 0: every core available. The output does not depend on it."),
    closed: bool = typer.Option(False, "--closed", "-c", help="Complete, closed sequences: no "
                                "gene runs off a sequence end (as Prodigal's -c; eukaryote mode "
                                "is closed unless --open-ends). A region's edge inside its "
                                "sequence stays open: genes there are partial."),
    open_ends: bool = typer.Option(False, "--open-ends", help="Eukaryote mode: genes may run "
                                   "off a record's ends, kept partial (contigs of a draft "
                                   "assembly); by default they lie whole inside it. Better near "
                                   "contig cuts, worse where whole genes lie within a few hundred "
                                   "bases of a record's end (docs/annotate.md)."),
    circular: bool = typer.Option(False, "--circular", help="Every sequence is a whole "
                                  "circular replicon (a complete genome's chromosomes and "
                                  "plasmids): closed, and genes may cross the origin (GFF3: end "
                                  "past the sequence length, region Is_circular=true; BED: two "
                                  "lines; GenBank: join). A --region of one is linear with open "
                                  "edges."),
    circular_declared: bool = typer.Option(False, "--circular-declared", help="As --circular, "
                                           "for the records that say they are circular only: "
                                           "GenBank/EMBL 'circular' LOCUS (ID) lines, FASTA "
                                           "headers with circular=true (Unicycler) or "
                                           "\\[topology=circular] (NCBI). The others are lines "
                                           "(--closed applies to them)."),
    gff3_fasta: bool = typer.Option(False, "--gff3-fasta", help="End the GFF3 with a ##FASTA "
                                    "section holding the contigs (as Prokka and Bakta write it; "
                                    "Roary and Panaroo need it)."),
    locus_tag: str | None = typer.Option(None, "--locus-tag", help="Name genes and RNA genes "
                                         "LOCUS_TAG_00001, ... across the file in every output "
                                         "(as Prokka's --locustag; unique IDs when pooling "
                                         "genomes) instead of contig_N."),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="No progress bar."),
) -> None:
    """Annotate genes (CDS) and RNAs of a FASTA; writes PREFIX.gff3, PREFIX.bed, PREFIX.*.bedgraph."""
    from genoctx.cli.common import available_cores, check_device_name, resolve_targets
    from genoctx.heads.annotate import annotate_fasta, write_annotation
    from genoctx.io.fasta import FastaFile
    from genoctx.tokenize.windows import DEFAULT_CONTEXT

    chosen = choose_formats(formats, model)
    if context > DEFAULT_CONTEXT:
        raise InputError(f"--context is at most {DEFAULT_CONTEXT:,} tokens (got {context:,})")
    if context < 256 or not 0 <= overlap < context - 1:
        raise InputError("--context must be at least 256 and --overlap in [0, context - 1) "
                         "(a window holds context - 1 bases after BOS)")
    if overlap > (context - 1) // 2:
        raise InputError(f"--overlap {overlap} is more than half of a window's "
                         f"{context - 1} bases: every base would be read three times or more "
                         f"(at most {(context - 1) // 2} with --context {context})")
    if batch_size is not None and batch_size < 1:
        raise InputError(f"--batch-size must be at least 1, got {batch_size}")
    if mode.lower() == "eukaryote" and translation_table != 11:
        raise InputError("--translation-table is for prokaryote mode; eukaryote mode reads "
                         "nuclear genes (the standard code's stops)")
    if mode.lower() == "eukaryote" and not orf_scorer:
        raise InputError("--no-orf-scorer is for prokaryote mode (the bacterial gene decoder); "
                         "eukaryote mode has no ORF scorer")
    if mode.lower() == "eukaryote" and domain.lower() != "auto":
        raise InputError("--domain is for prokaryote mode (bacteria and archaea)")
    if gff3_fasta and "gff3" not in chosen:
        raise InputError("--gff3-fasta adds the sequences to the GFF3: add gff3 to --formats")
    if threads < 0:
        raise InputError(f"--threads must be 0 (every core) or more, got {threads}")
    if circular and circular_declared:
        raise InputError("--circular makes every record a circle, --circular-declared only the "
                         "records that say they are: give one of them")
    if mode.lower() == "eukaryote" and (circular or circular_declared):
        raise InputError("--circular and --circular-declared are for bacterial and archaeal "
                         "replicons (prokaryote mode)")
    if locus_tag is not None:
        from genoctx.io.writers import check_locus_tag

        check_locus_tag(locus_tag)
    workers = threads or available_cores()
    from genoctx.io.spool import is_stream, rereadable, shown_name

    # a pipe's name (/dev/fd/63) says nothing: its outputs are named as standard input's
    piped = is_stream(input) and (str(input) == "-" or input.name.isdigit())
    prefix = output_prefix(out, "stdin" if piped else input.name)
    from genoctx.cli.common import refuse_overwriting_inputs
    from genoctx.heads.annotate import output_paths

    refuse_overwriting_inputs(output_paths(prefix, chosen, mode.lower()),
                              {"input": input, "--regions": regions})
    for path in output_paths(prefix, chosen, mode.lower()):  # before the work, not after
        if path.is_dir():
            raise InputError(f"cannot write {path}: it is a folder (move it, or give another "
                             "--out)")
    with rereadable(input, name="stdin.fa") as given, \
            _flatfile_as_fasta(given, shown_name(input)) as (source, rings):
        if not circular and (circular_declared or not quiet) and source == given:
            from genoctx.io.fasta import circular_headers  # FASTA: Unicycler's or NCBI's tags

            rings = circular_headers(source)
        if rings and not (circular or circular_declared or quiet
                          or mode.lower() == "eukaryote"):  # a hint only
            typer.echo(f"note: {len(rings)} record(s) of the input are circular "
                       f"({rings[0]}" + (", ..." if len(rings) > 1 else "") + "): add "
                       "--circular-declared (those records) or --circular (all) to call genes "
                       "across their origin", err=True)
        if circular_declared and not rings and not quiet:
            typer.echo("note: no record of the input says it is circular; all are read as "
                       "lines", err=True)
        fa_source = FastaFile(source)
        targets = annotation_targets(resolve_targets(fa_source, region, regions),
                                     list(fa_source.lengths))
        result = annotate_fasta(source, targets, model=None if model == "none" else model,
                                device=check_device_name(device), context=context, overlap=overlap,
                                batch_size=batch_size, quiet=quiet, mode=mode.lower(),
                                rna=rna.lower(), procedure=procedure.lower(),
                                translation_table=translation_table, orf_scorer=orf_scorer,
                                domain=domain.lower(), min_score=min_score, workers=workers,
                                closed=closed, open_ends=open_ends,
                                circular=frozenset(rings) if circular_declared else circular,
                                need_tracks=bool({"bedgraph", "bigwig"} & set(chosen)),
                                note=None if quiet else (lambda line: typer.echo(line, err=True)))
        written = write_annotation(prefix, result, chosen, gff3_fasta=gff3_fasta,
                                   locus_tag=locus_tag, workers=workers)
    if not quiet:
        typer.echo(f"{len(result.genes)} genes, {len(result.rnas)} RNAs; wrote "
                   + ", ".join(str(p) for p in written), err=True)
        bank = sorted({a["model"] for g in result.genes
                       if "model" in (a := getattr(g, "attrs", None) or {})})
        if bank:
            typer.echo("gene statistics started from pre-trained decoder model(s) "
                       f"{', '.join(bank)} (--procedure single self-trains on the input)",
                       err=True)


def choose_formats(formats: str | None, model: str) -> tuple[str, ...]:
    """The outputs to write: ``--formats`` checked, or the default. The tracks (bedGraph,
    bigWig) are the model's per-base probabilities, so ``--model none`` has none to write:
    its default leaves them out and asking for them is refused."""
    tracks = ("bedgraph", "bigwig")
    if formats is None:
        formats = "gff3,bed" if model == "none" else "gff3,bed,bedgraph"
    chosen = tuple(dict.fromkeys(f.strip().lower() for f in formats.split(",") if f.strip()))
    bad = [f for f in chosen if f not in FORMATS]
    if bad or not chosen:
        raise InputError(f"unknown format(s) {', '.join(bad) or '(none)'}; choose from "
                         f"{', '.join(FORMATS)}")
    asked = [f for f in chosen if f in tracks]
    if model == "none" and asked:
        raise InputError(f"--formats {','.join(asked)}: the tracks are the model's per-base "
                         "probabilities, and --model none runs no model; drop them from "
                         "--formats or use the model (--model embedded)")
    return chosen


def annotation_targets(targets: list, order: list[str]) -> list:
    """The regions to annotate in the order of the FASTA's records, then by start, so that
    every output is sorted however they were given; regions that overlap are refused (a base
    would get two gene sets and two track values), and so are empty ones."""
    from genoctx.io.regions import half_open_to_one_based

    rank = {c: i for i, c in enumerate(order)}
    out = sorted(targets, key=lambda t: (rank.get(t.contig, len(rank)), t.start, t.end))

    def shown(t) -> str:
        a, b = half_open_to_one_based(t.start, t.end)
        return f"{t.contig}:{a:,}-{b:,}"

    for t in out:
        if t.end <= t.start:
            raise InputError(f"region {t.contig}:{t.start}-{t.end} (0-based) is empty")
    for a, b in itertools.pairwise(out):
        if a.contig == b.contig and b.start < a.end:
            raise InputError(f"regions {shown(a)} and {shown(b)} overlap: give regions that do "
                             "not (merge them into one)")
    return out


# what a sequence file's name may end with, removed (case-insensitively) for the output prefix
_SEQUENCE_SUFFIXES = (".fasta", ".fas", ".fa", ".fna", ".ffn", ".frn", ".fsa", ".seq", ".mfa",
                      ".gbff", ".gbk", ".gb", ".genbank", ".embl", ".emb", ".dat", ".txt")
_COMPRESSED_SUFFIXES = (".gz", ".bgz", ".bgzf")


def default_prefix(name: str) -> str:
    """The input's file name without its sequence extension (and compression), the default
    output prefix: ``GCF_000005845.2_ASM584v2_genomic.fna.gz`` → ``GCF_000005845.2_ASM584v2_genomic``.
    Dots elsewhere in the name stay (accession versions); a name with no known extension is
    kept whole."""
    stem = name
    for group in (_COMPRESSED_SUFFIXES, _SEQUENCE_SUFFIXES):
        low = stem.lower()
        cut = next((x for x in group if low.endswith(x) and len(stem) > len(x)), None)
        if cut:
            stem = stem[:-len(cut)]
    return stem


def output_prefix(out: str | Path | None, input_name: str) -> Path:
    """Where the outputs go, checked before any work: ``--out`` as given, or inside it when it
    is a folder (``--out results``, or ``--out new/`` for one not made yet: a trailing slash
    says folder), else the input's name without its extension (see
    :func:`default_prefix`). Missing folders are made when the outputs are written; a prefix
    that could not be written (under a file, or in a folder not writable) fails here, before
    the annotation is computed rather than after."""
    import os

    if out is not None and str(out) == "-":
        raise InputError("--out -: annotate writes files, not standard output; give a prefix "
                         "(--out DIR/NAME writes DIR/NAME.gff3, ...) or a folder (--out DIR/)")
    folder = out is not None and str(out).endswith(("/", os.sep))
    prefix = Path(default_prefix(input_name)) if out is None else Path(out)
    if folder or prefix.is_dir() or not prefix.name or prefix.name in (".", ".."):
        prefix = prefix / default_prefix(input_name)
    here = prefix.parent
    while not here.exists() and here != here.parent:  # the nearest folder that exists
        here = here.parent
    if not here.is_dir():
        raise InputError(f"cannot write {prefix}.*: {here} is a file, not a folder")
    if not os.access(here, os.W_OK | os.X_OK):
        raise InputError(f"cannot write {prefix}.*: the folder {here} is not writable")
    return prefix


@contextlib.contextmanager
def _flatfile_as_fasta(path: Path, shown: str):
    """``(path, [])`` when it is FASTA. A GenBank or EMBL flat file (as Prodigal reads them)
    becomes a temporary FASTA of its records' sequences, named by accession.version as NCBI's
    FASTA files are, with the names of the records that say they are circular; errors name
    ``shown``, the input as the user gave it."""
    from genoctx.io.annotation import (
        flatfile_topologies,
        read_sequences_embl,
        read_sequences_genbank,
    )
    from genoctx.io.fasta import sniff_format

    fmt, _ = sniff_format(path)
    if fmt not in ("genbank", "embl"):
        yield path, []
        return
    read = read_sequences_genbank if fmt == "genbank" else read_sequences_embl
    with tempfile.TemporaryDirectory(prefix="genoctx-flatfile-") as tmp:
        fasta = Path(tmp) / "sequences.fa"
        try:
            names = []
            with open(fasta, "wb") as fh:
                for name, seq in read(path):
                    names.append(name)
                    fh.write(b">%s\n%s\n" % (name.encode(), seq))
            if fasta.stat().st_size == 0:
                raise InputError(f"{shown}: no {fmt} record with a sequence")
            topologies = flatfile_topologies(path)
            rings = ([n for n, ring in zip(names, topologies) if ring]
                     if len(topologies) == len(names) else [])
            yield fasta, rings
        except InputError as exc:
            raise InputError(str(exc).replace(str(fasta), shown).replace(str(path), shown)) from None


def register(app: typer.Typer) -> None:
    app.command("annotate", epilog=EPILOG)(annotate)
