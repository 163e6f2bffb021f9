"""What eukaryote mode's spliced decoder costs on one long record: time and peak memory, whole
or a window at a time.

The records of the train eukaryote chunks (A. thaliana, D. melanogaster) are joined, with their
annotation head's probabilities (cached by ``eukaryote_train_chunks.py``, computed there on first
use), into one record of about 2.7 Mb: longer than the decoder's default window of 2 Mb, as a
chromosome is. Each setting runs ``spliced_decoder.decode_many`` in a fresh process that loads
the record and its probabilities (float32 ``[L, 17]``, 68 bytes per base) from a ``.npz`` file;
the peak RSS includes them. Genes are not scored (the chunks are train data); the table counts
the calls of each setting that a decode of the whole record makes too (same strand and CDS).

Run: ``python benchmarks/spliced_decode.py [--windows 0 2000000 500000] [--overlap 200000]
[--no-write] [--profile]`` (window 0: the whole record at once; writes the ``spliced-decode``
section of docs/benchmarks.md; ``--profile``: instead, the whole-record decode once in this
process under cProfile, its 15 costliest functions by own time, nothing written).
"""

from __future__ import annotations

import sys
from pathlib import Path

_HERE = Path(__file__).resolve().parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != _HERE] + [str(_HERE)]

import argparse
import json
import subprocess
import tempfile

import numpy as np
from _report import md_table, section_head, write_section
from eukaryote_train_chunks import CHUNKS, head_probs, load

from genoctx.io.dataroot import load_manifest, resolve_data_root

_CHILD = """
import json, resource, sys, time
import numpy as np
from genoctx.heads import spliced_decoder as sd
with np.load(sys.argv[1]) as d:
    seq, probs = bytes(d["seq"]), d["probs"].astype(np.float32)
p = sd.DecoderParams(window=int(sys.argv[2]), window_overlap=int(sys.argv[3]))
t = time.perf_counter()
genes = sd.decode_many([("joined", seq)], {"joined": probs}, params=p)
dt = time.perf_counter() - t
print(json.dumps({"s": dt, "rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
                  "genes": [[g.strand, g.cds] for g in genes]}))
"""


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data-root", default=None)
    ap.add_argument("--model", default="embedded")
    ap.add_argument("--windows", type=int, nargs="+", default=[0, 2_000_000, 500_000])
    ap.add_argument("--overlap", type=int, default=200_000)
    ap.add_argument("--no-write", action="store_true")
    ap.add_argument("--profile", action="store_true")
    args = ap.parse_args(argv)
    root = resolve_data_root(args.data_root)
    manifest = load_manifest(root)
    seqs, probs = [], []
    for species in CHUNKS:
        ds = load(root, species, manifest)
        hp = head_probs(ds, args.model)
        for contig, s in ds.records:
            seqs.append(s)
            probs.append(hp[contig].astype(np.float16))
    seq = b"".join(s if isinstance(s, bytes) else s.encode() for s in seqs)
    if args.profile:
        import cProfile
        import pstats

        from genoctx.heads import spliced_decoder as sd

        joined = {"joined": np.concatenate(probs).astype(np.float32)}
        with cProfile.Profile() as prof:
            sd.decode_many([("joined", seq)], joined, params=sd.DecoderParams(window=0))
        pstats.Stats(prof).sort_stats("tottime").print_stats(15)
        return
    rows, whole = [], None
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "joined.npz"
        np.savez(path, seq=np.frombuffer(seq, dtype=np.uint8), probs=np.concatenate(probs))
        for w in sorted(args.windows):  # 0 first: the whole decode the others are held to
            out = subprocess.run([sys.executable, "-c", _CHILD, str(path), str(w),
                                  str(args.overlap)], check=True, capture_output=True,
                                 text=True).stdout
            r = json.loads(out)
            genes = {(g[0], tuple(map(tuple, g[1]))) for g in r["genes"]}
            whole = genes if whole is None else whole
            rows.append([f"{w:,}" if w else "whole record", f"{args.overlap:,}" if w else "—",
                         f"{r['s']:.1f}", f"{r['rss_mb']:.0f}", len(genes),
                         len(genes & whole)])
            print("\t".join(map(str, rows[-1])), flush=True)
    table = md_table(["window (bp)", "overlap (bp)", "wall (s)", "peak RSS (MiB)", "calls",
                      "calls of the whole decode"], rows)
    if args.no_write:
        print(table)
        return
    body = section_head("spliced_decode — eukaryote mode's decoder on one 2.7-Mb record, whole "
                        "or in windows", __file__, argv) + (
        f"The train eukaryote chunks joined into one record of {len(seq) / 1e6:.2f} Mb with the "
        "shipped head's probabilities; one fresh process per setting. Peak RSS includes the "
        "probabilities (68 bytes per base).\n\n" + table + "\n")
    write_section("spliced-decode", body)


if __name__ == "__main__":
    main()
