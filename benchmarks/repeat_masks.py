"""What the eukaryote decoder's repeat masks cost: time and peak memory against input size.

``genoctx.heads.repeats.repeat_masks`` counts every canonical 16-mer of all records decoded
together. Its input here is real sequence: the records of one train genome per bacterial species
(strains of one species would share most 16-mers) and then the train eukaryote chunks, taken in
that order until each size is reached (IS elements and rRNA operons give real repeats; the masks
are not scored, only timed). Each size runs in a fresh process that loads the base codes
from a ``.npy`` file, so the peak RSS is the input, the masks and what ``repeat_masks`` holds.
``--code DIR`` runs another checkout's ``repeat_masks`` instead (a ``git worktree`` of an older
commit) and checks nothing else; ``--max-bytes N`` passes that bound on the k-mer ids held at
once in one more run at the largest size.

Run: ``python benchmarks/repeat_masks.py [--sizes 5 10 30] [--code DIR] [--max-bytes N] [--no-write]`` (sizes in
Mb; writes the ``repeat-masks`` section of docs/benchmarks.md).
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

from genoctx.heads.orfs import encode
from genoctx.io.dataroot import load_manifest, resolve_data_root
from genoctx.io.annotation import read_sequences

_CHILD = """
import json, resource, sys, time
import numpy as np
if sys.argv[2]:
    sys.path.insert(0, sys.argv[2])
from genoctx.heads.repeats import repeat_masks
x = np.load(sys.argv[1])
t = time.perf_counter()
kw = {"max_bytes": int(sys.argv[3])} if sys.argv[3] else {}
m, = repeat_masks([x], **kw)
dt = time.perf_counter() - t
print(json.dumps({"s": dt, "rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
                  "masked": float(m.mean())}))
"""


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data-root", default=None)
    ap.add_argument("--sizes", type=float, nargs="+", default=[5, 10, 30])
    ap.add_argument("--code", default="", help="another checkout's folder holding genoctx/")
    ap.add_argument("--max-bytes", default="")
    ap.add_argument("--no-write", action="store_true")
    args = ap.parse_args(argv)
    root = resolve_data_root(args.data_root)
    manifest = load_manifest(root)
    seqs, total, species = [], 0, set()
    want = int(max(args.sizes) * 1e6)
    for rel, entry in manifest.items():
        name = Path(rel).name.split(".gbff")[0]
        kind = rel.split("/")[1] if rel.startswith("genomes/") else ""
        if entry.role != "train" or total >= want:
            continue
        if kind == "bacteria" and tuple(name.split("_")[:2]) not in species:
            species.add(tuple(name.split("_")[:2]))
        elif not (kind == "eukaryote_chunks" and rel.endswith(".fa.gz")):
            continue
        records = [s for _, s in read_sequences(root / rel)]
        for s in records:
            seqs.append(encode(s.decode()))
            total += len(s)
    every = np.concatenate(seqs)
    runs = [(mb, "") for mb in args.sizes] + ([(max(args.sizes), args.max_bytes)]
                                              if args.max_bytes else [])
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for mb, bound in runs:
            n = min(int(mb * 1e6), len(every))
            path = Path(tmp) / "x.npy"
            np.save(path, every[:n])
            out = subprocess.run([sys.executable, "-c", _CHILD, str(path), args.code, bound],
                                 check=True, capture_output=True, text=True).stdout
            r = json.loads(out)
            rows.append([f"{n / 1e6:.1f}", f"{int(bound) / 2**20:.0f}" if bound else "default",
                         f"{r['s']:.1f}", f"{r['rss_mb']:.0f}", f"{r['rss_mb'] * 2**20 / n:.1f}",
                         f"{r['masked']:.3f}"])
            print("\t".join(rows[-1]), flush=True)
    table = md_table(["input (Mb)", "max_bytes (MiB)", "wall (s)", "peak RSS (MiB)", "bytes per base",
                      "masked share"], rows)
    if args.no_write:
        print(table)
        return
    body = section_head("repeat_masks — the eukaryote decoder's repeat masks, time and memory",
                        __file__, argv) + (
        "One fresh process per size. The input: one train genome per bacterial species, then "
        "the train eukaryote chunks, cut to the size (25.3 Mb in all). Peak RSS includes the "
        "interpreter, numpy, the input codes (1 byte per base) and the masks (1 byte per base)."
        "\n\n" + table + "\n")
    write_section("repeat-masks", body)


if __name__ == "__main__":
    main()
