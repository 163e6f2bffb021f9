"""``GenoCtxModel.embed`` on CPU: both strands in one batch vs in two worker threads, alternating.

The shared cores' speed drifts, so the ways are compared in alternating rounds: one batch over
torch's 2 intra-op threads (``workers=1``), the two strands in two worker threads of one core
each (``workers=2``, the default on CPU), and one batch on one thread. Embedded checkpoint,
random bases (speed only), segments of 16,384 tokens.

Run: ``python benchmarks/embed_workers.py [--tokens 131072] [--reps 2]``
"""

from __future__ import annotations

# The path fix comes before any import that pulls in the standard library's tokenize.
import sys
from pathlib import Path

_HERE = Path(__file__).resolve().parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != _HERE] + [str(_HERE)]

import argparse
import time

import torch

from genoctx.model.model import GenoCtxModel

WAYS = (("one batch, 2 threads", 2, 1), ("two workers, 1 thread each", 2, 2),
        ("one batch, 1 thread", 1, 1))


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tokens", type=int, default=131_072)
    ap.add_argument("--reps", type=int, default=2)
    a = ap.parse_args(argv)
    torch.set_flush_denormal(True)
    model = GenoCtxModel.from_pretrained("embedded")
    x = torch.randint(0, 4, (1, a.tokens), generator=torch.Generator().manual_seed(0))
    model.embed(x[:, :16_384])  # warm up
    print("way\tthreads\tworkers\twall_s")
    for _ in range(a.reps):
        for name, threads, workers in WAYS:
            torch.set_num_threads(threads)
            t0 = time.perf_counter()
            model.embed(x, segment_len=16_384, workers=workers)
            print(f"{name}\t{threads}\t{workers}\t{time.perf_counter() - t0:.1f}", flush=True)


if __name__ == "__main__":
    main()
