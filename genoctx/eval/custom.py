"""Score any annotation, or the model on any annotated genome, with the benchmark metrics.

- :func:`predictions_job`: another tool's (or an earlier genoctx run's) GFF3, GTF or GenBank
  against a truth annotation (GenBank, GFF3 or GTF, gzip allowed; GFF3 predictions also xz or
  bzip2), each read by the truth's rules: ``genoctx eval --predictions P --truth T``.
- :func:`model_job`: annotate a FASTA with the model and score it against the truth, beside the
  sequence-only decoder and Prodigal: ``genoctx eval --truth T --fasta F``.

Both use the metrics of ``annotation-bacteria``: gene level (a call matches when contig, strand
and stop agree; truth drops pseudo and joined CDS), start agreement, and per-base CDS F1/MCC
where the contig lengths are known (from ``--fasta``, the GenBank records' LOCUS lines, or GFF3
``##sequence-region`` lines); a spliced call's introns are not coding.
"""

from __future__ import annotations

import re
import sys
import time
from itertools import pairwise
from pathlib import Path

import numpy as np

from genoctx.errors import InputError
from genoctx.eval.harness import BenchContext, BenchResult, Row, savefig
from genoctx.eval.metrics import binary_scores, coding_mask, gene_metrics
from genoctx.io.annotation import (
    annotation_format,
    is_clean_splice,
    label_tracks,
    read_features,
    read_genes,
    stated_sequences,
)


def per_base(pred: list, truth_path: Path, lengths: dict[str, int]) -> dict:
    """Per-base CDS F1/MCC: bases inside predicted genes vs annotated CDS (ignore bases skipped)."""
    tracks = label_tracks(read_features(truth_path), lengths)
    p, t, m = [], [], []
    for c, n in lengths.items():
        tr = tracks[c]
        p.append(coding_mask(pred, c, n))
        t.append((np.asarray(tr.cds_phase_plus) >= 0) | (np.asarray(tr.cds_phase_minus) >= 0))
        m.append(~np.asarray(tr.ignore, dtype=bool))
    return binary_scores(np.concatenate(p), np.concatenate(t), np.concatenate(m))


def _score(name: str, calls: list, truth: list, truth_path: Path, lengths) -> tuple[dict, list[Row]]:
    m = gene_metrics(calls, truth).as_dict()
    rows = [Row(truth_path.name, name, f"gene {k}", m[k])
            for k in ("sensitivity", "precision", "f1", "start_agreement")]
    if lengths:
        pb = per_base(calls, truth_path, lengths)
        m["per_base_cds"] = pb
        rows += [Row(truth_path.name, name, "per-base CDS F1", pb["f1"]),
                 Row(truth_path.name, name, "per-base CDS MCC", pb["mcc"])]
    return m, rows


# NCBI's database tags in FASTA headers (gi|...|ref|...|): shared by unrelated names
_NCBI_TAGS = frozenset({"gi", "ref", "gb", "emb", "dbj", "lcl", "gnl", "pdb", "sp", "tr", "tpg",
                        "tpe", "tpd", "pir", "prf", "pat", "bbs", "gpp", "nat"})


def _name_keys(name: str, versioned: bool) -> set[str]:
    """The ``|``-separated tokens of a name that identify a sequence (the database tags left
    out), with or without their ``.version`` suffix."""
    toks = {t for t in name.split("|") if t and t not in _NCBI_TAGS}
    if versioned:
        return toks
    return {m.group(1) for t in toks if (m := _ACCESSION.fullmatch(t))}


# an accession (NC_000913.3, CP009072, AE014075.1): only these lose a ".version" to match, so
# that contig.1 and contig.2 stay apart
_ACCESSION = re.compile(r"([A-Za-z]{1,6}_?[A-Za-z]{0,4}\d{5,})(?:\.\d+)?")


