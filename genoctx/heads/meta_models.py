"""Pre-trained decoder statistics for short sequences (what Prodigal's metagenomic mode does).

The gene decoder self-trains its coding and start statistics on the genome it is given. A
single region, a plasmid alone or a metagenomic contig holds too few genes for that: on 5-kb
pieces of B. melitensis the self-trained decoder finds 61% of the genes
(``python benchmarks/genecall_regions.py``). For such inputs the decoder takes its statistics
from a bank instead: each model in the bank is the decoder's own self-training on one genome that
the data manifest allows for training (roles ``train`` and ``pretrain-only``; no annotation is
read, the statistics come from the decoder's calls). Every model whose G+C suits the sequence
decodes it and the one whose gene set scores highest is kept, as Prodigal's ``-p meta`` chooses
among its 50 models.

The bank ships as ``genoctx/weights/meta_models.safetensors`` (sha256-checked) with
``meta_models.json`` (command, data files and their sha256). Rebuild it with
``python -m genoctx.heads.meta_models`` (about 2 min).

Legend: Q = codon position (3), K = 4**6 hexamers, R = RBS classes, P = upstream positions.
"""

from __future__ import annotations

import argparse
import functools
import json
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from genoctx.errors import InputError
from genoctx.io.digest import verify_digest_file, write_digest, write_fit_record

WEIGHTS_DIR = Path(__file__).resolve().parent.parent / "weights"
FILE = "meta_models.safetensors"
PARTS = ("llr_QK", "pair_llr", "type_llr", "rbs_llr", "pwm_llr_PB")


@dataclass(frozen=True)
class MetaModel:
    """One genome's self-trained decoder statistics."""

    name: str
    gc: float
    llr_QK: np.ndarray       # coding vs background, per codon position [Q, K]
    pair_llr: np.ndarray     # codon-pair ratios [K]
    type_llr: np.ndarray     # start codon types
    rbs_llr: np.ndarray      # RBS classes [R]
    pwm_llr_PB: np.ndarray   # upstream composition [P, 5]


def from_decoder(name: str, dec) -> MetaModel:
    """The statistics a trained :class:`genoctx.heads.decoder.GenomeDecoder` ended with."""
    sm = dec.start_model
    return MetaModel(name, dec.gc, dec.coding_model.llr_QK.astype(np.float32),
                     np.asarray(dec.pair_llr, dtype=np.float32),
                     *(np.asarray(a, dtype=np.float32)
                       for a in (sm.type_llr, sm.rbs_llr, sm.pwm_llr_PB)))


def gc_window(gc: float) -> tuple[float, float]:
    """G+C range of models tried on a sequence of G+C ``gc`` (Prodigal's metagenomic bounds)."""
    return min(0.88495 * gc - 0.0102337, 0.65), max(0.86596 * gc + 0.1131991, 0.35)


def candidates(bank: tuple[MetaModel, ...], gc: float) -> list[MetaModel]:
    """Models of ``bank`` within :func:`gc_window` of ``gc``; the nearest one if none is."""
    if not bank:
        raise InputError("the bank of pre-trained decoder models is empty")
    lo, hi = gc_window(gc)
    out = [m for m in bank if lo <= m.gc <= hi]
    return out or [min(bank, key=lambda m: abs(m.gc - gc))]


def save_bank(bank: list[MetaModel], folder: Path) -> Path:
    """Write ``bank`` as one safetensors file (tensors ``NAME/PART``) and its ``.sha256``."""
    from safetensors.numpy import save_file

    folder.mkdir(parents=True, exist_ok=True)
    t = {}
    for m in bank:
        if "/" in m.name:
            raise ValueError(f"model name {m.name!r} contains '/'")
        for p in PARTS:
            t[f"{m.name}/{p}"] = np.ascontiguousarray(getattr(m, p), dtype=np.float32)
    # one metadata key: safetensors writes several in no fixed order, and the file's sha256
    # must not change from one build to the next
    meta = {"bank": json.dumps({"models": [[m.name, m.gc] for m in bank], "parts": list(PARTS)},
                               sort_keys=True)}
    path = folder / FILE
    save_file(t, str(path), metadata=meta)
    write_digest(path)
    return path


