"""Annotate a FASTA end to end: tokens → model probabilities → gene-structure decoder → features.

``annotate_fasta`` is what ``genoctx annotate`` runs. Each target (a whole record, or a region)
is tokenized and scored by the annotation model in overlapping windows (stitched without seams).
In ``prokaryote`` mode (the default) the probabilities and the sequence are decoded into genes and
RNA features by :mod:`genoctx.heads.decoder`, whose self-trained statistics are fitted across all
targets of the input (one genome). In ``eukaryote`` mode the spliced Viterbi decoder
(:mod:`genoctx.heads.spliced_decoder`) turns them into genes with introns (ATG … in-frame stop,
GT…AG introns); it needs the model. Coordinates in the result are on the input's contigs, 0-based
half-open.
"""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Collection
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from genoctx.errors import InputError
from genoctx.heads import classes
from genoctx.heads.decoder import (
    META_MAX_BP,
    DecoderParams,
    auto_choice,
    call_genes_multi,
    check_options,
    circular_names,
    group_composition,
    group_names,
)
from genoctx.io.atomic import staged_prefix
from genoctx.io.fasta import FastaFile, check_nucleotide
from genoctx.io.regions import Region
from genoctx.progress import progress_bar, status
from genoctx.tokenize import nucleotide as nt

# Probability tracks written as bedGraph: name -> classes summed.
TRACKS: dict[str, tuple[int, ...]] = {
    "CDS_plus": classes.CDS_PLUS,
    "CDS_minus": classes.CDS_MINUS,
    "RNA": tuple(classes.INDEX[n] for n in ("tRNA+", "tRNA-", "rRNA+", "rRNA-", "ncRNA+", "ncRNA-")),
}
# Eukaryote mode adds the intron track.
EUKARYOTE_TRACKS: dict[str, tuple[int, ...]] = {
    **TRACKS, "intron": (classes.INDEX["intron+"], classes.INDEX["intron-"])}
MODES = ("prokaryote", "eukaryote")
# Where RNA genes come from (prokaryote mode): "auto" = the sequence finders of
# heads.rna_genes when installed (pyaragorn, pybarrnap), else the head; "tools" = the finders
# (an error when missing); "model" = the head's RNA classes; "none".
RNA_SOURCES = ("auto", "tools", "model", "none")
# The genome's domain (prokaryote mode): "auto" = named by its rRNA genes when the finders run
# (heads.rna_genes.rrna_domain; bacteria without one), or given. An archaeon is decoded
# without the ORF scorer, which was fitted on bacteria.
DOMAINS = ("auto", "bacteria", "archaea")
# on the CPU, inputs from this size on get a note when the model runs for the tracks alone
TRACKS_NOTE_BP = 500_000


@dataclass
class Annotation:
    """Genes and RNA features over the targets, plus per-target probability tracks."""

    genes: list  # decoder.GeneCall (prokaryote mode) or spliced_decoder.SplicedGene (eukaryote)
    rnas: list = field(default_factory=list)
    targets: list[Region] = field(default_factory=list)
    lengths: dict[str, int] = field(default_factory=dict)   # contig lengths of the input
    tracks: dict[int, dict[str, np.ndarray]] = field(default_factory=dict)  # target index -> tracks
    model_sha256: str | None = None
    mode: str = "prokaryote"
    source: Path | None = None  # the FASTA annotated: protein and CDS FASTA read it back
    circular: frozenset[str] = frozenset()  # circular contigs: genes may cross their origin


def _shift(items: list, region: Region) -> list:
    if region.start == 0:
        return list(items)
    return [dataclasses.replace(g, start=g.start + region.start, end=g.end + region.start)
            for g in items]


def _shift_spliced(genes: list, contig: str, offset: int) -> list:
    return [dataclasses.replace(g, contig=contig, cds=tuple((s + offset, e + offset)
                                                            for s, e in g.cds)) for g in genes]


DECODER_FILE = "decoder.json"


def decoder_params(model_dir: Path | None) -> DecoderParams:
    """Decoder settings that belong to a checkpoint (``decoder.json``), else the defaults.

    The weight of the neural evidence depends on how good the head is, so a checkpoint carries
    it: ``{"neural_gene_weight": w, "neural_start_weight": s}`` replace the decoder's
    ``neural_per_codon`` gene weight and ``neural`` start weight. A checkpoint without one (a
    ``genoctx train`` export: the weights are fitted afterwards, by
    ``benchmarks/decoder_neural_weight.py``) gets 0 and 0, as the shipped checkpoint chose:
    its genes come from the sequence statistics, whatever the head has learnt, rather than from
    untested weights that may call no gene at all.
    """
    import json

    from genoctx.heads.decoder import FEATURES, START_PARTS

    params = DecoderParams()
    if model_dir is None:
        return params
    path = Path(model_dir) / DECODER_FILE
    cfg = json.loads(path.read_text()) if path.is_file() else {
        "neural_gene_weight": 0.0, "neural_start_weight": 0.0}
    gw, sw = list(params.gene_weights), list(params.start_weights)
    if "neural_gene_weight" in cfg:
        gw[FEATURES.index("neural_per_codon")] = float(cfg["neural_gene_weight"])
    if "neural_start_weight" in cfg:
        sw[START_PARTS.index("neural")] = float(cfg["neural_start_weight"])
    return dataclasses.replace(params, gene_weights=tuple(gw), start_weights=tuple(sw))


