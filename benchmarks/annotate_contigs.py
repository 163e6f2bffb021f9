"""The annotation model over many short contigs on CPU: one record at a time vs side by side.

A metagenome's or a draft assembly's contigs are often shorter than one window (8,191 bases):
each is one model call. :func:`genoctx.heads.annotation.predict_probs` runs a record's calls on
the worker threads, so a one-call record used one of them; ``predict_probs_many`` (what
``genoctx annotate`` runs) puts such records side by side, one per worker thread. The two ways
are timed in alternating rounds (the shared cores' speed drifts) on contigs cut from a train
genome (E. coli K-12), and their probabilities compared.

Run: ``python benchmarks/annotate_contigs.py [--contigs 40] [--length 5000] [--reps 2]``
"""

from __future__ import annotations

# The path fix comes before any import that pulls in the standard library's tokenize.
import sys
from pathlib import Path

_HERE = Path(__file__).resolve().parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != _HERE] + [str(_HERE)]

import argparse
import time

import numpy as np
import torch

from genoctx.heads.annotation import load_annotation_model, predict_probs, predict_probs_many
from genoctx.io.annotation import read_sequences_genbank
from genoctx.io.dataroot import resolve_data_root
from genoctx.tokenize import nucleotide as nt

GENOME = "genomes/bacteria/Escherichia_coli_K12_MG1655.gbff.gz"


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--contigs", type=int, default=40)
    ap.add_argument("--length", type=int, default=5000)
    ap.add_argument("--reps", type=int, default=2)
    ap.add_argument("--data-root", default=None)
    a = ap.parse_args(argv)
    torch.set_flush_denormal(True)
    _, seq = next(read_sequences_genbank(resolve_data_root(a.data_root) / GENOME))
    step = len(seq) // a.contigs
    records = [nt.encode(seq[i * step:i * step + a.length]) for i in range(a.contigs)]
    backbone, head = load_annotation_model("embedded")
    predict_probs(backbone, head, records[0])  # warm up
    print(f"# {a.contigs} contigs of {a.length:,} bp, torch threads {torch.get_num_threads()}")
    print("way\twall_s\tkb_per_s")
    for _ in range(a.reps):
        t0 = time.perf_counter()
        alone = [predict_probs(backbone, head, ids) for ids in records]
        t1 = time.perf_counter()
        many = [p for _, p in predict_probs_many(
            backbone, head, ((k, ids, False) for k, ids in enumerate(records)))]
        t2 = time.perf_counter()
        kb = a.contigs * a.length / 1000
        print(f"one record at a time\t{t1 - t0:.1f}\t{kb / (t1 - t0):.2f}", flush=True)
        print(f"side by side\t{t2 - t1:.1f}\t{kb / (t2 - t1):.2f}", flush=True)
        worst = max(float(np.abs(x - y).max()) for x, y in zip(alone, many))
        print(f"# largest probability difference: {worst:.2g}")


if __name__ == "__main__":
    main()
