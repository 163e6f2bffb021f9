"""A coding model for eukaryote mode, fitted on the annotated CDS of the train eukaryote chunks.

The spliced decoder (:mod:`genoctx.heads.spliced_decoder`) reads the annotation head's
probabilities, which put about half of all bases in CDS on the train chunks (0.36 and 0.13 are).
This model adds what the sequence says: the periodic fifth-order Markov chain of
:mod:`genoctx.heads.codon_model` (log P(base | five previous bases, codon position) in coding
sequence against both strands of the chunks), fitted on every complete CDS of the train-role
eukaryote chunks (A. thaliana and D. melanogaster). The decoder adds ``coding_weight`` × its
per-base log-odds (:func:`genoctx.heads.spliced_decoder.coding_tracks`) to the six CDS
channels' emissions. By default the decoder then self-trains it on the input
(:func:`fit_on_calls`: refit on the CDS of a first decode, blended with this prior, and a
second decode).

It ships as ``genoctx/weights/eukaryote_coding.safetensors`` (sha256-checked) with
``eukaryote_coding.json`` (command, data files and their sha256). Refit with
``python -m genoctx.heads.eukaryote_coding [--data-root DIR] [--out DIR]`` (seconds; reads only
train-role files, through the role guard; the same sha256 on every run). Held out by species:
``python benchmarks/eukaryote_train_chunks.py --held-out``.
"""

from __future__ import annotations

import argparse
import functools
import sys
from pathlib import Path

import numpy as np

from genoctx.heads import codon_model as cm
from genoctx.heads.orfs import encode
from genoctx.io.digest import verify_digest_file, write_digest, write_fit_record

WEIGHTS_DIR = Path(__file__).resolve().parent.parent / "weights"
FILE = "eukaryote_coding.safetensors"
CHUNK_GLOB = "genomes/eukaryote_chunks/*.fa.gz"


def complete_cds(records: list[tuple[str, bytes]], features: dict) -> list[np.ndarray]:
    """Base codes of every complete CDS (phase 0, a whole number of codons, inside its record;
    not pseudo, not joined), spliced and read along its strand."""
    seqs = {c: encode(s) for c, s in records}
    out = []
    for contig, feats in features.items():
        x = seqs.get(contig)
        if x is None:
            continue
        for f in feats:
            parts = sorted(f.parts)
            if (f.kind != "CDS" or f.pseudo or f.joined or f.strand == 0 or f.phase
                    or (f.part_phases and f.part_phases[0]) or parts[-1][1] > len(x)):
                continue
            cds = np.concatenate([x[s:e] for s, e in parts])
            if len(cds) % 3 or len(cds) < 6:
                continue
            out.append(cds if f.strand > 0 else np.where(cds < 4, 3 - cds, 4)[::-1])
    return out


def _strand_counts(x: np.ndarray) -> np.ndarray:
    """Hexamer counts of both strands of one record's base codes, [K]."""
    counts = np.zeros(cm.NUM_KMERS, dtype=np.int64)
    for strand in (x, np.where(x < 4, 3 - x, 4)[::-1]):
        counts += cm.background_counts(*cm.kmer_index(strand))
    return counts


def fit_on_calls(codes: dict[str, np.ndarray], genes, prior: cm.CodingModel, weight: float,
                 half: float = 50_000.0) -> tuple[cm.CodingModel, float]:
    """The coding model of the input itself, from the genes decoded on it (self-training, as
    GeneMark-ES does), blended with ``prior``.

    ``codes``: contig → base codes of every input record (the background: both strands of
    all of them); ``genes``: decoded :class:`~genoctx.heads.spliced_decoder.SplicedGene` s,
    whose CDS are spliced and read along their strand. The log-odds are
    ``(1 - w) · prior + w · own`` with ``w = weight · n / (n + half)`` for ``n`` CDS bases
    learned from, so that a few genes barely move the prior. Returns the model and ``w``."""
    coding = np.zeros((3, cm.NUM_KMERS), dtype=np.int64)
    n = 0
    for g in genes:
        x = codes.get(g.contig)
        if x is None:
            continue
        cds = np.concatenate([x[s:e] for s, e in g.cds])
        if g.strand < 0:
            cds = np.where(cds < 4, 3 - cds, 4)[::-1]
        if len(cds) % 3 or len(cds) < 6:
            continue
        kidx, valid = cm.kmer_index(cds)
        coding += cm.coding_counts(kidx, valid, np.array([0]), np.array([len(cds)]))
        n += len(cds)
    w = weight * n / (n + half) if n else 0.0
    if not w:
        return prior, 0.0
    background = sum(_strand_counts(x) for x in codes.values())
    own = cm.fit_coding_model(coding, background)
    return cm.CodingModel(((1 - w) * prior.llr_QK + w * own.llr_QK).astype(np.float32)), w