def _by_contig(items) -> dict[str, list]:
    """``items`` (anything with ``.contig``) grouped by contig, each group in input order."""
    out: dict[str, list] = {}
    for x in items:
        out.setdefault(x.contig, []).append(x)
    return out


def check_min_score(min_score: float) -> None:
    """Refuse a ``--min-score`` that is not a probability in [0, 1)."""
    if not 0.0 <= min_score < 1.0:
        raise InputError(f"--min-score is a probability in [0, 1), got {min_score}")


def drop_weak_genes(genes: list, min_score: float) -> list:
    """The gene calls whose probability (``score``, the GFF3 score) is at least ``min_score``
    (``genoctx annotate --min-score``); 0 keeps them all. What a probability means depends on
    who annotated the genome it is compared with (docs/annotate.md, "Gene probabilities and
    --min-score")."""
    check_min_score(min_score)
    return genes if min_score == 0 else [g for g in genes if g.score >= min_score]


def _uses_head(params: DecoderParams) -> bool:
    """Whether these decoder settings give the head's probabilities any weight."""
    from genoctx.heads.decoder import FEATURES, START_PARTS

    return (params.gene_weights[FEATURES.index("neural_per_codon")] != 0
            or params.start_weights[START_PARTS.index("neural")] != 0)


def _finders_run(rna: str) -> bool:
    """Whether the RNA-gene finders run for this ``rna`` choice (see :data:`RNA_SOURCES`)."""
    from genoctx.heads import rna_genes

    if rna not in RNA_SOURCES:
        raise InputError(f"rna must be one of {', '.join(RNA_SOURCES)}, got {rna!r}")
    have = all(rna_genes.available().values())
    if rna == "tools" and not have:
        raise InputError("--rna tools needs pyaragorn and pybarrnap: pip install pyaragorn pybarrnap")
    return rna == "tools" or (rna == "auto" and have)


def call_bacterial(records: list[tuple[str, bytes]], probs: dict | None = None, *,
                   params: DecoderParams | None = None, rna: str = "auto",
                   procedure: str = "auto", bank=None, progress=None, workers: int = 1,
                   closed: bool | dict[str, tuple[bool, bool]] = False,
                   circular: bool | frozenset[str] = False,
                   groups: list[list[str]] | None = None, domain: str = "auto"):
    """Genes of one bacterial genome as ``genoctx annotate`` makes them: ``(genes, rnas)``.

    The decoder's CDS calls (:func:`genoctx.heads.decoder.call_genes_multi`); when the RNA-gene
    finders run (``rna``, :data:`RNA_SOURCES`) their tRNA/tmRNA/rRNA genes come back as
    ``rnas`` and CDS calls overlapping them are dropped, else ``rnas`` is None. The evaluation
    benchmarks call this too, so their numbers are those of the command. With ``workers`` > 1
    the RNA finders run in a process of their own while the genes are decoded, and the rest
    of the workers decode records side by side when each is decoded alone (``meta``); the rRNA
    searches run ``workers`` at a time (:func:`genoctx.heads.rna_genes.find_rrna`). The
    result does not depend on ``workers``. ``closed``: genes may not run off sequence ends
    (complete replicons; Prodigal's ``-c``), or only those a ``{record: (first, last)}`` mapping
    marks (:func:`genoctx.heads.decoder.closed_ends`). ``circular``: records that are whole
    circular replicons (True: all), whose genes may cross the origin (``call_genes_multi``).
    ``groups``: under ``procedure="groups"``, the record names of each group when already
    known (``call_genes_multi``). ``domain`` (:data:`DOMAINS`): ``"auto"`` leaves the ORF
    scorer out when the rRNA genes found are archaeal (:func:`_archaeal`); ``"archaea"``
    always, ``"bacteria"`` never (a region or shard of a genome whose domain is known
    elsewhere, e.g. from its other contigs).
    """
    from genoctx.heads import rna_genes

    check_domain(domain)
    finders = _finders_run(rna)
    nonempty = [(c, s) for c, s in records if len(s)]
    ring = circular_names([c for c, _ in nonempty], circular)
    params = params or DecoderParams()
    if domain == "archaea":
        params = dataclasses.replace(params, orf_scorer=False)
    future = found = None
    # the rRNA searches take every worker: the decoder holds one only while it runs (or, under
    # meta, its pool's); the finders go on alone after it
    rna_threads = workers

    def decode(p: DecoderParams, workers: int, progress=progress):
        return call_genes_multi(records, probs, params=p, procedure=procedure, bank=bank,
                                progress=progress, workers=workers, closed=closed,
                                circular=circular, groups=groups)

    # barrnap's profiles of the domain: given, or named by the rRNA genes (auto); a given
    # domain needs no naming
    kingdom = {"auto": "auto", "bacteria": "bac", "archaea": "arc"}[domain]
    with contextlib.ExitStack() as stack:
        pool = _spawn_pool(stack, 1) if finders and workers > 1 and nonempty else None
        if pool is not None:  # else (no process semaphores here) they run in turn
            future = pool.submit(rna_genes.find_rna_genes, nonempty, ring, rna_threads,
                                 kingdom, False)
            workers -= 1
        elif finders:  # in turn: the RNA genes first, so an archaeon is decoded once
            found = rna_genes.find_rna_genes(nonempty, ring, rna_threads, kingdom, False)
        genes = None if _archaeal(found, params, domain) else decode(params, workers)
        if not finders:
            return genes, None
        if future is not None:
            found = future.result()
        if _archaeal(found, params, domain):  # again, the bar already full
            genes = decode(dataclasses.replace(params, orf_scorer=False), workers,
                           progress=None if genes is not None else progress)
    lengths = {c: len(s) for c, s in nonempty}
    return rna_genes.drop_cds_in_rna(genes, found, lengths=lengths), found


