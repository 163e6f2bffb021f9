"""Training corpora read from the data root, behind the leakage guard.

Every file is checked against ``MANIFEST.tsv`` by sha256 before it is opened
(:func:`genoctx.io.dataroot.require_trainable`): a file whose role is ``validation`` or
``benchmark`` — or that is not in the manifest at all — is refused, whatever its name or path.
Its records are then compared with those of the held-out files
(:func:`genoctx.io.dataroot.require_unseen`): a held-out genome in other bytes (decompressed,
recompressed, converted to FASTA) is refused too.
"""

from __future__ import annotations

import fnmatch
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np

from genoctx.errors import InputError
from genoctx.heads.classes import reverse_labels
from genoctx.io.dataroot import (
    load_manifest,
    require_trainable,
    resolve_data_root,
    sha256_file,
    trainable_sequences,
)
from genoctx.tokenize import nucleotide as nt

# Near-identical strains are weighted down so that they count about as one genome.
DOWNWEIGHT = {"Chlamydia_trachomatis": 0.25, "Streptococcus_pyogenes": 0.5, "Neisseria_meningitidis": 0.5}


@dataclass
class Record:
    """One contig ready for training: token ids and, for annotation, per-base labels."""

    name: str
    ids: np.ndarray                      # uint8 [L]
    labels: np.ndarray | None = None     # int64 [L] class ids (heads.classes), IGNORE_INDEX where unknown
    weight: float = 1.0
    source: str = ""


@dataclass
class Corpus:
    records: list[Record]
    files: list[dict] = field(default_factory=list)  # path, sha256, role: the data manifest of the run

    @property
    def num_tokens(self) -> int:
        return int(sum(len(r.ids) for r in self.records))


def _weight(path: str) -> float:
    name = Path(path).name
    return next((w for key, w in DOWNWEIGHT.items() if name.startswith(key)), 1.0)


def manifest_files(patterns: list[str], roles: set[str], data_root=None) -> list[str]:
    """Manifest paths matching any glob in ``patterns`` whose role is in ``roles`` (sorted)."""
    entries = load_manifest(data_root)
    return sorted(p for p, e in entries.items()
                  if e.role in roles and any(fnmatch.fnmatch(p, pat) for pat in patterns))


def _path(rel: str, data_root) -> Path:
    root = resolve_data_root(data_root)
    path = root / rel
    if not path.is_file():
        raise InputError(f"training file {rel} is missing under {root}")
    return path


def _guarded(rel: str, data_root) -> tuple[Path, dict]:
    """A training file (an annotation) after the role guard, and its line of the run's manifest."""
    path = _path(rel, data_root)
    role = require_trainable(path, data_root)
    return path, {"path": rel, "sha256": sha256_file(path), "role": role}


def guarded_sequences(rel: str, data_root) -> tuple[Path, dict, list[tuple[str, bytes]]]:
    """A training sequence file after both guards (its bytes' role, its records' sequences:
    :func:`genoctx.io.dataroot.trainable_sequences`), its manifest line and its records."""
    path = _path(rel, data_root)
    role, seqs = trainable_sequences(path, data_root, source=rel)
    return path, {"path": rel, "sha256": sha256_file(path), "role": role}, seqs


def labels_from_tracks(tracks) -> np.ndarray:
    """Per-base class ids (:mod:`genoctx.heads.classes`) from :class:`genoctx.io.annotation.LabelTracks`."""
    from genoctx.heads.annotation import labels_from_tracks as _impl

    return _impl(tracks)


def lm_files(data_root=None) -> list[str]:
    """The files :func:`lm_corpus` reads, in its order: train and pretrain-only genomes."""
    rels = manifest_files(["genomes/bacteria/*", "genomes/unannotated/*", "genomes/eukaryote_chunks/*.fa.gz"],
                          {"train", "pretrain-only"}, data_root)
    if not rels:
        raise InputError("the data manifest lists no train or pretrain-only genome under "
                         "genomes/bacteria/, genomes/unannotated/ or genomes/eukaryote_chunks/: "
                         "nothing to pretrain on")
    return rels


def lm_corpus(data_root=None) -> Corpus:
    """Train and pretrain-only genomes for nucleotide language-model pretraining."""
    records, files = [], []
    for rel in lm_files(data_root):
        _, info, seqs = guarded_sequences(rel, data_root)
        files.append(info)
        for name, seq in seqs:
            records.append(Record(name=name, ids=nt.encode(seq), weight=_weight(rel), source=rel))
    return Corpus(records, files)


def file_lines(rels: list[str], data_root=None) -> list[dict]:
    """The run manifest's lines (path, sha256, role) of ``rels``, as the corpus that reads them
    lists them in :attr:`Corpus.files`, without reading their records: what a resumed run
    compares before it reads anything (each file's bytes still pass the role guard)."""
    return [_guarded(rel, data_root)[1] for rel in rels]


EUKARYOTE_SOURCES = "genomes/eukaryote_chunks/"


