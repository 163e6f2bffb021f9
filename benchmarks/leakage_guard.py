"""How long the leakage guard's held-out 32-mer index takes to build, now and as it was.

Every ``genoctx train`` process builds the index once (:func:`genoctx.io.dataroot._held_out_index`):
the canonical 32-mers of every record of the data root's validation and benchmark sequence
files (14.5 million on the shared data), which each training record's sampled 32-mers are
looked up in. Two settings alternate on the same records, read once:

* ``before`` (until 2026-12-07): one shift-and-OR pass per base (32 passes) over each file,
  then one stable ``argsort`` of all codes to carry the file each came from;
* ``now``: codes by doubling (:func:`genoctx.io.kmers.canonical_kmers`, 6 passes per strand on
  integers as narrow as each step allows) and one ``np.sort`` per file.

The two must give the same codes. Prints seconds per run and the fastest of each; ``--write``
puts the table in docs/benchmarks.md.

Run: ``python benchmarks/leakage_guard.py [--reps 3] [--write]``
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

_HERE = Path(__file__).resolve().parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != _HERE] + [str(_HERE)]

import numpy as np

from genoctx.io import dataroot


def held_out_records(root: Path) -> list[bytes]:
    """Each compared file's records joined by N, as the index reads them."""
    return [b"N".join(seq for _, seq in records)
            for _, _, records in dataroot.held_out_records(root)]


def codes_before(seq: bytes) -> tuple[np.ndarray, np.ndarray]:
    """The per-base loop the guard used (every start)."""
    code = dataroot._BASE_CODE[np.frombuffer(seq, np.uint8)]
    n = len(code) - dataroot.KMER + 1
    fwd, rev, two = np.zeros(n, np.uint64), np.zeros(n, np.uint64), np.uint64(2)
    for j in range(dataroot.KMER):
        fwd <<= two
        fwd |= code[j:j + n] & 3
        rev <<= two
        rev |= 3 - (code[dataroot.KMER - 1 - j:dataroot.KMER - 1 - j + n] & 3)
    bad = np.concatenate([[0], np.cumsum(code == 4)])
    np.minimum(fwd, rev, out=fwd)
    return fwd, bad[dataroot.KMER:dataroot.KMER + n] == bad[:n]


def index_before(files: list[bytes]):
    codes, owners = [], []
    for i, seq in enumerate(files):
        c, ok = codes_before(seq)
        codes.append(c[ok])
        owners.append(np.full(int(ok.sum()), i, np.int32))
    code, owner = np.concatenate(codes), np.concatenate(owners)
    order = np.argsort(code, kind="stable")
    return code[order], owner[order]


def index_now(files: list[bytes]) -> list[np.ndarray]:
    out = []
    for seq in files:
        c, ok = dataroot.kmer_codes(seq)
        out.append(np.sort(c[ok]))
    return out


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--write", action="store_true")
    a = ap.parse_args(argv)
    root = dataroot.resolve_data_root(None)
    t = time.perf_counter()
    files = held_out_records(root)
    read_s = time.perf_counter() - t
    walls: dict[str, list[float]] = {"before": [], "now": []}
    for _ in range(a.reps):
        for name, fn in (("before", index_before), ("now", index_now)):
            t = time.perf_counter()
            built = fn(files)
            walls[name].append(time.perf_counter() - t)
            print(f"{name}\t{walls[name][-1]:.2f} s", flush=True)
            if name == "before":
                old = built[0]
            else:
                new = np.sort(np.concatenate(built))
                assert np.array_equal(old, new), "the two indexes differ"
    n = len(old)
    print(f"{len(files)} files, {n:,} 32-mers; reading them {read_s:.2f} s; same codes")
    if a.write:
        from _report import md_table, section_head, write_section

        body = section_head("Leakage guard: building the held-out 32-mer index", __file__)
        body += (f"The {len(files)} validation and benchmark sequence files of the data root, "
                 f"{n:,} canonical 32-mers, read once ({read_s:.2f} s, not counted); the two "
                 "settings alternate (module docstring) and give the same codes.\n\n")
        body += md_table(["setting", "seconds per build", "fastest"],
                         [[k, " / ".join(f"{w:.2f}" for w in runs), f"{min(runs):.2f}"]
                          for k, runs in walls.items()])
        write_section("leakage_guard", body + "\n")


if __name__ == "__main__":
    main()