def check_domain(domain: str) -> None:
    """Refuse a domain that is not one of :data:`DOMAINS` (InputError)."""
    if domain not in DOMAINS:
        raise InputError(f"domain must be one of {', '.join(DOMAINS)}, got {domain!r}")


def _archaeal(found, params: DecoderParams, domain: str = "auto") -> bool:
    """Whether the ORF scorer, fitted on bacteria, is to be left out after the RNA genes are
    found: it is on, the domain is not given, and the rRNA genes found say the genome is an
    archaeon's (:func:`genoctx.heads.rna_genes.rrna_domain`). Left out on four unseen archaea,
    gene F1 moved −0.0007 to +0.0197 on whole genomes (three gained) and +0.0014 to +0.0065
    on their 10-kb contigs (all four; docs/results.md)."""
    if domain != "auto" or found is None or not params.orf_scorer:
        return False
    from genoctx.heads.rna_genes import rrna_domain

    return rrna_domain(found) == "archaea"


def _spawn_pool(stack: contextlib.ExitStack, processes: int):
    """:func:`genoctx.pools.spawn_pool`, shut down by ``stack`` (pending work cancelled)."""
    from genoctx.pools import spawn_pool

    pool = spawn_pool(processes)
    if pool is not None:
        stack.callback(pool.shutdown, cancel_futures=True)
    return pool


def _genes_in_background(stack: contextlib.ExitStack, records, **kwargs):
    """``call_bacterial(records, None, **kwargs)`` in a spawned process: its future, or None
    where none can start (the caller then decodes in turn)."""
    pool = _spawn_pool(stack, 1)
    return None if pool is None else pool.submit(call_bacterial, records, None, **kwargs)


