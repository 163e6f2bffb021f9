"""Sharded annotation of unseen archaea: each shard naming its domain alone, or the genome's.

The Snakemake workflow (pipelines/annotate-and-score) cuts a long sequence into shards and runs
``genoctx annotate`` on each. ``genoctx annotate`` decodes an archaeon without the ORF scorer
(fitted on bacteria) when the complete 16S/23S genes it finds say so; a shard without one
would be decoded as a bacterium's. Since 2026-12-07 the workflow names the domain once from the
whole genome (rule ``sample_domain``) and gives it to every shard (``--domain``). This script
measures what that changes, on the genomes of ``genecall_curated_unseen.py`` (four archaea of
four orders, and Bradyrhizobium japonicum, a bacterium, as a control), none of them in the data
root:

* the shards are the workflow's (``plan_shards.plan``: a record longer than ``--shard-bases``
  is cut into equal chunks, each widened by ``--overlap`` bases on both sides);
* each shard's genes are ``call_bacterial`` on its pieces (as ``genoctx annotate --model none
  --regions SHARD.bed``), with ``domain="auto"`` (each shard on its own, as before) or the
  whole genome's domain (``sample_domain.py``), then merged as ``merge_annotation.py`` does:
  a gene is kept from the shard whose core holds its 3' end;
* scored against the genome's annotation: match = contig + strand + stop.

Run: ``python benchmarks/genecall_shard_domain.py [--cache DIR] [--shard-bases N ...]
[--genomes NAME ...] [--no-write]`` (writes the ``genecall-shard-domain`` section of
docs/benchmarks.md).
"""

from __future__ import annotations

import sys
from pathlib import Path

# Put this folder last on the path: a sibling script named like a stdlib module (tokenize.py)
# must not shadow the standard library.
_HERE = Path(__file__).resolve().parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != _HERE] + [str(_HERE)]

import argparse
import dataclasses
import importlib.util
import time

from _report import md_table, section_head, write_section
from genecall_curated_unseen import GENOMES, curated_genomes

from genoctx.eval.metrics import gene_metrics
from genoctx.heads.annotate import call_bacterial
from genoctx.heads.rna_genes import find_rrna, rrna_domain

SCRIPTS = _HERE.parent / "pipelines" / "annotate-and-score" / "workflow" / "scripts"


def _plan():
    spec = importlib.util.spec_from_file_location("plan_shards", SCRIPTS / "plan_shards.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.plan


def three_prime(g) -> int:
    return g.end - 1 if g.strand > 0 else g.start


def sharded_calls(records, shards, domain: str):
    """Genes of every shard, merged by cores; and the domain each shard named (auto only)."""
    seqs = dict(records)
    merged, named = [], []
    for shard in shards:
        pieces = {f"{p.contig}:{p.start}-{p.end}": p for p in shard}
        recs = [(name, seqs[p.contig][p.start:p.end]) for name, p in pieces.items()]
        genes, rnas = call_bacterial(recs, domain=domain)
        named.append(rrna_domain(rnas or []) or "none")
        for g in genes:
            p = pieces[g.contig]
            if p.core_start <= three_prime(g) + p.start < p.core_end:
                merged.append(dataclasses.replace(g, contig=p.contig, start=g.start + p.start,
                                                  end=g.end + p.start))
    return merged, named


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cache", default="results/unseen", help="where the packages are kept")
    ap.add_argument("--shard-bases", type=int, nargs="+", default=[2_000_000, 1_000_000],
                    help="the workflow's annotate.shard_bases (default 2 Mb), one run each")
    ap.add_argument("--overlap", type=int, default=20_000, help="annotate.chunk_overlap")
    ap.add_argument("--genomes", nargs="*", default=[g[0] for g in GENOMES])
    ap.add_argument("--no-write", action="store_true", help="print only; leave docs alone")
    args = ap.parse_args(argv)
    plan = _plan()
    rows = []
    for name, domain, _, records, truth in curated_genomes(Path(args.cache), args.genomes):
        t0 = time.perf_counter()
        whole = rrna_domain(find_rrna(records)) or "auto"
        search_s = time.perf_counter() - t0
        for shard_bases in args.shard_bases:
            shards = plan({c: len(s) for c, s in records}, shard_bases, 200_000, args.overlap)
            if len(shards) < 2:
                continue
            cells = []
            for given in ("auto", whole):
                calls, named = sharded_calls(records, shards, given)
                m = gene_metrics(calls, truth)
                cells.append((m, named))
            (a, named), (b, _) = cells
            row = [name, domain, f"{sum(len(s) for _, s in records) / 1e6:.2f}",
                   f"{shard_bases / 1e6:g}", len(shards), ", ".join(named),
                   f"{whole} ({search_s:.1f} s)", f"{a.f1:.4f}", f"{b.f1:.4f}",
                   f"{b.f1 - a.f1:+.4f}", f"{a.n_pred} / {b.n_pred}"]
            print("\t".join(map(str, row)), flush=True)
            rows.append(row)
    headers = ["genome", "domain", "Mb", "shard Mb", "shards", "domain each shard names alone",
               "whole genome's domain (search)", "F1, each shard alone",
               "F1, the genome's domain", "change", "calls"]
    body = (section_head("Sharded annotation: each shard's domain, or the whole genome's",
                         __file__, argv)
            + "Shards as the workflow plans them (`plan_shards.plan`, overlap "
            f"{args.overlap:,} bp); genes of each shard = `call_bacterial` on its pieces "
            "(`genoctx annotate --model none --regions`), kept from the shard whose core holds "
            "their 3' end (`merge_annotation.py`). \"Each shard alone\": `--domain auto` per "
            "shard (the workflow before 2026-12-07); \"the genome's domain\": the domain "
            "named once from the whole genome's rRNA genes (rule `sample_domain`; the search's "
            "time in brackets), given to every shard. A shard naming none is decoded as a "
            "bacterium's (with the ORF scorer). Truth: the RefSeq records' CDS (not pseudo, "
            "not joined); match = contig + strand + stop. Genomes too short to be cut at a "
            "shard size are left out of that size's rows.\n\n" + md_table(headers, rows))
    if not args.no_write:
        write_section("genecall-shard-domain", body)


if __name__ == "__main__":
    main()