def contig_aliases(names, truth_names) -> dict[str, str]:
    """Map the sequence names of one file to the truth's where they differ only in decoration,
    either way.

    NCBI FASTA headers such as ``gi|45478711|ref|NC_005816.1|`` name the record the GenBank
    file calls ``NC_005816.1``, and a truth written from such a FASTA carries the long name
    where the predictions may carry the short one. Two names match when the ``|``-separated
    tokens of one (NCBI's database tags ``gi``, ``ref``, ... left out) are all tokens of the
    other, first as written, else without the ``.version`` suffix of accessions; so
    ``S1|plasmidA`` and ``S1|plasmidB`` (a shared sample prefix) do not match. A name is mapped
    only when the match is unambiguous both ways: it matches one truth name, which is not
    itself in ``names`` and which no other name of ``names`` matches (two sequences of one
    file are never merged). Names that match exactly keep their own name.
    """
    truth_names = set(truth_names)
    names = set(names)
    index: dict[bool, dict[str, set[str]]] = {True: {}, False: {}}
    for versioned, keys in index.items():
        for t in truth_names:
            for k in _name_keys(t, versioned):
                keys.setdefault(k, set()).add(t)
    wanted: dict[str, set[str]] = {}
    for n in names - truth_names:
        for versioned in (True, False):
            mine = _name_keys(n, versioned)
            near = {t for k in mine for t in index[versioned].get(k, ())}
            hits = {t for t in near if _nested(mine, _name_keys(t, versioned))}
            if hits:
                break
        if len(hits) == 1:
            wanted.setdefault(hits.pop(), set()).add(n)
    return {ns.pop(): t for t, ns in wanted.items() if len(ns) == 1 and t not in names}


def _nested(a: set[str], b: set[str]) -> bool:
    """Whether the tokens of one name are all tokens of the other."""
    return bool(a and b) and (a <= b or b <= a)


def _renamed(calls: list, aliases: dict[str, str]) -> list:
    import dataclasses

    return [dataclasses.replace(g, contig=aliases.get(g.contig, g.contig)) for g in calls]


def _check_contigs(calls: list, truth: list, what: str) -> None:
    pc = {g.contig for g in calls}
    tc = {g.contig for g in truth}
    if calls and truth and not pc & tc:
        raise InputError(f"{what} and the truth share no contig names ({sorted(pc)[:3]} vs "
                         f"{sorted(tc)[:3]}); rename the sequences so they agree")


def _check_sequences(lengths: dict[str, int] | None, truth: list, fasta: str) -> None:
    """Refuse a FASTA none of whose sequences the truth annotates (the per-base scores would
    compare the truth with nothing), or one shorter than a truth gene's end."""
    names = {g.contig for g in truth}
    if not lengths or not names & set(lengths):
        raise InputError(f"{fasta} and the truth share no contig names ({sorted(lengths or {})[:3]}"
                         f" vs {sorted(names)[:3]}); rename the sequences so they agree")
    for g in truth:
        n = lengths.get(g.contig)
        if n is not None and g.end > n and not g.joined:
            raise InputError(f"the truth has a gene on {g.contig} ending at {g.end:,}, past the "
                             f"{n:,} bp of that sequence in {fasta}: is it the same assembly?")


def across_origin(g, lengths: dict[str, int], circular=()) -> bool:
    """Whether call ``g`` spans the origin of a circular contig (one of ``circular``): GFF3's
    one row ending past the contig's length (as ``genoctx annotate --circular`` writes it), or
    two pieces, one from the origin and one to the end. The truth leaves such joined CDS out
    (they have no single stop coordinate to match on), so scoring leaves them out of the
    predictions too. On a linear contig neither is an origin crossing (see
    :func:`_check_call_ends`)."""
    n = lengths.get(g.contig)
    if n is None or g.contig not in circular:
        return False
    if g.start < 0 or g.end > n:
        return True
    parts = (getattr(g, "attrs", None) or {}).get("parts") or ()
    return len(parts) > 1 and (g.start, g.end) == (0, n)


def _check_call_ends(calls: list, lengths: dict[str, int], circular, what: str) -> None:
    """Refuse a call that runs past the end of a contig that is not circular."""
    for g in calls:
        n = lengths.get(g.contig)
        if n is not None and g.end > n and g.contig not in circular:
            raise InputError(f"{what} has a CDS on {g.contig} ending at {g.end:,}, past the "
                             f"{n:,} bp of that sequence, which neither file marks circular "
                             "(GenBank LOCUS 'circular', GFF3 region Is_circular=true): is it "
                             "the same assembly?")


def _wraps(parts: list[tuple[int, int]], strand: int) -> bool:
    """Whether parts in transcription order step back across the origin (GenBank's
    ``join(9500..9609,1..100)``)."""
    return any((b[0] < a[0]) if strand > 0 else (b[1] > a[1]) for a, b in pairwise(parts))