def annotate_fasta(path: str | Path, targets: list[Region] | None = None, *,
                   model: str | Path | None = "embedded", device: str = "cpu",
                   context: int = 8192, overlap: int = 256, batch_size: int | None = None,
                   quiet: bool = False, mode: str = "prokaryote",
                   rna: str = "auto", need_tracks: bool = True,
                   procedure: str = "auto", translation_table: int = 11,
                   orf_scorer: bool = True, min_score: float = 0.0, workers: int = 1,
                   closed: bool = False, circular: bool | Collection[str] = False, note=None,
                   background_genes: bool | None = None, open_ends: bool = False,
                   domain: str = "auto") -> Annotation:
    """Annotate ``targets`` of the FASTA at ``path`` (all records when None).

    ``model=None`` decodes from the sequence alone (no neural probabilities; prokaryote mode
    only). ``mode="eukaryote"`` decodes spliced genes from the head's probabilities. ``rna``
    chooses where RNA genes come from (:data:`RNA_SOURCES`); CDS calls overlapping an RNA gene
    from the sequence finders are dropped. With ``need_tracks=False`` the model runs only when
    something else uses its probabilities (the checkpoint's decoder weights, RNA genes from the
    head, eukaryote mode); otherwise genes come out the same without it, much faster.
    ``procedure`` chooses how the gene decoder gets its statistics and ``translation_table``
    which codons stop a gene (11, or 4 for Mycoplasma; :func:`genoctx.heads.decoder.call_genes_multi`).
    ``orf_scorer=False`` leaves out the cross-genome ORF scorer (:mod:`genoctx.heads.orf_scorer`,
    fitted on bacteria) and decodes with the genome's own statistics alone. ``min_score``
    leaves out CDS calls whose probability is below it (:func:`drop_weak_genes`; prokaryote
    mode).
    ``workers`` processes share the decoding (see :func:`call_bacterial`; in eukaryote mode,
    batches of records and long records side by side); the output does not depend on it.
    ``closed`` keeps genes from running off sequence ends (prokaryote mode): a target's own
    ends where it reaches them; a target's edge inside its sequence stays open. In eukaryote
    mode genes lie whole inside their records unless ``open_ends`` (genes may run off them,
    partial: a draft assembly's contigs; see ``spliced_decoder.DecoderParams.partial_ends``).
    ``circular`` marks every sequence (True), or those named (a collection of sequence names),
    as a whole circular replicon (chromosomes and plasmids of a complete genome): a target that
    covers its sequence is closed and its genes may cross the origin (end past the sequence's
    length; prokaryote mode); a region of it is a line whose ends stay open. ``closed`` applies
    to the other sequences. ``note`` (a callable taking one line) is told, before the model
    runs, when it runs on the CPU over a large input for the probability tracks alone, and
    before decoding, when ``procedure="auto"`` takes the records for a mixture of organisms
    (:func:`genoctx.heads.decoder.is_mixture`) and decodes each on its own.
    ``domain`` (:data:`DOMAINS`, prokaryote mode): the genome's domain, or ``"auto"`` to name
    it from the rRNA genes found (:func:`call_bacterial`); an archaeon's genes are decoded
    without the ORF scorer. Give it when the targets may hold no complete 16S or 23S gene (a
    region, a shard of a genome, a few contigs of a draft assembly).
    ``background_genes``: when the gene calls do not read the model's probabilities (prokaryote
    mode with the shipped decoder weights) and the model runs for the tracks, decode genes and
    find RNA genes in a process of their own while the model runs. None (default) does so when
    the model runs on a GPU and ``workers`` > 1; on the CPU the model's threads already hold
    every core. The output is the same either way.
    """
    from genoctx.heads.decoder import call_rnas

    if mode not in MODES:
        raise InputError(f"mode must be one of {', '.join(MODES)}, got {mode!r}")
    check_options(procedure, translation_table)  # before the model runs
    check_min_score(min_score)
    check_domain(domain)
    if mode == "eukaryote" and domain != "auto":
        raise InputError("--domain is for prokaryote mode (bacteria and archaea)")
    if mode == "eukaryote" and min_score:
        raise InputError("--min-score is for prokaryote mode (the bacterial gene decoder's "
                         "calibrated probabilities)")
    if rna == "model" and model is None:
        raise InputError("--rna model takes RNA genes from the annotation head: it needs a model")
    use_tools = _finders_run(rna) and mode == "prokaryote"
    if open_ends and (mode != "eukaryote" or closed):
        raise InputError("--open-ends is for eukaryote mode, and not with --closed (in "
                         "prokaryote mode genes run off record ends unless --closed)")
    if mode == "eukaryote" and circular:
        raise InputError("--circular and --circular-declared are for bacterial and archaeal "
                         "replicons (prokaryote mode)")
    if mode == "eukaryote" and (procedure != "auto" or rna in ("tools", "model")):
        given = [o for o, on in (("--procedure", procedure != "auto"),
                                 (f"--rna {rna}", rna in ("tools", "model"))) if on]
        raise InputError(f"{', '.join(given)}: for prokaryote mode (eukaryote mode decodes "
                         "spliced genes only, from the model, with no RNA genes)")
    if mode == "eukaryote" and model is None:
        raise InputError("eukaryote mode decodes the annotation head's probabilities: it needs a "
                         "model (--model embedded or a checkpoint), not 'none'")
    track_classes = EUKARYOTE_TRACKS if mode == "eukaryote" else TRACKS

    fa = FastaFile(path)
    lengths = dict(fa.lengths)
    targets = [t for t in targets or [Region(c, 0, n) for c, n in lengths.items()] if len(t) > 0]
    if not targets:
        raise InputError(f"{path} holds no sequence to annotate")
    backbone = head = None
    sha = model_dir = None
    if model is not None:
        from genoctx.model import checkpoint

        model_dir = checkpoint.resolve_checkpoint(model)
        sha = checkpoint.verify_digest(model_dir)
    params = decoder_params(model_dir)
    params = dataclasses.replace(params, translation_table=translation_table,
                                 orf_scorer=params.orf_scorer and orf_scorer)
    # whether anything but the tracks reads the probabilities; if not, only the tracks (3 of
    # the 17 columns, summed) are kept, not [L, 17] floats per record
    keep_probs = (mode == "eukaryote" or _uses_head(params)
                  or (not use_tools and rna in ("auto", "model")))
    if model is not None and (need_tracks or keep_probs):
        # torch is imported only here: without the model, annotate starts in a fraction of a
        # second rather than three
        from genoctx.heads.annotation import load_annotation_model, predict_probs_many
        from genoctx.model.device import resolve_device

        device = resolve_device(device)
        backbone, head = load_annotation_model(model, device=device)
        bases = sum(len(t) for t in targets)
        if note is not None and not keep_probs and device == "cpu" and bases >= TRACKS_NOTE_BP:
            note(f"note: the model runs here only for the probability tracks, about a minute "
                 f"per Mb on the CPU ({bases / 1e6:.1f} Mb); --formats gff3,bed (or --model "
                 "none) writes the same genes and RNAs in seconds")
    names = [f"{t.contig}:{t.start}-{t.end}" if (t.start, t.end) != (0, lengths[t.contig])
             else t.contig for t in targets]

    if mode == "eukaryote":
        genes, tracks = _annotate_eukaryote(
            fa, targets, names, lengths, backbone, head, path, context=context, overlap=overlap,
            batch_size=batch_size, need_tracks=need_tracks, workers=workers, quiet=quiet,
            note=note, open_ends=open_ends)
        return Annotation(genes, [], list(targets), lengths, tracks, sha, mode, Path(path))

    def circle(contig: str) -> bool:  # a whole circular replicon (its regions are lines)
        return circular is True or (not isinstance(circular, bool) and contig in circular)

    ring = frozenset(name for name, t in zip(names, targets)
                     if circle(t.contig) and (t.start, t.end) == (0, lengths[t.contig]))
    if mode == "prokaryote" and (circular or closed):
        # whole circles are closed and a region of a circle is open (its edges are no ends);
        # on other sequences --closed closes their own ends, never a region's edges
        lines = closed
        closed = {name: (name in ring or (lines and not circle(t.contig) and t.start == 0),
                         name in ring or (lines and not circle(t.contig)
                                          and t.end == lengths[t.contig]))
                  for name, t in zip(names, targets)}
    # the background gene calls' process (if any) stops when the function leaves, however
    with contextlib.ExitStack() as stack:
        records, probs, tracks = [], {}, {}
        total = sum(len(t) for t in targets)
        future = None
        if background_genes is None:
            background_genes = device != "cpu" and workers > 1
        if background_genes and mode == "prokaryote" and backbone is not None and not keep_probs:
            # the gene calls do not read the probabilities: start them now, beside the model
            for t, name in zip(targets, names):
                seq = fa.fetch(t.contig, t.start, t.end)
                check_nucleotide(name, seq, path)
                records.append((name, seq))
            future = _genes_in_background(
                stack, records, params=params, rna=rna if use_tools else "none",
                procedure=procedure, workers=max(1, workers - 1), closed=closed, circular=ring,
                domain=domain)
        prefetched = bool(records)

        def read():  # ((index, name), ids, circular) of each target, its sequence kept
            for i, (t, name) in enumerate(zip(targets, names)):
                if prefetched:
                    seq = records[i][1]
                else:
                    seq = fa.fetch(t.contig, t.start, t.end)
                    check_nucleotide(name, seq, path)
                    records.append((name, seq))
                # a whole circle's windows wrap across its origin
                yield (i, name), nt.encode(seq), name in ring

        with progress_bar("annotating", total=total, quiet=quiet) as bar:
            if backbone is None:
                for _, ids, _ in read():
                    bar.advance(len(ids))
            else:
                # the tracks alone: summed on the model's device, window by window
                reduce = None if keep_probs else list(track_classes.values())
                for (i, name), p in predict_probs_many(backbone, head, read(), context=context,
                                                       overlap=overlap, batch_size=batch_size,
                                                       progress=bar.advance, reduce=reduce):
                    if keep_probs:
                        probs[name] = p
                    if need_tracks and reduce is not None:
                        tracks[i] = {k: np.ascontiguousarray(p[:, j])
                                     for j, k in enumerate(track_classes)}
                    elif need_tracks:
                        tracks[i] = {k: p[:, list(v)].sum(1) for k, v in track_classes.items()}
                    del p
        known = None  # the groups' record names, when auto found them
        if procedure == "auto":  # decided once here, for the bar, the note and the decoder
            procedure, groups = auto_choice(records)
            known = group_names(records, groups) if groups else None
            if groups and note is not None:
                parts = sorted(group_composition(records, groups))
                note(f"note: the records' composition falls in {len(groups)} groups, as in a "
                     "metagenome (G+C " + ", ".join(f"{gc:.0%}" for gc, _ in parts)
                     + f"; the smallest holds {min(sh for _, sh in parts):.0%} of the bases): "
                     "each group is self-trained on its own (as -p groups; a group under "
                     f"{META_MAX_BP // 1000} kb is decoded record by record from the "
                     "pre-trained models); -p single self-trains on all records together")
        per_record = procedure in ("meta", "groups")
        if future is not None:
            with status("decoding genes" + (" and finding RNA genes" if use_tools else ""), quiet):
                genes, found = future.result()
        elif per_record and len(records) > 1:  # many contigs, decoded alone or by group: a bar
            with progress_bar("decoding genes", total=total, quiet=quiet) as bar:
                genes, found = call_bacterial(records, probs or None, params=params,
                                              rna=rna if use_tools else "none", procedure=procedure,
                                              progress=bar.advance, workers=workers, closed=closed,
                                              circular=ring, groups=known, domain=domain)
        else:
            with status("decoding genes" + (" and finding RNA genes" if use_tools else ""), quiet):
                genes, found = call_bacterial(records, probs or None, params=params,
                                              rna=rna if use_tools else "none", procedure=procedure,
                                              workers=workers, closed=closed, circular=ring,
                                              groups=known, domain=domain)
        out_genes, out_rnas = [], []
        genes = drop_weak_genes(genes, min_score)
        if note is not None and _archaeal(found, params, domain):
            note("note: the rRNA genes are archaeal (closer to barrnap's archaeal 16S/23S "
                 "profiles than to its bacterial ones): genes decoded without the ORF scorer, "
                 "which was fitted on bacteria, and rRNA genes from the archaeal profiles "
                 "(--domain archaea or bacteria says which)")
        if note is not None and total >= EUKARYOTE_HINT_BP:
            covered = coding_share(genes, {name: len(seq) for name, seq in records})
            if covered < EUKARYOTE_HINT_SHARE:
                note(f"note: the genes cover {covered:.0%} of the bases, where bacterial and "
                     "archaeal genomes are mostly 85-95% coding; if this is a eukaryote, "
                     "--mode eukaryote decodes spliced genes")
        genes_of, rnas_of = _by_contig(genes), _by_contig(found or [])  # one pass: many contigs
        for name, t in zip(names, targets):
            mine = [dataclasses.replace(g, contig=t.contig) for g in genes_of.get(name, [])]
            out_genes += _shift(mine, t)
            if use_tools:
                rn = rnas_of.get(name, [])
            elif rna != "none" and name in probs:  # auto without the finders, or model
                rn = call_rnas(probs[name], contig=name)
            else:
                rn = []
            out_rnas += _shift([dataclasses.replace(r, contig=t.contig) for r in rn], t)
        rings = frozenset(t.contig for name, t in zip(names, targets) if name in ring)
        return Annotation(out_genes, out_rnas, list(targets), lengths, tracks, sha,
                          source=Path(path), circular=rings)


