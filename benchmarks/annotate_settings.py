"""CPU time of the annotation model under two window settings, interleaved (A B A B …).

The shared CPU cores of a small machine vary by ±30% within minutes, so two settings are only
compared when their runs alternate. ``predict_probs`` (what ``genoctx annotate`` runs for the
probability tracks) is timed on the first ``--bases`` of E. coli K-12 (train role) with the
embedded checkpoint:

* ``before``: 8,192-base windows overlapping by 1,024, four windows per model call (the
  defaults up to this change; the per-call cap switched off);
* ``after``: overlap 256, and at most ``CPU_BASES_PER_CALL`` bases per call on CPU (two windows).

Prints wall seconds and process CPU seconds (user + system, both cores) per run, the minor
page faults, and the largest difference between the two settings' probabilities.

Run: ``python benchmarks/annotate_settings.py [--bases 250000] [--reps 3]``
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
from genoctx.tokenize import nucleotide as nt

SETTINGS = {"before": (1024, 10**9), "after": (256, annotation.CPU_BASES_PER_CALL)}


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
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
    print("setting\toverlap\tbases_per_call\twall_s\tcpu_s\tminor_faults")
    out = {}
    for _ in range(a.reps):
        for name, (overlap, cap) in SETTINGS.items():
            annotation.CPU_BASES_PER_CALL = cap
            r0, t0 = resource.getrusage(resource.RUSAGE_SELF), time.perf_counter()
            out[name] = annotation.predict_probs(backbone, head, ids, overlap=overlap, batch_size=4)
            wall = time.perf_counter() - t0
            r1 = resource.getrusage(resource.RUSAGE_SELF)
            cpu = r1.ru_utime - r0.ru_utime + r1.ru_stime - r0.ru_stime
            print(f"{name}\t{overlap}\t{min(cap, 4 * 8192)}\t{wall:.1f}\t{cpu:.1f}\t"
                  f"{r1.ru_minflt - r0.ru_minflt}", flush=True)
    d = np.abs(out["before"] - out["after"])
    print(f"probabilities: max |before - after| {d.max():.3f}, mean {d.mean():.1e}; argmax agrees "
          f"on {np.mean(out['before'].argmax(1) == out['after'].argmax(1)):.4f} of bases")


if __name__ == "__main__":
    main()