def annotation_files(data_root=None) -> list[str]:
    """The files :func:`annotation_corpus` reads, in its order: each train-role bacterial
    GenBank file, then each eukaryote chunk's GFF3 and FASTA."""
    bacteria = manifest_files(["genomes/bacteria/*.gbff.gz"], {"train"}, data_root)
    eukaryotes = manifest_files(["genomes/eukaryote_chunks/*.gff.gz"], {"train"}, data_root)
    if not bacteria and not eukaryotes:
        raise InputError("the data manifest lists no train-role annotated genome "
                         "(genomes/bacteria/*.gbff.gz, genomes/eukaryote_chunks/*.gff.gz): "
                         "nothing to train the annotation head on")
    return bacteria + [r for gff in eukaryotes for r in (gff, gff.replace(".gff.gz", ".fa.gz"))]


def annotation_corpus(data_root=None, eukaryote_weight: float = 1.0) -> Corpus:
    """Train-role annotated genomes with per-base labels (bacteria GenBank; eukaryote FASTA + GFF).

    ``eukaryote_weight`` multiplies the sampling weight of the eukaryote records
    (:func:`weight_eukaryotes`)."""
    from genoctx.io.annotation import label_tracks, read_features

    records, files = [], []
    rels = annotation_files(data_root)
    for rel in (r for r in rels if not r.startswith(EUKARYOTE_SOURCES)):
        path, info, seqs = guarded_sequences(rel, data_root)
        files.append(info)
        tracks = label_tracks(read_features(path), {n: len(s) for n, s in seqs})
        for name, seq in seqs:
            records.append(Record(name, nt.encode(seq), labels_from_tracks(tracks[name]),
                                  _weight(rel), rel))
    for rel in (r for r in rels if r.startswith(EUKARYOTE_SOURCES) and r.endswith(".gff.gz")):
        fa_rel = rel.replace(".gff.gz", ".fa.gz")
        gff_path, gff_info = _guarded(rel, data_root)
        _, fa_info, seqs = guarded_sequences(fa_rel, data_root)
        files += [gff_info, fa_info]
        tracks = label_tracks(read_features(gff_path), {n: len(s) for n, s in seqs})
        for name, seq in seqs:
            if name in tracks:
                records.append(Record(name, nt.encode(seq), labels_from_tracks(tracks[name]), 1.0, fa_rel))
    return weight_eukaryotes(Corpus(records, files), eukaryote_weight)


def weight_eukaryotes(corpus: Corpus, weight: float) -> Corpus:
    """``corpus`` with the eukaryote records' sampling weight multiplied by ``weight``.

    The annotation corpus is mostly bacterial (two eukaryote chunks of about 1 Mb each beside
    some 32 Mb of bacteria, near-identical strains weighted down), so at weight 1 about one
    window in ten is eukaryotic and at weight 4 about three in ten (:func:`sample_shares`). The
    records keep their shares among themselves.
    """
    if not (weight > 0 and np.isfinite(weight)):
        raise InputError(f"--eukaryote-weight must be a positive number, not {weight}")
    records = [replace(r, weight=r.weight * weight) if r.source.startswith(EUKARYOTE_SOURCES)
               else r for r in corpus.records]
    return Corpus(records, corpus.files)


def sample_shares(corpus: Corpus) -> dict[str, float]:
    """Expected share of windows from each kind of record, {"eukaryote", "bacteria"}: what
    :class:`WindowSampler` draws from (length × weight)."""
    w = {"eukaryote": 0.0, "bacteria": 0.0}
    for r in corpus.records:
        w["eukaryote" if r.source.startswith(EUKARYOTE_SOURCES) else "bacteria"] += len(r.ids) * r.weight
    total = sum(w.values()) or 1.0
    return {k: v / total for k, v in w.items()}


class WindowSampler:
    """Deterministic random windows over a corpus, weighted by length × record weight.

    Each sample picks a record, a start, and a strand; on the minus strand the tokens are
    reverse-complemented and the labels flipped and strand-swapped (``classes.RC_PERMUTATION``).
    """

    def __init__(self, corpus: Corpus, length: int, seed: int):
        self.corpus, self.length = corpus, length
        usable = [r for r in corpus.records if len(r.ids) >= length]
        if not usable:
            raise InputError(f"no training record is at least {length} bases long")
        self.records = usable
        w = np.array([len(r.ids) * r.weight for r in usable], dtype=np.float64)
        self.p = w / w.sum()
        self.rng = np.random.default_rng(seed)

    def state(self) -> dict:
        return self.rng.bit_generator.state

    def set_state(self, state: dict) -> None:
        self.rng.bit_generator.state = state

    def sample(self, batch: int) -> tuple[np.ndarray, np.ndarray | None]:
        ids = np.empty((batch, self.length), dtype=np.int64)
        labels = None
        if self.records[0].labels is not None:
            labels = np.empty((batch, self.length), dtype=np.int64)
        for b in range(batch):
            r = self.records[self.rng.choice(len(self.records), p=self.p)]
            s = int(self.rng.integers(0, len(r.ids) - self.length + 1))
            x = r.ids[s:s + self.length].astype(np.int64)
            y = None if labels is None else r.labels[s:s + self.length].astype(np.int64)
            if self.rng.random() < 0.5:
                x = nt.COMPLEMENT[x[::-1]].astype(np.int64)
                if y is not None:
                    y = reverse_labels(y)
            ids[b] = x
            if labels is not None:
                labels[b] = y
        return ids, labels
