"""What the RNA-gene finders cost on one core and on several: barrnap's single nhmmer call
against genoctx's searches side by side.

``pybarrnap.Barrnap`` hands every stretch to one nhmmer call, which runs one search per profile
(5S, 16S, 23S), so the 23S search over all of a genome's rRNA operons bounds its time however
many cores there are. ``genoctx.heads.rna_genes.find_rrna`` runs one search per (profile,
stretch) pair, ``threads`` at a time, each given the database size of all stretches, and
``find_rna_genes`` runs ARAGORN (tRNA, tmRNA) beside them. For each genome (every bacterial
genome of the data root by default; nothing is fitted, calls are only compared) this times,
in turn and ``--repeats`` times (the minimum is kept):

* ``barrnap 1 call``: ``pybarrnap.Barrnap`` over the prefilter's stretches, with the E-value
  cutoff scaled by the share searched and nhmmer on ``min(4, cores)`` threads — what
  ``find_rrna`` ran before the searches were split;
* ``find_rrna`` at 1 thread and at ``--threads`` (default: every core this process may use);
* ``find_trna`` (ARAGORN, one thread) and ``find_rna_genes`` (both finders) at 1 and
  ``--threads`` threads;
* each of ``find_rrna``'s nhmmer searches on its own (1 thread): the longest bounds its wall time
  however many cores there are, as the 23S searches together bound barrnap's single call;

and checks that every rRNA call (contig, start, end, strand, product, partial flag) is the same
in all of them.

Run: ``python benchmarks/rna_threads.py [--threads N] [--repeats 3] [--no-write] [GENOME ...]``
(writes the ``rna-threads`` section of docs/benchmarks.md; exits 1 when any call differs).
"""

from __future__ import annotations

import sys
from pathlib import Path

# Put this folder last on the path: a sibling script named like a stdlib module (tokenize.py)
# must not shadow the standard library.
_HERE = Path(__file__).resolve().parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != _HERE] + [str(_HERE)]

import argparse
import os
import time

from rrna_prefilter import _key, genomes


def barrnap_one_call(records):
    """rRNA calls of ``pybarrnap.Barrnap`` run once over the prefilter's stretches (the
    E-value cutoff scaled by the share searched), keyed as :func:`rrna_prefilter._key`."""
    import pybarrnap
    from Bio.Seq import Seq
    from Bio.SeqRecord import SeqRecord

    from genoctx.heads.rna_genes import RRNA_EVALUE, RRNA_PRODUCTS, finder_sequence, rrna_regions

    kept = [(c, finder_sequence(s)) for c, s in records if s]
    spans = rrna_regions(kept)
    if not spans:
        return []
    seqs = [SeqRecord(Seq(kept[i][1][lo:hi].decode("ascii")), id=f"r{i}_{lo}", name=f"r{i}_{lo}")
            for i, lo, hi in spans]
    share = sum(hi - lo for _, lo, hi in spans) / sum(len(s) for _, s in kept)
    gff = pybarrnap.Barrnap(seqs, kingdom="bac", threads=max(1, min(4, os.cpu_count() or 1)),
                            quiet=True, evalue=RRNA_EVALUE * share).run().get_gff_text()
    out = []
    for line in gff.splitlines():
        col = line.split("\t")
        if line.startswith("#") or len(col) != 9 or col[2] != "rRNA":
            continue
        attrs = dict(kv.split("=", 1) for kv in col[8].split(";") if "=" in kv)
        i, lo = map(int, col[0][1:].split("_"))
        out.append((kept[i][0], lo + int(col[3]) - 1, lo + int(col[4]),
                    1 if col[6] == "+" else -1, RRNA_PRODUCTS.get(attrs["Name"]),
                    "true" if "Note" in attrs else None))
    return sorted(out)


def search_times(records) -> list[tuple[str, float]]:
    """(profile, wall s) of each nhmmer search ``find_rrna`` runs, one after another (1 thread):
    the longest bounds its wall time on any number of cores, as the 23S searches together
    bound barrnap's single call."""
    import pyhmmer

    from genoctx.heads.rna_genes import RRNA_5S_EVALUE, find_rrna

    real, times = pyhmmer.nhmmer, []

    def timed(queries, *args, **kwargs):
        queries = list(queries)
        t = time.perf_counter()
        out = list(real(queries, *args, **kwargs))
        if kwargs.get("E") == RRNA_5S_EVALUE:  # the prefilter's 5S scan, before the searches
            return iter(out)
        times.append((queries[0].name.decode() if isinstance(queries[0].name, bytes)
                      else queries[0].name, time.perf_counter() - t))
        return iter(out)

    pyhmmer.nhmmer = timed
    try:
        find_rrna(records, threads=1)
    finally:
        pyhmmer.nhmmer = real
    return times