REGION_FLANK = 20_000  # bp of its record decoded on each side of a region (eukaryote mode)
# prokaryote mode's note that the input may be a eukaryote: from this many bases on, genes
# covering less than this share (the train bacteria: 0.86-0.92; C. elegans, D. melanogaster
# and A. thaliana chunks decoded as bacteria: 0.46-0.55)
EUKARYOTE_HINT_BP = 100_000
EUKARYOTE_HINT_SHARE = 0.6
# and eukaryote mode's note that the input may be a prokaryote, from EUKARYOTE_HINT_BP bases on:
# the spliced genes' CDS cover at least this share (the annotated train chunks: 0.13-0.35, and
# A. thaliana's Chr1 chunk decoded 0.38; 300 kb of E. coli decoded in eukaryote mode: 0.81;
# a compact eukaryote such as yeast, ~0.7 coding, may get it: the note says "if")
PROKARYOTE_HINT_SHARE = 0.7


def coding_share(genes: list, lengths: dict[str, int]) -> float:
    """The share of the bases of ``lengths``'s records that ``genes`` cover (overlaps once; a
    gene across a circle's origin counts its bases on both sides)."""
    from genoctx.io.annotation import merge_intervals

    covered = 0
    for contig, calls in _by_contig(genes).items():
        n = lengths[contig]
        spans = [(g.start, min(g.end, n)) for g in calls] + [(0, g.end - n) for g in calls
                                                              if g.end > n]
        covered += sum(b - a for a, b in merge_intervals(spans))
    return covered / max(1, sum(lengths.values()))


