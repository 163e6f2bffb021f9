"""Speed of the annotation model on CPU under several settings, interleaved (A B C A B C …).

The shared CPU cores of a small machine vary by ±30% within minutes, so settings are only
compared when their runs alternate. ``predict_probs`` (what ``genoctx annotate`` runs for the
probability tracks) is timed on the first ``--bases`` of E. coli K-12 (train role) with the
embedded checkpoint and ``batch_size=4``. A setting is ``OVERLAP/CAP/WORKERS[/CONTEXT[/ROWS]]``:
window overlap, bases per model call on CPU (``-``: no cap), worker threads, the tokens the
model reads per window (BOS + ``CONTEXT - 1`` bases; default 8,192) and the query blocks per
SDPA call of local attention on CPU (``attention.CPU_ROWS_PER_CALL``; ``-``: whole groups;
default 32). The defaults compare

* ``256/16384/2/8193/-``: windows of 8,192 bases, i.e. 8,193 tokens with BOS, as before windows
  were block-aligned, and whole groups per SDPA call, as before;
* ``256/16384/2/8192/-``: block-aligned windows;
* ``256/16384/2``: the default now (aligned windows, 32 query blocks per SDPA call).

Older comparisons: ``1024/-/1`` (the settings before the overlap, cap and worker changes) against
``256/16384/1`` and ``256/16384/2``; those ran with windows of 8,192 bases and whole groups per
SDPA call, so rerun them as ``1024/-/1/8193/-``, ``256/16384/1/8193/-`` and
``256/16384/2/8193/-``.

Prints wall seconds, process CPU seconds (user + system) and system seconds per run, the
minor page faults, and how far each setting's probabilities are from the first one's.

Run: ``python benchmarks/annotate_settings.py [--bases 250000] [--reps 3] [SETTING ...]``
"""

from __future__ import annotations

# The path fix comes before any import that pulls in the standard library's tokenize.
import sys
from pathlib import Path

_HERE = Path(__file__).resolve().parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != _HERE] + [str(_HERE)]

import argparse
import resource
import time

import numpy as np
import torch

from genoctx.heads import annotation
from genoctx.io.annotation import read_sequences_genbank
from genoctx.io.dataroot import resolve_data_root
from genoctx.model import attention
from genoctx.tokenize import nucleotide as nt

SETTINGS = ("256/16384/2/8193/-", "256/16384/2/8192/-", "256/16384/2")


def parse(setting: str) -> tuple[int, int, int, int, int]:
    overlap, cap, workers, *rest = setting.split("/")
    context = int(rest[0]) if rest else 8192
    rows = 10**9 if len(rest) > 1 and rest[1] == "-" else int(rest[1]) if len(rest) > 1 else 32
    return int(overlap), 10**9 if cap == "-" else int(cap), int(workers), context, rows


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("settings", nargs="*", default=list(SETTINGS), help="OVERLAP/CAP/WORKERS[/CONTEXT[/ROWS]]")
    ap.add_argument("--bases", type=int, default=250_000)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--data-root", default=None)
    a = ap.parse_args(argv)
    torch.set_flush_denormal(True)
    path = resolve_data_root(a.data_root) / "genomes/bacteria/Escherichia_coli_K12_MG1655.gbff.gz"
    (_, seq), = list(read_sequences_genbank(path))[:1]
    ids = nt.encode(seq[:a.bases])
    backbone, head = annotation.load_annotation_model("embedded")
    annotation.predict_probs(backbone, head, ids[:20_000])  # warm up
    print("setting\twall_s\tcpu_s\tsys_s\tminor_faults")
    out = {}
    for _ in range(a.reps):
        for name in a.settings:
            overlap, cap, workers, context, rows = parse(name)
            annotation.CPU_BASES_PER_CALL = cap
            attention.CPU_ROWS_PER_CALL = rows
            r0, t0 = resource.getrusage(resource.RUSAGE_SELF), time.perf_counter()
            out[name] = annotation.predict_probs(backbone, head, ids, context=context,
                                                 overlap=overlap, batch_size=4, workers=workers)
            wall = time.perf_counter() - t0
            r1 = resource.getrusage(resource.RUSAGE_SELF)
            cpu = r1.ru_utime - r0.ru_utime + r1.ru_stime - r0.ru_stime
            print(f"{name}\t{wall:.1f}\t{cpu:.1f}\t{r1.ru_stime - r0.ru_stime:.1f}\t"
                  f"{r1.ru_minflt - r0.ru_minflt}", flush=True)
    first = out[a.settings[0]]
    for name in a.settings[1:]:
        d = np.abs(out[name] - first)
        print(f"{name} vs {a.settings[0]}: max |dp| {d.max():.3f}, mean {d.mean():.1e}; argmax "
              f"agrees on {np.mean(first.argmax(1) == out[name].argmax(1)):.4f} of bases")


if __name__ == "__main__":
    main()