def _runs(records, threads: int) -> dict:
    """The timed runs of one genome, by name: each returns its rRNA calls (ARAGORN: its tRNAs)."""
    from genoctx.heads.rna_genes import find_rna_genes, find_rrna, find_trna

    def rrna_of(calls):
        return _key(r for r in calls if r.kind == "rRNA")

    return {
        "barrnap 1 call": lambda: barrnap_one_call(records),
        "find_rrna 1": lambda: _key(find_rrna(records, threads=1)),
        f"find_rrna {threads}": lambda: _key(find_rrna(records, threads=threads)),
        "find_trna": lambda: find_trna(records),
        "both 1": lambda: rrna_of(find_rna_genes(records, threads=1)),
        f"both {threads}": lambda: rrna_of(find_rna_genes(records, threads=threads)),
    }


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("genomes", nargs="*", help="genome names (default: every bacterial genome)")
    ap.add_argument("--threads", type=int, default=0, help="threads of the parallel runs "
                    "(default 0: every core this process may use)")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--data-root", default=None)
    ap.add_argument("--no-write", action="store_true")
    args = ap.parse_args(argv)

    from _report import md_table, section_head, write_section

    from genoctx.cli.common import available_cores
    from genoctx.io.dataroot import load_manifest, resolve_data_root

    threads = args.threads or available_cores()
    root = resolve_data_root(args.data_root)
    manifest = load_manifest(root)
    rows, differ = [], 0
    for name, role, records in genomes(root, manifest, set(args.genomes)):
        runs = _runs(records, threads)
        best = {k: float("inf") for k in runs}
        calls = {}
        for r in range(args.repeats):
            for k in (list(runs) if r % 2 == 0 else list(runs)[::-1]):
                t = time.perf_counter()
                got = runs[k]()
                best[k] = min(best[k], time.perf_counter() - t)
                if k != "find_trna":
                    calls.setdefault(k, got)
        searches = search_times(records)
        longest = max((t for _, t in searches), default=0.0)
        lsu = sum(t for name, t in searches if name.startswith("23S"))
        same = len({repr(v) for v in calls.values()}) == 1
        differ += not same
        rr = best["barrnap 1 call"] / best[f"find_rrna {threads}"]
        rows.append([name, role, f"{sum(len(s) for _, s in records) / 1e6:.2f}",
                     len(calls["find_rrna 1"]), *(f"{best[k]:.2f}" for k in runs),
                     f"{rr:.2f}×", len(searches), f"{longest:.2f}", f"{lsu:.2f}",
                     "yes" if same else "**no**"])
        print("\t".join(map(str, rows[-1])), flush=True)
    heads = ["genome", "role", "Mb", "rRNA genes", "barrnap, 1 call s",
             "find_rrna s (1 thread)", f"find_rrna s ({threads} threads)", "find_trna s",
             "both finders s (1 thread)", f"both finders s ({threads} threads)",
             "rRNA speed-up vs barrnap 1 call", "searches", "longest search s",
             "23S searches in all s", "same rRNA calls"]
    table = md_table(heads, rows)
    print(table)
    if not args.no_write:
        write_section("rna-threads", (
            section_head("RNA-gene finders on one core and on several", __file__, argv)
            + f"Cores this process may use: {available_cores()}; parallel runs on {threads} "
            "threads. `barrnap, 1 call`: `pybarrnap.Barrnap` over the prefilter's stretches in "
            "one nhmmer call (one search per profile; nhmmer on min(4, cores) threads), as "
            "`find_rrna` ran before. `find_rrna`: one nhmmer search per (profile, stretch), each "
            "given the database size of all stretches, run side by side. `both finders`: "
            "`find_rna_genes` (ARAGORN in a thread beside the rRNA searches unless on 1 "
            "thread). `searches`: the (profile, stretch) searches of `find_rrna`; `longest "
            "search`, timed one after another: what bounds `find_rrna`'s wall time on any "
            "number of cores; `23S searches in all`: what bounds barrnap's single call (one "
            "search per profile) on any number of cores. Wall seconds, the minimum of "
            f"{args.repeats} runs, alternating. rRNA calls compared on contig, start, end, "
            "strand, product and partial flag.\n\n" + table + "\n\n"
            + ("Every genome: the same rRNA calls in every run." if not differ else
               f"**{differ} genome(s) differ.**") + "\n"))
    if differ:
        sys.exit(1)


if __name__ == "__main__":
    main()
