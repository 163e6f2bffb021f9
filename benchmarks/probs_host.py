"""What the annotation model's probabilities cost around the model: windows, softmax, the copy
to the host, stitching and the tracks, on a whole genome, with a model that costs nothing.

On a GPU the model's own time is small (E. coli's 4.6 Mb in about 2 s on one H200), so the
host side counts. Two settings alternate, each run in a fresh process (peak RSS is its own):

* ``full``: every base's 17 class probabilities copied off the model and stitched
  (``predict_probs``), the three tracks summed afterwards (what ``genoctx annotate`` did until
  2026-12-07);
* ``reduce``: the track classes summed window by window on the model's device
  (``predict_probs(..., reduce=...)``), three columns stitched (what it does now).

Both must give the same track bytes (checked). The stand-in model returns zeros of the real
shapes (8-wide embeddings, 17 logits), one torch thread, windows of 8,191 bases (two a
call: predict_probs caps a CPU call at 16,384 bases; a GPU takes 64).

Run: ``python benchmarks/probs_host.py [--genome NAME] [--reps 3] [--write]``
"""

from __future__ import annotations

import argparse
import hashlib
import json
import subprocess
import sys
from pathlib import Path

_HERE = Path(__file__).resolve().parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != _HERE] + [str(_HERE)]


def _worker(genome: str, mode: str) -> None:
    import resource
    import time

    import numpy as np
    import torch

    from genoctx.heads import annotation
    from genoctx.heads.annotate import TRACKS
    from genoctx.io.annotation import read_sequences_genbank
    from genoctx.io.dataroot import data_file
    from genoctx.tokenize import nucleotide as nt

    class Backbone:
        device = torch.device("cpu")

        def embed(self, tokens):
            return torch.zeros(tokens.shape[0], tokens.shape[1], 8)

    def head(emb):
        return torch.zeros(emb.shape[0], emb.shape[1], 17)

    torch.set_num_threads(1)
    records = read_sequences_genbank(data_file(f"genomes/bacteria/{genome}.gbff.gz"))
    ids = [nt.encode(seq) for _, seq in records]
    digest = hashlib.sha256()
    t0 = time.perf_counter()
    for x in ids:
        if mode == "full":
            p = annotation.predict_probs(Backbone(), head, x, batch_size=64, workers=1)
            tracks = [p[:, list(v)].sum(1) for v in TRACKS.values()]
        else:
            p = annotation.predict_probs(Backbone(), head, x, batch_size=64, workers=1,
                                         reduce=list(TRACKS.values()))
            tracks = [np.ascontiguousarray(p[:, j]) for j in range(len(TRACKS))]
        del p
        for t in tracks:
            digest.update(t.tobytes())
    seconds = time.perf_counter() - t0
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(json.dumps({"s": seconds, "mb": peak, "bases": int(sum(len(x) for x in ids)),
                      "digest": digest.hexdigest()[:16]}))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--genome", default="Escherichia_coli_K12_MG1655")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--write", action="store_true", help="write docs/benchmarks.md's section")
    ap.add_argument("--worker", nargs=2, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        _worker(*args.worker)
        return
    runs: dict[str, list[dict]] = {"full": [], "reduce": []}
    for _ in range(args.reps):
        for mode, done in runs.items():
            out = subprocess.run([sys.executable, __file__, "--worker", args.genome, mode],
                                 capture_output=True, text=True, check=True)
            done.append(json.loads(out.stdout.strip().splitlines()[-1]))
            print(mode, done[-1], flush=True)
    digests = {r["digest"] for rs in runs.values() for r in rs}
    if len(digests) != 1:
        raise SystemExit(f"the settings gave other tracks: {digests}")
    if args.write:
        from _report import md_table, section_head, write_section

        bases = runs["full"][0]["bases"]
        body = section_head("probs_host — the annotation model's probabilities around the model",
                            __file__)
        body += (f"Genome {args.genome} ({bases / 1e6:.2f} Mb, train role; only timed), a "
                 "stand-in model that costs nothing (zeros of the real shapes), 8,191-base "
                 "windows (2 a call: the CPU's cap; a GPU takes 64), one torch thread; each "
                 "run a fresh process, the settings alternating. `full`: all 17 class probabilities stitched, the tracks summed "
                 "after (annotate until 2026-12-07); `reduce`: the track classes summed window "
                 "by window on the model's device (`predict_probs(reduce=...)`, annotate now). "
                 "Both gave the same track bytes.\n\n")
        body += md_table(["setting", "seconds per run", "fastest", "peak RSS MB (max)"],
                         [[m, " / ".join(f"{r['s']:.2f}" for r in rs),
                           f"{min(r['s'] for r in rs):.2f}",
                           f"{max(r['mb'] for r in rs):.0f}"] for m, rs in runs.items()])
        write_section("probs_host", body + "\n")


if __name__ == "__main__":
    main()
