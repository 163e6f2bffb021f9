"""genoctx from Python: what the commands do, as functions for notebooks and scripts.

Everything here is importable from the package itself (loaded on first use, so ``import
genoctx`` stays light)::

    import genoctx

    ann = genoctx.annotate("genome.fa", out="results/genome")   # genes, RNAs, tracks + files
    ann.genes[0], ann.tracks[0]["CDS_plus"]
    model = genoctx.load_model()                   # the embedded checkpoint, sha256 checked
    emb = genoctx.embed("ACGTTGCA...", model=model)         # [L, 2 * d_model] float32
    ll = genoctx.log_likelihood("ACGTTGCA...", model=model) # [L] log p(base | bases before)
    genoctx.score_variants("calls.vcf.gz", "ref.fa", "scored.vcf.gz")

Each function is the command's code path (``genoctx annotate``, ``embed``, ``score-variants``),
with the same checks and errors (:class:`genoctx.errors.InputError`, one line, for bad input).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from genoctx.errors import InputError

if TYPE_CHECKING:
    import numpy as np

    from genoctx.cli.score_variants import Summary
    from genoctx.heads.annotate import Annotation
    from genoctx.model.model import GenoCtxModel

__all__ = ["annotate", "embed", "load_model", "log_likelihood", "score_variants",
           "write_annotation"]

SEGMENT_LEN = 16384  # tokens per segment of embed / log_likelihood (as `genoctx embed`)


def load_model(model: str | Path = "embedded", *, device: str = "auto") -> GenoCtxModel:
    """The backbone of a checkpoint directory (or ``"embedded"``, the shipped weights), its
    sha256 checked, in eval mode on ``device`` (``auto``: a GPU when there is one)."""
    from genoctx.model.device import resolve_device
    from genoctx.model.model import GenoCtxModel

    return GenoCtxModel.from_pretrained(model, device=resolve_device(device))


def _model(model, device: str) -> GenoCtxModel:
    from genoctx.model.model import GenoCtxModel

    return model if isinstance(model, GenoCtxModel) else load_model(model, device=device)


def _tokens(sequence: str | bytes, name: str = "sequence"):
    """``[1, L]`` int64 token ids of a nucleotide string (A/C/G/T; every other letter reads as
    N, U as T); a protein or an empty string is refused."""
    import torch

    from genoctx.io.fasta import protein_evidence
    from genoctx.tokenize import nucleotide as nt

    if isinstance(sequence, str):
        sequence = sequence.encode("ascii", "replace")
    if not isinstance(sequence, (bytes, bytearray, memoryview)):
        raise InputError(f"{name}: give the bases as a str or bytes, not "
                         f"{type(sequence).__name__} (a file: genoctx.annotate or the CLI)")
    sequence = bytes(sequence).replace(b"\n", b"").replace(b"\r", b"").replace(b" ", b"")
    if not sequence:
        raise InputError(f"{name} is empty")
    why = protein_evidence(sequence)  # the rule a FASTA record is held to
    if why:
        raise InputError(f"{name} looks like a protein sequence ({why}); genoctx reads DNA")
    return torch.from_numpy(nt.encode(sequence).astype("int64"))[None]


def embed(sequence: str | bytes | Sequence[str | bytes], *,
          model: str | Path | GenoCtxModel = "embedded", device: str = "auto",
          pool: str | None = None, segment_len: int = SEGMENT_LEN):
    """Per-base embeddings of ``sequence``: ``[L, 2 * d_model]`` float32, the forward then the
    reverse-strand hidden state of each base (as ``genoctx embed``; RC-equivariant), or their
    mean ``[2 * d_model]`` with ``pool="mean"``. ``model``: a name, a checkpoint directory or a
    model from :func:`load_model` (load once, embed many).

    A list of sequences (a probe's training set: promoters, reads, windows) gives a list of
    ``[L_i, 2 * d_model]`` arrays, or one ``[N, 2 * d_model]`` array with ``pool="mean"``;
    sequences of one length run together in batches of up to 32,768 bases, and each comes
    out as it would alone.
    """
    if pool not in (None, "none", "mean"):
        raise InputError(f"pool must be None or 'mean', got {pool!r}")
    net = _model(model, device)
    if isinstance(sequence, (list, tuple)):
        return _embed_many(net, sequence, pool == "mean", segment_len)
    return _embed_one(net, _tokens(sequence), pool == "mean", segment_len)


def _embed_one(net: GenoCtxModel, tokens, mean: bool, segment_len: int) -> np.ndarray:
    """``[L, 2D]`` (or its mean) of one ``[1, L]`` token row, segment by segment."""
    try:
        net.segment_length(segment_len, tokens.shape[1] + 1)
    except ValueError as exc:
        raise InputError(f"segment_len: {exc}") from None
    emb = net.embed(tokens.to(net.device), segment_len=segment_len)[0]
    return (emb.mean(0) if mean else emb).float().cpu().numpy()


BATCH_BASES = 32_768  # bases per model call when embedding many sequences


def _embed_many(net: GenoCtxModel, sequences: Sequence, mean: bool, segment_len: int):
    import numpy as np
    import torch

    if not sequences:
        raise InputError("no sequences to embed")
    ids = [_tokens(s, name=f"sequence {i + 1}")[0] for i, s in enumerate(sequences)]
    by_length: dict[int, list[int]] = {}
    for i, t in enumerate(ids):
        by_length.setdefault(len(t), []).append(i)
    out: list = [None] * len(ids)
    for length, members in by_length.items():
        if length >= segment_len:  # a long one alone, segment by segment (bounded memory)
            for i in members:
                out[i] = _embed_one(net, ids[i][None], mean, segment_len)
            continue
        step = max(1, BATCH_BASES // length)
        for lo in range(0, len(members), step):
            batch = members[lo:lo + step]
            emb = net.embed(torch.stack([ids[i] for i in batch]).to(net.device))
            emb = (emb.mean(1) if mean else emb).float().cpu().numpy()
            for i, row in zip(batch, emb, strict=True):
                out[i] = row
    return np.stack(out) if mean else out


def log_likelihood(sequence: str | bytes, *, model: str | Path | GenoCtxModel = "embedded",
                   device: str = "auto", segment_len: int = SEGMENT_LEN) -> np.ndarray:
    """``[L]`` float32: the natural-log probability of each base given the bases before it on
    the given strand (``log p(x_t | BOS, x_<t)``; the causal language model's own reading).
    Summed, it is the sequence's log-likelihood; ``genoctx score-variants`` compares such sums
    of a window with and without a variant, on both strands."""
    net = _model(model, device)
    tokens = _tokens(sequence).to(net.device)
    try:
        net.segment_length(segment_len, tokens.shape[1])
    except ValueError as exc:
        raise InputError(f"segment_len: {exc}") from None
    return net.log_likelihood(tokens, segment_len=segment_len)[0].float().cpu().numpy()


def annotate(fasta: str | Path, region: str | Sequence[str] | None = None, *,
             out: str | Path | None = None, formats: Sequence[str] | None = None,
             model: str | Path | None = "embedded", device: str = "auto",
             threads: int = 1, quiet: bool = True, **options) -> Annotation:
    """Genes and RNA genes of every record of ``fasta`` (FASTA, or a GenBank/EMBL flat file
    whose sequences are read), or of ``region`` (``"chr:1-1,000"``, 1-based inclusive, or a
    list of them), as ``genoctx annotate`` finds them; written to ``out`` (a prefix:
    ``OUT.gff3``, ``OUT.bed``, ...) in ``formats`` (default, as the command's: gff3, bed and
    the bedgraph tracks; gff3 and bed with ``model=None``) when given.

    ``model=None`` (or ``"none"``) decodes from the sequence alone, in seconds; the
    probability tracks (``Annotation.tracks``, the bedgraph/bigwig formats) need the model.
    ``threads``: processes for decoding and writing (0: every core; the output is the same
    for any number). Above 1 they are spawned, as all multiprocessing code's, so a script
    that asks for them must run its work under ``if __name__ == "__main__":`` (a notebook
    need not). Other keywords go to
    :func:`genoctx.heads.annotate.annotate_fasta` (``mode="eukaryote"``, ``circular=True``,
    ``translation_table=4``, ``procedure``, ``domain="archaea"``, ``min_score``, ...). Write
    the result again later with :func:`write_annotation`.
    """
    from genoctx.cli.annotate import _flatfile_as_fasta, annotation_targets, choose_formats
    from genoctx.cli.common import resolve_targets
    from genoctx.heads.annotate import annotate_fasta
    from genoctx.heads.annotate import write_annotation as write
    from genoctx.io.fasta import FastaFile
    from genoctx.model.device import available_cores, check_device_name

    model = None if model in (None, "none") else model
    if isinstance(formats, str):
        formats = formats.split(",")
    formats = choose_formats(None if formats is None else ",".join(formats),
                             "none" if model is None else str(model))
    tracks = bool({"bedgraph", "bigwig"} & set(formats)) if out is not None else True
    if threads < 0:
        raise InputError(f"threads must be 0 (every core) or more, got {threads}")
    workers = threads or available_cores()
    # the tracks (Annotation.tracks) come back without out; with out, only where written
    options.setdefault("need_tracks", model is not None and tracks)
    fasta = Path(fasta)
    if not fasta.is_file():
        raise InputError(f"{fasta}: no such file")
    with _flatfile_as_fasta(fasta, str(fasta)) as (source, rings):
        with FastaFile(source) as fa:
            regions = [region] if isinstance(region, str) else region
            targets = annotation_targets(resolve_targets(fa, list(regions or []) or None, None),
                                         list(fa.lengths))
        if options.get("circular") is None and rings:
            options["circular"] = frozenset(rings)  # as --circular-declared for flat files
        result = annotate_fasta(source, targets, model=model, device=check_device_name(device),
                                quiet=quiet, workers=workers, **options)
        if out is not None:
            write(Path(out), result, formats, workers=workers)
        if source != fasta:  # the flat file's temporary FASTA goes with this block
            result.source = None
    return result


def write_annotation(out: str | Path, result: Annotation,
                     formats: Sequence[str] = ("gff3", "bed", "bedgraph"),
                     **options) -> list[Path]:
    """Write ``result`` (from :func:`annotate`) as ``OUT.gff3``, ``OUT.bed``, ... in
    ``formats`` (:func:`genoctx.heads.annotate.write_annotation`); the paths written."""
    from genoctx.heads.annotate import write_annotation as write

    return write(Path(out), result, tuple(f.lower() for f in formats), **options)


def score_variants(vcf: str | Path, reference: str | Path, out: str | Path | None = None, *,
                   model: str | Path = "embedded", device: str = "auto",
                   **options) -> Summary:
    """``genoctx score-variants``: ``vcf`` with ``GCX_DLL``, ``GCX_CLASS`` and
    ``GCX_CONSEQ`` added, written to ``out`` (``.vcf``, or ``.vcf.gz``: bgzipped and
    tabix-indexed); returns the run's counts (:class:`genoctx.cli.score_variants.Summary`).
    Other keywords go to :func:`genoctx.cli.score_variants.score_vcf` (``context``,
    ``annotation``, ``batch_size``, ``translation_table``, ``circular``, ``quiet``)."""
    from genoctx.cli.score_variants import score_vcf
    from genoctx.model.device import check_device_name, resolve_device

    if out is None:
        raise InputError("give out, the VCF to write (.vcf or .vcf.gz)")
    device = resolve_device(device) if str(device).startswith("cuda") else check_device_name(device)
    return score_vcf(Path(vcf), Path(reference), Path(out), model=str(model), device=device,
                     **options)
