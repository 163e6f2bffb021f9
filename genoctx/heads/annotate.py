"""Annotate a FASTA end to end: tokens → model probabilities → gene-structure decoder → features.

``annotate_fasta`` is what ``genoctx annotate`` runs. Each target (a whole record, or a region)
is tokenized, scored by the annotation model in overlapping windows (stitched without seams),
and decoded into genes and RNA features by :mod:`genoctx.heads.decoder`, whose self-trained
statistics are fitted across all targets of the input (one genome). Coordinates in the result
are on the input's contigs, 0-based half-open.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from genoctx.errors import InputError
from genoctx.heads import classes
from genoctx.heads.decoder import DecoderParams, GeneCall, call_genes_multi
from genoctx.io.fasta import FastaFile
from genoctx.io.regions import Region
from genoctx.progress import progress_bar
from genoctx.tokenize import nucleotide as nt

# Probability tracks written as bedGraph: name -> classes summed.
TRACKS: dict[str, tuple[int, ...]] = {
    "CDS_plus": classes.CDS_PLUS,
    "CDS_minus": classes.CDS_MINUS,
    "RNA": tuple(classes.INDEX[n] for n in ("tRNA+", "tRNA-", "rRNA+", "rRNA-", "ncRNA+", "ncRNA-")),
}


@dataclass
class Annotation:
    """Genes and RNA features over the targets, plus per-target probability tracks."""

    genes: list[GeneCall]
    rnas: list = field(default_factory=list)
    targets: list[Region] = field(default_factory=list)
    lengths: dict[str, int] = field(default_factory=dict)   # contig lengths of the input
    tracks: dict[int, dict[str, np.ndarray]] = field(default_factory=dict)  # target index -> tracks
    model_sha256: str | None = None


def _shift(items: list, region: Region) -> list:
    if region.start == 0:
        return list(items)
    return [dataclasses.replace(g, start=g.start + region.start, end=g.end + region.start)
            for g in items]


DECODER_FILE = "decoder.json"


def decoder_params(model_dir: Path | None) -> DecoderParams:
    """Decoder settings that belong to a checkpoint (``decoder.json``), else the defaults.

    The weight of the neural evidence depends on how good the head is, so a checkpoint carries
    it: ``{"neural_gene_weight": w, "neural_start_weight": s}`` replace the decoder's
    ``neural_per_codon`` gene weight and ``neural`` start weight.
    """
    import json

    from genoctx.heads.decoder import FEATURES, START_PARTS

    params = DecoderParams()
    path = None if model_dir is None else Path(model_dir) / DECODER_FILE
    if path is None or not path.is_file():
        return params
    cfg = json.loads(path.read_text())
    gw, sw = list(params.gene_weights), list(params.start_weights)
    if "neural_gene_weight" in cfg:
        gw[FEATURES.index("neural_per_codon")] = float(cfg["neural_gene_weight"])
    if "neural_start_weight" in cfg:
        sw[START_PARTS.index("neural")] = float(cfg["neural_start_weight"])
    return dataclasses.replace(params, gene_weights=tuple(gw), start_weights=tuple(sw))


def annotate_fasta(path: str | Path, targets: list[Region] | None = None, *,
                   model: str | Path | None = "embedded", device: str = "cpu",
                   context: int = 8192, overlap: int = 1024, batch_size: int = 4,
                   quiet: bool = False) -> Annotation:
    """Annotate ``targets`` of the FASTA at ``path`` (all records when None).

    ``model=None`` decodes from the sequence alone (no neural probabilities).
    """
    from genoctx.heads.annotation import load_annotation_model, predict_probs
    from genoctx.heads.decoder import call_rnas

    fa = FastaFile(path)
    lengths = dict(fa.lengths)
    targets = targets or [Region(c, 0, n) for c, n in lengths.items() if n > 0]
    if not targets:
        raise InputError(f"{path} holds no sequence to annotate")
    backbone = head = None
    sha = model_dir = None
    if model is not None:
        from genoctx.model import checkpoint

        backbone, head = load_annotation_model(model, device=device)
        model_dir = checkpoint.resolve_checkpoint(model)
        sha = checkpoint.verify_digest(model_dir)
    names = [f"{t.contig}:{t.start}-{t.end}" if (t.start, t.end) != (0, lengths[t.contig])
             else t.contig for t in targets]
    records, probs, tracks = [], {}, {}
    total = sum(len(t) for t in targets)
    with progress_bar("annotating", total=total, quiet=quiet) as bar:
        for i, (t, name) in enumerate(zip(targets, names)):
            seq = fa.fetch(t.contig, t.start, t.end)
            records.append((name, seq))
            if backbone is None:
                bar.advance(len(t))
                continue
            p = predict_probs(backbone, head, nt.encode(seq), context=context, overlap=overlap,
                              batch_size=batch_size, progress=bar.advance)
            probs[name] = p
            tracks[i] = {k: p[:, list(v)].sum(1) for k, v in TRACKS.items()}
    genes = call_genes_multi(records, probs or None, params=decoder_params(model_dir))
    out_genes, out_rnas = [], []
    for name, t in zip(names, targets):
        mine = [dataclasses.replace(g, contig=t.contig) for g in genes if g.contig == name]
        out_genes += _shift(mine, t)
        if name in probs:
            out_rnas += _shift([dataclasses.replace(r, contig=t.contig)
                                for r in call_rnas(probs[name], contig=name)], t)
    return Annotation(out_genes, out_rnas, list(targets), lengths, tracks, sha)


def write_annotation(prefix: str | Path, result: Annotation, formats: tuple[str, ...]) -> list[Path]:
    """Write ``PREFIX.gff3``, ``PREFIX.bed`` and ``PREFIX.<track>.bedgraph``; returns the paths.

    Each file is written to a temporary name and renamed when complete.
    """
    from genoctx.io.writers import write_bed, write_bedgraph, write_gff3

    prefix = Path(prefix)
    prefix.parent.mkdir(parents=True, exist_ok=True)
    written = []
    if "gff3" in formats:
        path = prefix.with_name(prefix.name + ".gff3")
        attrs = {"model_sha256": result.model_sha256} if result.model_sha256 else None
        write_gff3(path, result.genes, result.rnas, result.lengths, attrs=attrs)
        written.append(path)
    if "bed" in formats:
        path = prefix.with_name(prefix.name + ".bed")
        write_bed(path, result.genes, result.rnas)
        written.append(path)
    if "bedgraph" in formats and result.tracks:
        for name in TRACKS:
            path = prefix.with_name(f"{prefix.name}.{name}.bedgraph")
            for n, (i, tracks) in enumerate(sorted(result.tracks.items())):
                t = result.targets[i]
                write_bedgraph(path, tracks[name], t.contig, start=t.start, name=name,
                               append=n > 0)
            written.append(path)
    return written