def _windows(targets: list[Region], lengths: dict[str, int], flank: int) -> list[tuple]:
    """``(contig, start, end, target indices)``: the targets widened by ``flank`` within their
    record, overlapping ones merged (each base is read and run through the model once)."""
    spans = sorted((t.contig, max(0, t.start - flank), min(lengths[t.contig], t.end + flank), i)
                   for i, t in enumerate(targets))
    rank = {c: k for k, c in enumerate(lengths)}
    spans.sort(key=lambda w: (rank[w[0]], w[1]))
    out: list[list] = []
    for contig, a, b, i in spans:
        if out and out[-1][0] == contig and a <= out[-1][2]:
            out[-1][2] = max(out[-1][2], b)
            out[-1][3].append(i)
        else:
            out.append([contig, a, b, [i]])
    return [tuple(w) for w in out]


def _annotate_eukaryote(fa, targets, names, lengths, backbone, head, path, *, context, overlap,
                        batch_size, need_tracks, workers, quiet, note, open_ends=False):
    """Spliced genes and tracks of ``targets``. Each region is decoded with up to
    :data:`REGION_FLANK` bases of its record on each side, and a gene that crosses a region's
    edge is left out (with a note), not cut. With ``open_ends`` a gene may run off its record's
    ends and the windows' edges (it is partial there: the sequence goes on beyond them)."""
    from genoctx.heads.annotation import predict_probs_many
    from genoctx.heads.spliced_decoder import DecoderParams as SplicedParams
    from genoctx.heads.spliced_decoder import channel_probs, decode_many

    windows = _windows(targets, lengths, REGION_FLANK)
    records, probs, tracks = [], {}, {}

    def read():  # ((name, a, inside), ids, circular) of each window, its sequence kept
        for contig, a, b, inside in windows:
            name = f"{contig}:{a}-{b}"
            seq = fa.fetch(contig, a, b)
            check_nucleotide(names[inside[0]], seq, path)
            records.append((name, seq))
            yield (name, a, inside), nt.encode(seq), False

    with progress_bar("annotating", total=sum(b - a for _, a, b, _ in windows),
                      quiet=quiet) as bar:
        for (name, a, inside), p in predict_probs_many(
                backbone, head, read(), context=context, overlap=overlap,
                batch_size=batch_size, progress=bar.advance):
            # the decoder reads only its 9 channels: 36 bytes per base held, not 68
            probs[name] = channel_probs(p)
            if need_tracks:
                for i in inside:
                    t = targets[i]
                    part = p[t.start - a:t.end - a]
                    tracks[i] = {k: part[:, list(v)].sum(1)
                                 for k, v in EUKARYOTE_TRACKS.items()}
            del p
    with status("decoding spliced genes", quiet):
        spliced = _by_contig(decode_many(records, probs, workers=workers,
                                         params=SplicedParams(partial_ends=open_ends)))
    genes, crossing = [], 0
    for (contig, a, b, inside), (name, _) in zip(windows, records):
        for g in _shift_spliced(spliced.get(name, []), contig, a):
            mine = [targets[i] for i in inside if g.start < targets[i].end
                    and targets[i].start < g.end]
            if any(t.start <= g.start and g.end <= t.end for t in mine):
                genes.append(g)
            elif mine:
                crossing += 1
    if crossing and note is not None:
        note(f"note: {crossing} gene(s) cross the edge of a region and are left out; give "
             "regions that hold them whole to have them")
    bases = sum(len(t) for t in targets)
    if note is not None and bases >= EUKARYOTE_HINT_BP:
        from genoctx.io.annotation import merge_intervals

        coding = sum(sum(b - a for a, b in merge_intervals([x for g in calls for x in g.cds]))
                     for calls in _by_contig(genes).values())
        if coding / bases >= PROKARYOTE_HINT_SHARE:
            note(f"note: the genes' coding sequence covers {coding / bases:.0%} of the bases, "
                 "as in bacterial and archaeal genomes (eukaryotes: mostly under half); if "
                 "this is a bacterium or archaeon, leave out --mode eukaryote: prokaryote mode "
                 "decodes unspliced genes from their start codons, with RNA genes")
    return genes, tracks


