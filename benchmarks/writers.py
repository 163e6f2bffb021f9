"""Track writers: bedGraph and bigWig of one 1-Mb per-base probability track, and the three
bedGraph tracks of a genome-sized ``genoctx annotate`` result in one and in two processes.

A noisy track (uniform random values, 3 decimals kept) is the worst case: almost every base is
its own run, as with the annotation head's tracks. The annotate rows write the three tracks of
one ``--genome-bases`` record (E. coli's 4,641,652 by default) through ``write_annotation``,
with ``workers=1`` and ``workers=2`` (the track files in spawned processes), and check that the
bytes agree. Prints and writes the ``writers`` section of docs/benchmarks.md.

Run: ``python benchmarks/writers.py [--bases N] [--genome-bases N] [--repeat R] [--no-write]``
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

# Put this folder last on the path: a sibling script named like a stdlib module (tokenize.py)
# must not shadow the standard library.
_HERE = Path(__file__).resolve().parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != _HERE] + [str(_HERE)]

import argparse
import tempfile
import time

import numpy as np
from _report import machine, md_table, write_section

from genoctx.io.writers import write_bedgraph, write_bigwig


def best_of(fn, path: Path, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn(path)
        times.append(time.perf_counter() - t0)
    return min(times)


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bases", type=int, default=1_000_000)
    ap.add_argument("--genome-bases", type=int, default=4_641_652,
                    help="record length of the write_annotation rows (0: skip them)")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--no-write", action="store_true", help="print only; leave docs alone")
    args = ap.parse_args(argv)
    track = np.random.default_rng(0).random(args.bases).astype(np.float32)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for name, path, fn in (
            ("bedGraph", Path(tmp) / "t.bedgraph",
             lambda p: write_bedgraph(p, track, "chr", name="t")),
            ("bigWig", Path(tmp) / "t.bw",
             lambda p: write_bigwig(p, [("chr", 0, track)], {"chr": args.bases})),
        ):
            sec = best_of(fn, path, args.repeat)
            size = os.path.getsize(path) / 1e6
            rows.append([name, f"{args.bases:,}", f"{sec:.2f}", f"{size:.1f}"])
            print("\t".join(rows[-1]), flush=True)
        if args.genome_bases:
            rows += _annotate_rows(Path(tmp), args.genome_bases, args.repeat)
    body = ("## writers — one per-base track to bedGraph / bigWig\n\n"
            "Command: `python benchmarks/writers.py`\n\n"
            f"Machine: {machine()}\n\n"
            "Uniform random values (3 decimals kept: nearly every base its own run); best of "
            f"{args.repeat}. The write_annotation rows write the three bedGraph tracks "
            "(CDS_plus, CDS_minus, RNA) of one record, as `genoctx annotate` does with its "
            "default formats; their MB is the three files together.\n\n"
            + md_table(["format", "bases", "seconds", "MB"], rows))
    if not args.no_write:
        write_section("writers", body)


def _annotate_rows(tmp: Path, n: int, repeat: int) -> list[list[str]]:
    """write_annotation of three random bedGraph tracks of one n-base record, 1 and 2 workers."""
    from genoctx.heads.annotate import TRACKS, Annotation, write_annotation
    from genoctx.io.regions import Region

    rng = np.random.default_rng(1)
    tracks = {0: {name: rng.random(n).astype(np.float32) for name in TRACKS}}
    result = Annotation([], [], [Region("chr", 0, n)], {"chr": n}, tracks)
    rows, outputs = [], []
    for workers in (1, 2):
        prefix = tmp / f"w{workers}"
        sec = best_of(lambda p: write_annotation(p, result, ("bedgraph",), workers=workers),
                      prefix, repeat)
        paths = sorted(tmp.glob(f"w{workers}.*.bedgraph"))
        outputs.append([p.read_bytes() for p in paths])
        size = sum(p.stat().st_size for p in paths) / 1e6
        rows.append([f"write_annotation, 3 bedGraph tracks, {workers} process"
                     + ("es" if workers > 1 else ""), f"{n:,}", f"{sec:.2f}", f"{size:.1f}"])
        print("\t".join(rows[-1]), flush=True)
    if outputs[0] != outputs[1]:
        raise SystemExit("write_annotation wrote different bytes with 2 workers")
    return rows


if __name__ == "__main__":
    main()