def load_bank(folder: Path = WEIGHTS_DIR) -> tuple[MetaModel, ...]:
    """Load the bank in ``folder``, checking the file against its ``.sha256``."""
    from safetensors import safe_open

    path = folder / FILE
    verify_digest_file(path, "decoder model bank",
                       "rebuild it with `python -m genoctx.heads.meta_models`")
    with safe_open(str(path), framework="numpy") as f:
        meta = json.loads((f.metadata() or {}).get("bank", "{}"))
        if meta.get("parts") != list(PARTS):
            raise InputError(f"{path}: holds parts {meta.get('parts')!r}, this code reads "
                             f"{list(PARTS)!r}; rebuild it")
        return tuple(MetaModel(name, float(gc), *(f.get_tensor(f"{name}/{p}") for p in PARTS))
                     for name, gc in meta["models"])


@functools.lru_cache(maxsize=1)
def default_bank() -> tuple[MetaModel, ...]:
    """The shipped bank (loaded once)."""
    return load_bank(WEIGHTS_DIR)


# --------------------------------------------------------------------------- building

def bank_genomes(data_root=None) -> list[tuple[str, list[tuple[str, bytes]]]]:
    """(model name, records) of every bacterial genome the manifest allows for training
    (train and pretrain-only roles), each file checked by the role guard."""
    from genoctx.io.dataroot import (
        TRAINABLE_ROLES,
        load_manifest,
        resolve_data_root,
        trainable_sequences,
    )

    root = resolve_data_root(data_root)
    out = []
    for e in sorted(load_manifest(root).values(), key=lambda e: e.path):
        folder = Path(e.path).parent.name
        if e.role not in TRAINABLE_ROLES or folder not in ("bacteria", "unannotated"):
            continue
        path = root / e.path
        _, records = trainable_sequences(path, root, source=e.path)
        name = path.name.split(".gbff")[0].split(".fna")[0]
        out.append((name, [(c, s) for c, s in records if len(s)]))
    return out


def build(genomes, params=None) -> list[MetaModel]:
    """Self-train the decoder on each genome (sequence only) and keep its statistics."""
    from genoctx.heads.decoder import DecoderParams, GenomeDecoder

    params = params or DecoderParams(orf_scorer=False)
    bank = []
    for name, records in genomes:
        dec = GenomeDecoder(records, None, params)
        dec.train()
        bank.append(from_decoder(name, dec))
        print(f"{name}: G+C {dec.gc:.3f}", flush=True)
    return bank


def main(argv: list[str] | None = None) -> None:
    from genoctx.io.dataroot import load_manifest, resolve_data_root

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data-root", default=None, help="shared data folder (default: auto)")
    ap.add_argument("--out", default=str(WEIGHTS_DIR), help="folder to write (default: weights)")
    args = ap.parse_args(argv)
    genomes = bank_genomes(args.data_root)
    bank = build(genomes)
    out = Path(args.out)
    path = save_bank(bank, out)
    root = resolve_data_root(args.data_root)
    names = {n for n, _ in genomes}
    files = {e.path: e.sha256 for e in load_manifest(root).values()
             if Path(e.path).name.split(".gbff")[0].split(".fna")[0] in names}
    write_fit_record(out / "meta_models.json", "genoctx.heads.meta_models", args.data_root,
                     out / FILE, models={m.name: round(m.gc, 4) for m in bank}, files=files,
                     check="python benchmarks/genecall_regions.py")
    print(f"wrote {path} ({path.stat().st_size} bytes)")


if __name__ == "__main__":
    main(sys.argv[1:])