def write_annotation(prefix: str | Path, result: Annotation, formats: tuple[str, ...], *,
                     gff3_fasta: bool = False, locus_tag: str | None = None,
                     workers: int = 1) -> list[Path]:
    """Write ``PREFIX.gff3``, ``PREFIX.bed``, ``PREFIX.faa`` (proteins), ``PREFIX.ffn`` (coding
    sequences), ``PREFIX.gbk`` (GenBank), ``PREFIX.<track>.bedgraph`` and/or
    ``PREFIX.<track>.bw`` (bigWig), as ``formats`` asks; returns the paths. The files are
    written into a temporary folder beside ``PREFIX`` and moved into place together when all
    are complete (:func:`genoctx.io.atomic.staged_prefix`): a failure or Ctrl-C leaves the
    files of an earlier run as they were, never a mix of old and new.

    Eukaryote-mode results are written as gene → mRNA → exon + CDS (GFF3) and BED12. With
    ``gff3_fasta`` the GFF3 ends with a ``##FASTA`` section holding the input's contigs (as
    Prokka writes it; pangenome tools such as Roary and Panaroo need it). With ``locus_tag``
    every gene and RNA gene is named ``LOCUS_TAG_00001``, ... in every file
    (:func:`genoctx.io.writers.assign_locus_tags`) instead of ``contig_N``. With ``workers`` > 1
    and tracks of at least :data:`TRACK_POOL_MIN_BASES` bases, the track files (one per track
    and format, each about 0.1 s per Mb for bedGraph, 0.35 s for bigWig) are written by up to
    ``workers`` processes while this one writes the rest; the bytes are the same.
    """
    if locus_tag is not None:
        from genoctx.io.writers import assign_locus_tags

        genes, rnas = assign_locus_tags(result.genes, result.rnas, result.lengths, locus_tag)
        result = dataclasses.replace(result, genes=genes, rnas=rnas)

    needs_bases = bool({"faa", "ffn", "gbk"} & set(formats)) or (gff3_fasta and "gff3" in formats)
    if needs_bases and result.source is None:
        raise InputError("sequence output (proteins, CDS, GenBank, GFF3 ##FASTA) needs the "
                         "annotated FASTA (Annotation.source)")
    prefix = Path(prefix)
    per_track = sum(len(next(iter(t.values()))) for t in result.tracks.values() if t)
    with staged_prefix(prefix) as stage:  # all files land together, or none does
        jobs = _track_jobs(stage, result, formats)
        with contextlib.ExitStack() as stack:
            futures = None
            if workers > 1 and len(jobs) > 1 and per_track >= TRACK_POOL_MIN_BASES:
                futures = _track_jobs_in_background(stack, jobs, workers)
            written = _write_sequence_files(stage, result, formats, gff3_fasta, needs_bases)
            if futures is None:
                for job in jobs:
                    _write_track(*job)
            else:
                for f in futures:
                    f.result()
    return [prefix.with_name(p.name) for p in written + [job[1] for job in jobs]]


