"""FastaWindows and PileupWindows (genoctx.tokenize.dataset): how fast a genome's windows come
out of a DataLoader.

Run from the repository root (reads the shared data folder, writes copies to a temp folder and
the ``dataset_windows`` section of docs/benchmarks.md)::

    python benchmarks/dataset_windows.py            # --no-write to print only

For each file and setting: the time to build the dataset (index checks, labels) and to read
every item once through ``DataLoader(batch_size=8)`` with 0 and 2 worker processes (the
workers' start-up included), best of ``--reps`` wall-clock runs. Base throughput counts the
bases of every item (overlaps counted twice).
"""

from __future__ import annotations

import sys
from pathlib import Path

# benchmarks/tokenize.py shares its name with the standard library's `tokenize`: move this
# folder from the front of sys.path to the back before importing anything else.
_HERE = Path(__file__).resolve().parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != _HERE] + [str(_HERE)]

import argparse
import gzip
import shutil
import tempfile
import time

import pysam
from _report import machine, md_table, write_section
from torch.utils.data import DataLoader

from genoctx.io.dataroot import resolve_data_root
from genoctx.tokenize.dataset import FastaWindows, PileupWindows

COMMAND = "python benchmarks/dataset_windows.py"


def best(fn, reps: int) -> float:
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


def drain(ds, workers: int) -> int:
    n = 0
    for batch in DataLoader(ds, batch_size=8, num_workers=workers):
        n += int(batch["attention_mask"].sum())
    return n


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--no-write", action="store_true")
    args = ap.parse_args()
    root = resolve_data_root(None)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        ce = Path(tmp) / "ce.fa"
        shutil.copy(root / "reads/celegans_chrI/ce.fa", ce)
        pysam.faidx(str(ce))
        shutil.copy(ce, Path(tmp) / "ce_bgzf.fa")
        pysam.tabix_compress(str(Path(tmp) / "ce_bgzf.fa"), str(Path(tmp) / "ce_bgzf.fa.gz"))
        pysam.faidx(str(Path(tmp) / "ce_bgzf.fa.gz"))
        with open(ce, "rb") as src, gzip.open(Path(tmp) / "ce_gzip.fa.gz", "wb") as dst:
            shutil.copyfileobj(src, dst)
        ecoli = root / "genomes/bacteria/Escherichia_coli_K12_MG1655.gbff.gz"
        bam = Path(tmp) / "ce.bam"
        pysam.sort("-o", str(bam), str(root / "reads/celegans_chrI/ce#1000.sam"))
        pysam.index(str(bam))
        cases = [
            ("ce.fa (1.03 Mb, 5 records), plain + .fai", FastaWindows, (ce,), {}),
            ("the same, bgzip + .fai/.gzi", FastaWindows, (Path(tmp) / "ce_bgzf.fa.gz",), {}),
            ("the same, plain gzip (read into memory)", FastaWindows,
             (Path(tmp) / "ce_gzip.fa.gz",), {}),
            ("E. coli GenBank (4.64 Mb) with its labels", FastaWindows, (ecoli,),
             {"annotation": ecoli}),
            ("pileup: 1,000 reads on ce.fa (ce#1000.sam sorted)", PileupWindows, (bam, ce), {}),
        ]
        for name, cls, paths, extra in cases:
            for context, overlap, strand in ((8192, 256, "+"), (8192, 256, "both"),
                                             (1_048_576, 0, "+")):
                kw = dict(context=context, overlap=overlap, strand=strand, bos=True, **extra)
                build = best(lambda: cls(*paths, **kw), args.reps)  # noqa: B023
                ds = cls(*paths, **kw)
                bases = drain(ds, 0)
                row = [name, f"{context:,} / {overlap} / {strand}", len(ds), f"{build:.3f} s"]
                for workers in (0, 2):
                    t = best(lambda: drain(ds, workers), args.reps)  # noqa: B023
                    row += [f"{t:.3f} s ({bases / t / 1e6:.0f} Mb/s)"]
                rows.append(row)
                print(row, flush=True)
    body = (f"## dataset_windows — `FastaWindows` and `PileupWindows` through a DataLoader\n\nCommand: `{COMMAND}`\n\n"
            f"Machine: {machine()}\n\n"
            "Build = `FastaWindows(...)` (index checks; the GenBank's features and per-base labels); "
            "read = every item once through `DataLoader(batch_size=8, num_workers=N)`, worker "
            "start-up included; best of the runs in wall-clock time. Mb/s counts the bases of "
            "every item.\n\n"
            + md_table(["file", "context / overlap / strand", "items", "build",
                        "read, 0 workers", "read, 2 workers"], rows))
    print(body)
    if not args.no_write:
        write_section("dataset_windows", body)


if __name__ == "__main__":
    main()
