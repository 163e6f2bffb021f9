"""Does barrnap find the same rRNA genes in the prefilter's stretches as in the whole input?

For every bacterial genome of the data root that genoctx may read (train, validation and
pretrain-only roles; nothing is fitted, the genes are compared with themselves), and for each
of them cut into 10-kb contigs (draft assemblies, metagenomic bins), this runs
``genoctx.heads.rna_genes.find_rrna`` twice: with the prefilter (what ``genoctx annotate`` runs)
and with ``prefilter=False`` (barrnap over every base), and compares the calls (contig, start,
end, strand, product, partial flag). The two alternate, so both see the same load. Times are
wall seconds of one call, with nhmmer on the threads ``find_rrna`` gives it.

Run: ``python benchmarks/rrna_prefilter.py [--fragment 10000] [--no-write] [GENOME ...]``
(writes the ``rrna-prefilter`` section of docs/benchmarks.md; exits 1 when any call differs).
"""

from __future__ import annotations

import sys
from pathlib import Path

# Put this folder last on the path: a sibling script named like a stdlib module (tokenize.py)
# must not shadow the standard library.
_HERE = Path(__file__).resolve().parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != _HERE] + [str(_HERE)]

import argparse
import time

ROLES = ("train", "validation", "pretrain-only")


def genomes(root, manifest, names):
    """(name, role, records) of the bacterial genomes of ``ROLES`` (all, or those named)."""
    from genoctx.io.annotation import read_sequences_genbank
    from genoctx.io.fasta import iter_records

    for rel, entry in sorted(manifest.items()):
        if entry.role not in ROLES or not rel.startswith(("genomes/bacteria/", "genomes/unannotated/")):
            continue
        name = Path(rel).name.split(".gbff")[0].split(".fna")[0]
        if names and name not in names:
            continue
        read = read_sequences_genbank if ".gbff" in rel else iter_records
        yield name, entry.role, [(c, s) for c, s in read(root / rel) if s]


def _key(calls):
    return sorted((r.contig, r.start, r.end, r.strand, r.attrs.get("product"),
                   r.attrs.get("partial")) for r in calls)


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("genomes", nargs="*", help="genome names (default: all of ROLES)")
    ap.add_argument("--fragment", type=int, default=10_000, help="contig size of the cut case")
    ap.add_argument("--data-root", default=None)
    ap.add_argument("--no-write", action="store_true")
    args = ap.parse_args(argv)

    from _report import md_table, section_head, write_section

    from genoctx.heads.rna_genes import find_rrna, finder_sequence, rrna_regions
    from genoctx.io.dataroot import load_manifest, resolve_data_root

    root = resolve_data_root(args.data_root)
    manifest = load_manifest(root)
    rows, differ = [], 0
    for name, role, records in genomes(root, manifest, set(args.genomes)):
        cut = [(f"{c}_{a}", s[a:a + args.fragment]) for c, s in records
               for a in range(0, len(s), args.fragment)]
        for case, recs in (("whole", records), (f"{args.fragment // 1000}-kb contigs", cut)):
            times = {}
            calls = {}
            for flag in ((True, False) if len(rows) % 2 == 0 else (False, True)):
                t = time.perf_counter()
                calls[flag] = _key(find_rrna(recs, prefilter=flag))
                times[flag] = time.perf_counter() - t
            spans = rrna_regions([(c, finder_sequence(s)) for c, s in recs])
            same = calls[True] == calls[False]
            differ += not same
            bases = sum(len(s) for _, s in recs)
            rows.append([name, role, case, len(recs), f"{bases / 1e6:.2f}", len(calls[False]),
                         sum(1 for c in calls[False] if c[5]),
                         f"{sum(h - lo for _, lo, h in spans) / bases:.3f}",
                         f"{times[False]:.1f}", f"{times[True]:.1f}",
                         "yes" if same else "**no**"])
            print("\t".join(map(str, rows[-1])), flush=True)
    table = md_table(["genome", "role", "case", "records", "Mb", "rRNA genes", "partial",
                      "share searched", "barrnap s (every base)", "s (prefilter)", "same calls"],
                     rows)
    print(table)
    if not args.no_write:
        write_section("rrna-prefilter", (
            section_head("rRNA genes: barrnap over the prefilter's stretches against every "
                         "base", __file__, argv)
            + "`find_rrna` with its prefilter (clusters of 12-mers shared with the 16S/23S "
            "profile consensus, and 5S profile hits at E ≤ 10, each widened by 8 kb; the E-value "
            "cutoff scaled by the share searched) against `prefilter=False` (barrnap over every "
            "base), alternating. Calls compared on contig, start, end, strand, product and "
            "partial flag. `partial`: genes barrnap marks aligned only in part (the cut case "
            "has genes cut by contig ends). Times are one call's wall seconds (nhmmer on 2 "
            "threads).\n\n" + table + "\n\n"
            + ("Every case: the same calls." if not differ else
               f"**{differ} case(s) differ.**") + "\n"))
    if differ:
        sys.exit(1)


if __name__ == "__main__":
    main()