def read_predictions(path: Path) -> tuple[list, int]:
    """Predicted CDS of a GFF3, GTF or GenBank file as GeneCalls (pseudo and joined CDS left
    out, as in the truth), and how many GenBank CDS were left out for crossing the origin
    (``join(9500..9609,1..100)``; GFF3's crossings are told from the contig lengths later).
    GTF is read as the truth reads it (CDS by transcript_id, the stop_codon row added)."""
    from genoctx.heads.decoder import GeneCall
    from genoctx.io.writers import read_gff3_genes

    if annotation_format(path) == "gff3":
        def kept(g) -> bool:  # the truth's rules (genoctx.io.annotation.read_genes)
            attrs = g.attrs or {}
            if str(attrs.get("pseudo", "")).lower() == "true":
                return False
            parts = attrs.get("parts")
            return not parts or is_clean_splice(parts if g.strand > 0 else parts[::-1], g.strand)

        return [g for g in read_gff3_genes(path) if kept(g)], 0
    genes = read_genes(path, include_joined=True)
    wrapped = sum(g.joined and _wraps(g.parts, g.strand) for g in genes)
    return [GeneCall(g.contig, g.start, g.end, g.strand, float("nan"), "", (g.partial, g.partial),
                     {"parts": sorted(g.parts)} if len(g.parts) > 1 else {})
            for g in genes if not g.joined], wrapped


def predictions_job(predictions: Path, truth: Path, fasta: Path | None = None,
                    method: str | None = None):
    """A harness job scoring the CDS of ``predictions`` (GFF3, GTF, or GenBank such as
    Prokka's, Bakta's or ``genoctx annotate --formats gbk``) against ``truth``."""

    def run(ctx: BenchContext) -> BenchResult:
        pred_path = ctx.user_file(predictions)
        truth_path = ctx.user_file(truth)
        if fasta is not None:
            ctx.user_file(fasta)
        calls, crossing = read_predictions(pred_path)
        true = read_genes(truth_path)
        if not true:
            raise InputError(f"{truth_path} has no CDS to score against")
        lengths, circular = stated_sequences(truth_path)
        truth_names = {g.contig for g in true} | set(lengths)
        aliases = contig_aliases({g.contig for g in calls}, truth_names)
        calls = _renamed(calls, aliases)
        if annotation_format(pred_path) == "gff3":  # genoctx annotate --circular marks them
            circular |= {aliases.get(c, c) for c in stated_sequences(pred_path)[1]}
        if fasta is not None:
            from genoctx.io.fasta import FastaFile

            fa = FastaFile(fasta).lengths
            fa_aliases = contig_aliases(fa, truth_names)
            lengths = {fa_aliases.get(c, c): n for c, n in fa.items()}
        _check_contigs(calls, true, str(pred_path))
        if fasta is not None:
            _check_sequences(lengths, true, str(fasta))
        _check_call_ends(calls, lengths, circular, pred_path.name)
        ring = [across_origin(g, lengths, circular) for g in calls]
        crossing += sum(ring)
        calls = [g for g, r in zip(calls, ring) if not r]
        known = truth_names | set(lengths)
        unmatched = sorted({g.contig for g in calls} - known)
        n_unmatched = sum(g.contig not in known for g in calls)
        label = method or pred_path.name
        m, rows = _score(label, calls, true, truth_path, lengths or None)
        m["across_origin_left_out"] = crossing
        m["contigs_not_in_truth"] = {"contigs": len(unmatched), "calls": n_unmatched,
                                     "names": unmatched[:10]}
        notes = [(f"{len(calls)} predicted genes from {pred_path.name}; {len(true)} true genes "
                  f"in {truth_path.name}.")]
        if not calls:
            notes.append(f"{pred_path.name} holds no CDS to score: sensitivity is 0, and "
                         "precision and F1 (shown as 0) are undefined. Is it the right file?")
        if unmatched:
            note = (f"{len(unmatched)} predicted contig(s) ({n_unmatched} call(s)) have no "
                    f"sequence of that name in {truth_path.name} (e.g. {unmatched[0]}): their "
                    "calls count as false positives; rename the sequences if they are the "
                    "truth's under another name.")
            notes.append(note)
            if not ctx.quiet:
                print(f"note: {note}", file=sys.stderr)
        if crossing:
            notes.append(f"{crossing} predicted gene(s) across a contig's origin left out, "
                         "as the truth leaves out joined CDS.")
        if not lengths:
            notes.append("Per-base scores skipped: contig lengths unknown (give --fasta).")
        role = ctx.data_files[str(truth_path)]["role"]
        if role in ("train", "pretrain-only"):
            notes.append(f"The truth file has role '{role}': genoctx's model was trained on it.")
        return BenchResult(metrics={"method": label, label: m}, rows=rows, notes=notes)

    return run