# the track files of write_annotation go to worker processes from this many bases per track on
# (`python benchmarks/writers.py --genome-bases N`: on 2 cores the break-even is about 4 Mb;
# E. coli's 4.6 Mb take 1.58-1.80 s in one process, 1.35-1.49 s in two)
TRACK_POOL_MIN_BASES = 4_000_000


# the file name ending of each output format (tracks: PREFIX.<track>.<ending>)
SUFFIXES = {"gff3": "gff3", "bed": "bed", "faa": "faa", "ffn": "ffn", "gbk": "gbk"}
TRACK_SUFFIXES = {"bedgraph": "bedgraph", "bigwig": "bw"}


def output_paths(prefix: str | Path, formats, mode: str = "prokaryote") -> list[Path]:
    """The files :func:`write_annotation` writes for ``formats`` (tracks when the result has
    them), so that a command can check them before it computes anything."""
    prefix = Path(prefix)
    names = EUKARYOTE_TRACKS if mode == "eukaryote" else TRACKS
    return ([prefix.with_name(f"{prefix.name}.{SUFFIXES[f]}") for f in SUFFIXES if f in formats]
            + [prefix.with_name(f"{prefix.name}.{name}.{TRACK_SUFFIXES[f]}")
               for f in TRACK_SUFFIXES if f in formats for name in names])


def _track_jobs(prefix: Path, result: Annotation, formats) -> list[tuple]:
    """``(format, path, per-target tracks, track name, lengths)`` of every track file."""
    names = EUKARYOTE_TRACKS if result.mode == "eukaryote" else TRACKS
    rank = {c: k for k, c in enumerate(result.lengths)}
    jobs = []
    for fmt, ext in TRACK_SUFFIXES.items():
        if fmt not in formats or not result.tracks:
            continue
        for name in names:
            per_target = sorted(  # sorted however the regions were given (bedGraph must be)
                ((result.targets[i].contig, result.targets[i].start, tracks[name])
                 for i, tracks in result.tracks.items()),
                key=lambda t: (rank.get(t[0], len(rank)), t[1]))
            jobs.append((fmt, prefix.with_name(f"{prefix.name}.{name}.{ext}"), per_target, name,
                         result.lengths))
    return jobs


def _write_track(fmt: str, path: Path, per_target: list, name: str, lengths: dict) -> None:
    from genoctx.io.writers import write_bedgraph_many, write_bigwig

    if fmt == "bedgraph":
        write_bedgraph_many(path, per_target, name=name)
    else:
        write_bigwig(path, per_target, lengths)


def _track_jobs_in_background(stack: contextlib.ExitStack, jobs: list[tuple], workers: int):
    """The futures of ``jobs`` in a spawned process pool, or None where none can start."""
    pool = _spawn_pool(stack, min(workers, len(jobs)))
    return None if pool is None else [pool.submit(_write_track, *job) for job in jobs]


def _write_sequence_files(prefix: Path, result: Annotation, formats, gff3_fasta: bool,
                          needs_bases: bool) -> list[Path]:
    """The GFF3, BED, protein / CDS FASTA and GenBank files of :func:`write_annotation`."""
    from genoctx.io.writers import (
        write_bed,
        write_genbank,
        write_gene_fasta,
        write_gff3,
        write_spliced_bed,
        write_spliced_gff3,
    )

    spliced = result.mode == "eukaryote"
    written = []
    with FastaFile(result.source) if needs_bases else contextlib.nullcontext() as fa:
        if "gff3" in formats:
            path = prefix.with_name(f"{prefix.name}.{SUFFIXES['gff3']}")
            attrs = {"model_sha256": result.model_sha256} if result.model_sha256 else None
            fetch = fa.fetch if gff3_fasta else None
            if spliced:
                write_spliced_gff3(path, result.genes, result.lengths, attrs=attrs, fasta=fetch)
            else:
                write_gff3(path, result.genes, result.rnas, result.lengths, attrs=attrs,
                           fasta=fetch, circular=result.circular)
            written.append(path)
        if "bed" in formats:
            path = prefix.with_name(f"{prefix.name}.{SUFFIXES['bed']}")
            if spliced:
                write_spliced_bed(path, result.genes)
            else:
                write_bed(path, result.genes, result.rnas, result.lengths)
            written.append(path)
        # genes carry their own translation table (attrs["transl_table"]) when it is not 11
        for fmt, protein in (("faa", True), ("ffn", False)):
            if fmt in formats:
                path = prefix.with_name(f"{prefix.name}.{SUFFIXES[fmt]}")
                write_gene_fasta(path, result.genes, result.lengths, fa.fetch, protein=protein)
                written.append(path)
        if "gbk" in formats:
            path = prefix.with_name(f"{prefix.name}.{SUFFIXES['gbk']}")
            write_genbank(path, result.genes, result.rnas,
                          [(t.contig, t.start, t.end, result.lengths[t.contig])
                           for t in result.targets], fa.fetch, circular=result.circular,
                          # nuclear genes read the standard code (its starts: ATG alone)
                          translation_table=1 if spliced else 11)
            written.append(path)
    return written
