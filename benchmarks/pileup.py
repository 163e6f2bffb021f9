"""Pileup tokenization speed against pysam's ``count_coverage`` alone (target: at most 2x).

Regions: the whole of CHROMOSOME_I (1,009,800 bp) of the C. elegans reads, converted to a sorted,
indexed BAM in a temporary folder, and 17:1-4,200 of the human mpileup.1.bam (deep, short).

Baseline: open the BAM, then ``count_coverage(quality_threshold=13, read_callback="all")`` —
pysam's fastest built-in read filter — which gives only the four base counts. Timed against it:
:func:`genoctx.io.bam.pileup_channels` (all 8 raw channels, reference check included) and
:func:`genoctx.tokenize.pileup.tokenize_pileup` (reference bases, tokens and normalised
channels). Each timing is the median of ``--repeats`` runs after one warm-up run.

    python benchmarks/pileup.py                 # prints the table and writes docs/benchmarks.md
    python benchmarks/pileup.py --no-write      # prints only
"""

from __future__ import annotations

import sys
from pathlib import Path

# Running a script puts its folder first on sys.path, where a benchmark named like a stdlib
# module (tokenize.py) would shadow it: drop the folder, load _report by its path instead.
_HERE = Path(__file__).resolve().parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != _HERE]

import argparse
import importlib.util
import os
import statistics
import tempfile
import time

import pysam

_spec = importlib.util.spec_from_file_location("_report", _HERE / "_report.py")
_report = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_report)
machine, md_table, write_section = _report.machine, _report.md_table, _report.write_section

from genoctx.io.bam import pileup_channels
from genoctx.io.dataroot import resolve_data_root
from genoctx.io.regions import Region
from genoctx.tokenize.pileup import tokenize_pileup

COMMAND = "python benchmarks/pileup.py"
TARGET = 2.0


def _median_ms(fn, repeats: int) -> float:
    fn()  # warm-up: page cache, index load, imports
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times) * 1e3


def _count_coverage(bam: Path, region: Region) -> None:
    with pysam.AlignmentFile(str(bam)) as af:
        af.count_coverage(region.contig, region.start, region.end, quality_threshold=13,
                          read_callback="all")


def _n_reads(bam: Path, region: Region) -> int:
    with pysam.AlignmentFile(str(bam)) as af:
        return af.count(region.contig, region.start, region.end)


def _cases(root: Path, tmp: Path) -> list[tuple[str, Path, Path, Region]]:
    reads = root / "reads"
    ce_bam = tmp / "ce.bam"
    pysam.sort("-o", str(ce_bam), str(reads / "celegans_chrI" / "ce#1000.sam"))
    pysam.index(str(ce_bam))
    mp = reads / "human_mpileup"
    return [("C. elegans CHROMOSOME_I (1,000 reads)", ce_bam, reads / "celegans_chrI" / "ce.fa",
             Region("CHROMOSOME_I", 0, 1_009_800)),
            ("human 17:1-4,200 (mpileup.1.bam)", mp / "mpileup.1.bam", mp / "mpileup.ref.fa",
             Region("17", 0, 4200))]


def run(data_root: str | None, repeats: int) -> str:
    """Time every case; return the markdown section."""
    root = resolve_data_root(data_root)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for name, bam, ref, region in _cases(root, Path(tmp)):
            base = _median_ms(lambda b=bam, r=region: _count_coverage(b, r), repeats)
            chan = _median_ms(lambda b=bam, r=region, f=ref: pileup_channels(b, r, f), repeats)
            tok = _median_ms(lambda b=bam, r=region, f=ref: tokenize_pileup(b, f, r), repeats)
            ratio = tok / base
            rows.append([name, f"{len(region):,}", f"{_n_reads(bam, region):,}", f"{base:.1f}",
                         f"{chan:.1f}", f"{tok:.1f}", f"{ratio:.2f}x",
                         "yes" if ratio <= TARGET else "**no**"])
            print(f"{name}: count_coverage {base:.1f} ms, pileup_channels {chan:.1f} ms, "
                  f"tokenize_pileup {tok:.1f} ms ({ratio:.2f}x)", flush=True)
    table = md_table(["region", "bp", "reads", "count_coverage ms", "pileup_channels ms",
                      "tokenize_pileup ms", "tokenize / count_coverage", f"<= {TARGET:g}x"],
                     rows)
    load = os.getloadavg()[0]  # other jobs on a shared machine slow both sides alike
    return (f"## Pileup tokenization\n\n`{COMMAND} --repeats {repeats}` on {machine()} "
            f"(1-minute load average {load:.1f} at the end of the run).\n\n"
            f"Median of {repeats} runs after a warm-up. Baseline: open the BAM + pysam "
            "`count_coverage(quality_threshold=13, read_callback=\"all\")` (four base counts "
            "only). `pileup_channels` computes all 8 raw channels (depth, A, C, G, T, del, mean "
            "base quality, forward-strand fraction) and checks the reference; "
            "`tokenize_pileup` adds the reference bases, tokens and normalised channels.\n\n"
            f"{table}\n")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-root", help="shared data folder (default: ../shared/data)")
    parser.add_argument("--repeats", type=int, default=7, help="timed runs per measurement")
    parser.add_argument("--no-write", action="store_true", help="do not update docs/benchmarks.md")
    args = parser.parse_args(argv)
    section = run(args.data_root, args.repeats)
    print(section)
    if not args.no_write:
        write_section("pileup", section)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