BACKGROUNDS = ("all", "noncoding")


def fit(chunks: list[tuple[list, dict]], background: str = "all") -> cm.CodingModel:
    """The coding model of ``(records, features)`` pairs: CDS hexamers by codon position
    against the hexamers of both strands of every record (``background="all"``, shipped) or
    only those with no base in an annotated CDS (``"noncoding"``: measured, not better; see
    docs/results.md)."""
    if background not in BACKGROUNDS:
        raise ValueError(f"background must be one of {BACKGROUNDS}, got {background!r}")
    coding = np.zeros((3, cm.NUM_KMERS), dtype=np.int64)
    counts = np.zeros(cm.NUM_KMERS, dtype=np.int64)
    for records, features in chunks:
        for cds in complete_cds(records, features):
            kidx, valid = cm.kmer_index(cds)
            coding += cm.coding_counts(kidx, valid, np.array([0]), np.array([len(cds)]))
        for contig, seq in records:
            x = encode(seq)
            if background == "all":
                counts += _strand_counts(x)
                continue
            in_cds = np.zeros(len(x), dtype=bool)
            for f in features.get(contig, []):
                if f.kind == "CDS":
                    for s, e in f.parts:
                        in_cds[s:e] = True
            for strand, mask in ((x, in_cds), (np.where(x < 4, 3 - x, 4)[::-1], in_cds[::-1])):
                kidx, valid = cm.kmer_index(strand)
                # the hexamer ending at i reads i-5 .. i
                valid &= np.convolve(mask, np.ones(cm.ORDER + 1))[:len(mask)] == 0
                counts += cm.background_counts(kidx, valid)
    return cm.fit_coding_model(coding, counts)


def save(model: cm.CodingModel, folder: Path) -> Path:
    from safetensors.numpy import save_file

    folder.mkdir(parents=True, exist_ok=True)
    path = folder / FILE
    save_file({"llr_QK": np.ascontiguousarray(model.llr_QK)}, str(path))
    write_digest(path)
    return path


def load(folder: Path = WEIGHTS_DIR) -> cm.CodingModel:
    """The model in ``folder``, checked against its ``.sha256``."""
    from safetensors.numpy import load_file

    path = folder / FILE
    verify_digest_file(path, "eukaryote coding model",
                       "refit with `python -m genoctx.heads.eukaryote_coding`")
    return cm.CodingModel(load_file(str(path))["llr_QK"])


@functools.lru_cache(maxsize=1)
def default_model() -> cm.CodingModel:
    """The shipped model (loaded once)."""
    return load(WEIGHTS_DIR)


def load_chunks(data_root=None, species: list[str] | None = None) -> list[tuple[str, dict, list, dict]]:
    """``(species, {path: sha256}, records, features)`` of each train-role eukaryote chunk (FASTA
    and GFF), through the role guard; ``species`` keeps only those named."""
    from genoctx.io.annotation import read_features
    from genoctx.train.corpus import _guarded, guarded_sequences, manifest_files

    out = []
    for fa in manifest_files([CHUNK_GLOB], {"train"}, data_root):
        name = Path(fa).name.removesuffix(".fa.gz")
        if species is not None and name not in species:
            continue
        gff = fa.removesuffix(".fa.gz") + ".gff.gz"
        _, fa_info, seqs = guarded_sequences(fa, data_root)
        gff_path, gff_info = _guarded(gff, data_root)
        out.append((name, {fa: fa_info["sha256"], gff: gff_info["sha256"]}, seqs,
                    read_features(gff_path)))
    return out


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data-root", default=None, help="shared data folder (default: auto)")
    ap.add_argument("--out", default=str(WEIGHTS_DIR), help="folder to write (default: weights)")
    args = ap.parse_args(argv)
    chunks = load_chunks(args.data_root)
    model = fit([(records, features) for _, _, records, features in chunks])
    out = Path(args.out)
    path = save(model, out)
    files = {k: v for _, f, _, _ in chunks for k, v in f.items()}
    write_fit_record(out / "eukaryote_coding.json", "genoctx.heads.eukaryote_coding",
                     args.data_root, path, species=[c[0] for c in chunks],
                     cds=sum(len(complete_cds(r, f)) for _, _, r, f in chunks),
                     train_files=files,
                     held_out_check="python benchmarks/eukaryote_train_chunks.py --held-out")
    print(f"wrote {path} ({path.stat().st_size} bytes)")


if __name__ == "__main__":
    main(sys.argv[1:])