MIN_SCORES = (0.5, 0.6)  # genoctx annotate --min-score values scored beside the default


def model_job(truth: Path, fasta: Path, *, context: int = 8192, overlap: int = 1024):
    """A harness job annotating ``fasta`` with the model and scoring it against ``truth``; the
    genoctx rows are also scored keeping only calls of probability >= each of
    :data:`MIN_SCORES` (what ``genoctx annotate --min-score`` keeps: whether a threshold helps
    depends on how the truth was annotated)."""

    def run(ctx: BenchContext) -> BenchResult:
        from genoctx.eval.benchmarks.annotation_bacteria import prodigal_calls
        from genoctx.heads.annotate import annotate_fasta, call_bacterial, drop_weak_genes
        from genoctx.io.fasta import FastaFile, check_nucleotide

        truth_path = ctx.user_file(truth)
        fa_path = ctx.user_file(fasta)
        true = read_genes(truth_path)
        if not true:
            raise InputError(f"{truth_path} has no CDS to score against")
        fa = FastaFile(fa_path)
        aliases = contig_aliases(fa.lengths, {g.contig for g in true})
        lengths = {aliases.get(c, c): n for c, n in fa.lengths.items()}
        _check_sequences(lengths, true, str(fa_path))
        records = [(aliases.get(c, c), fa.fetch(c, 0, n)) for c, n in fa.lengths.items() if n > 0]
        for name, seq in records:
            check_nucleotide(name, seq, fa_path)
        callers = {"genoctx (sequence only)": lambda: call_bacterial(records)[0],
                   "prodigal": lambda: prodigal_calls(records)}
        result = None
        if ctx.model is not None:
            def with_model():
                nonlocal result
                result = annotate_fasta(fa_path, model=ctx.model, device=ctx.device,
                                        context=context, overlap=overlap, quiet=ctx.quiet)
                return _renamed(result.genes, aliases)
            callers = {"genoctx (model)": with_model} | callers
        metrics, rows, calls_by = {}, [], {}
        for name, fn in callers.items():
            t0 = time.perf_counter()
            calls = fn()
            calls_by[name] = calls
            _check_contigs(calls, true, str(fa_path))
            metrics[name], r = _score(name, calls, true, truth_path, lengths)
            metrics[name]["wall_s"] = round(time.perf_counter() - t0, 2)
            rows += r
            if name.startswith("genoctx"):  # what --min-score would keep, against this truth
                metrics[name]["by_min_score"] = by_min_score = {}
                for t in MIN_SCORES:
                    m = gene_metrics(drop_weak_genes(calls, t), true).as_dict()
                    by_min_score[str(t)] = {k: m[k] for k in
                                            ("n_pred", "sensitivity", "precision", "f1")}
                    rows.append(Row(truth_path.name, name, f"gene f1, --min-score {t}", m["f1"]))
        plots = []
        c0, n0 = next(iter(lengths.items()))
        from genoctx.eval.plots import track_figure

        hi = min(n0, 15_000)
        tracks = {}
        if result is not None and 0 in result.tracks:
            tracks = {k: v[:hi] for k, v in result.tracks[0].items()}
        best = calls_by.get("genoctx (model)", calls_by["genoctx (sequence only)"])
        plots.append(savefig(track_figure(c0, 0, hi, truth=true, predicted=best, tracks=tracks),
                             ctx.bench_dir("model-on-truth") / "tracks.png"))
        return BenchResult(metrics=metrics, rows=rows, plots=plots,
                           notes=[(f"{fa_path.name} against {truth_path.name}; Prodigal is "
                                   "pyrodigal trained on the same FASTA.")])

    return run
