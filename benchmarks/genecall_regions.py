"""Gene calling on one short region at a time: self-trained vs pre-trained statistics, and Prodigal.

A user who annotates one region (``genoctx annotate --region``), a plasmid on its own or a
metagenomic contig gives the decoder too little sequence to self-train on. Windows of each size
are cut from a genome (``--windows`` of them, evenly spaced) and each window is called on its
own, with:

* ``genoctx single`` — statistics self-trained on the window (``procedure="single"``);
* ``genoctx meta`` — the best-scoring model of the bank (``procedure="meta"``,
  :mod:`genoctx.heads.meta_models`);
* ``genoctx auto`` — what ``genoctx annotate`` does (meta under ``META_MAX_BP``);
* ``prodigal`` — pyrodigal as its users run it on a lone sequence (trained on it from 20 kb,
  metagenomic mode below), and ``prodigal meta`` — pyrodigal's metagenomic mode.

``--held-out`` scores train genomes with a bank that leaves out the genome's genus (Escherichia
and Shigella count as one), so no model of a relative is chosen; this is how ``META_MAX_BP`` was
set. Truth and matching as in genecall_fragments.py (CDS whose stop lies inside the window;
contig + strand + stop; calls running off a window's 3' end are left out).

Run: ``python benchmarks/genecall_regions.py [--sizes 5000 20000 50000 100000 200000]
[--windows 20] [--held-out] [--tools T,T] [--prior-bases N] [--genomes PATH ...] [--no-write]`` (writes the ``genecall-regions`` section of
docs/benchmarks.md; ``--held-out`` writes ``genecall-regions-held-out``).
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

# Put this folder last on the path: a sibling script named like a stdlib module (tokenize.py)
# must not shadow the standard library.
_HERE = Path(__file__).resolve().parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != _HERE] + [str(_HERE)]

from _report import machine, md_table, write_section
from genecall import parser
from genecall_fragments import fragment

from genoctx.eval.benchmarks.annotation_bacteria import prodigal_calls
from genoctx.eval.metrics import gene_metrics
from genoctx.heads.annotate import call_bacterial
from genoctx.heads.decoder import META_MAX_BP, DecoderParams, GeneCall
from genoctx.heads.meta_models import default_bank
from genoctx.io.annotation import read_genes, read_sequences_genbank
from genoctx.io.dataroot import load_manifest, resolve_data_root

TRAIN_DEV = (
    "genomes/bacteria/Escherichia_coli_K12_MG1655.gbff.gz",
    "genomes/bacteria/Neisseria_meningitidis_MC58.gbff.gz",
    "genomes/bacteria/Paracoccus_sp._SCN_68-21.gbff.gz",
    "genomes/bacteria/Streptococcus_pyogenes_M1_GAS.gbff.gz",
    "genomes/bacteria/Yersinia_pestis_KIM.gbff.gz",
    "genomes/bacteria/Chlamydia_trachomatis_NC_000117.1.gbff.gz",
)


def genus(name: str) -> str:
    g = Path(name).name.split("_")[0].lower()
    return "escherichia" if g == "shigella" else g


def windows(records, truth, size: int, n: int):
    """Up to ``n`` windows of ``size`` bases evenly spread over ``records`` (no window shorter:
    a record's last piece is left out) and the truth genes whose stop lies inside one."""
    contigs, genes = fragment(records, truth, size)
    full = [c for c in contigs if len(c[1]) == size]
    pick = full[::max(1, len(full) // n)][:n]
    names = {c for c, _ in pick}
    return pick, [g for g in genes if g.contig in names]


def prodigal_meta(records):
    import pyrodigal

    finder = pyrodigal.GeneFinder(meta=True, closed=False)
    return [GeneCall(c, g.begin - 1, g.end, g.strand, g.confidence() / 100.0, g.start_type,
                     (bool(g.partial_begin), bool(g.partial_end)))
            for c, s in records for g in finder.find_genes(s)]


def main(argv=None) -> None:
    ap = parser(__doc__)
    ap.add_argument("--sizes", nargs="*", type=int,
                    default=[5_000, 20_000, 50_000, 100_000, 200_000])
    ap.add_argument("--windows", type=int, default=20, help="windows per genome and size")
    ap.add_argument("--held-out", action="store_true",
                    help="train genomes, bank without the genome's genus")
    ap.add_argument("--prior-bases", type=float, default=None,
                    help="meta: weight of the bank model in coding bases (default: the decoder's)")
    ap.add_argument("--tools", default=None, help="comma-separated from single, meta, auto, "
                    "prodigal, prodigal-meta (default: all; single,meta with --held-out)")
    args = ap.parse_args(argv)
    if args.held_out and "--genomes" not in (argv if argv is not None else sys.argv):
        args.genomes = list(TRAIN_DEV)
    tools = (args.tools or ("single,meta" if args.held_out else
                            "single,meta,auto,prodigal,prodigal-meta")).split(",")
    root = resolve_data_root(args.data_root)
    manifest = load_manifest(root)
    full_bank = default_bank()
    params = None if args.prior_bases is None else DecoderParams(meta_prior_bases=args.prior_bases)
    rows = []
    for rel in args.genomes:
        bank = full_bank
        if args.held_out:
            bank = tuple(m for m in full_bank if genus(m.name) != genus(rel))
        records = [(c, s) for c, s in read_sequences_genbank(root / rel) if len(s)]
        truth = read_genes(root / rel)
        for size in args.sizes:
            pick, genes = windows(records, truth, size, args.windows)
            if not pick:  # no record this long
                continue
            for tool in tools:
                calls, t0 = [], time.perf_counter()
                for c in pick:
                    if tool in ("single", "meta", "auto"):
                        got = call_bacterial([c], procedure=tool, bank=bank, params=params)[0]
                    elif tool == "prodigal":
                        got = prodigal_calls([c])
                    else:
                        got = prodigal_meta([c])
                    calls += [g for g in got if not g.partial[1]]
                wall = time.perf_counter() - t0
                m = gene_metrics(calls, genes)
                name = tool if tool.startswith("prodigal") else f"genoctx {tool}"
                row = [Path(rel).name.split(".gbff")[0], manifest[rel].role, f"{size:,}",
                       len(pick), name.replace("-", " "), m.n_true, m.n_pred,
                       f"{m.sensitivity:.4f}", f"{m.precision:.4f}", f"{m.f1:.4f}",
                       f"{m.start_agreement:.4f}", f"{wall / len(pick):.2f}"]
                print("\t".join(map(str, row)), flush=True)
                rows.append(row)
    headers = ["genome", "role", "window bp", "windows", "tool", "true genes", "calls",
               "sensitivity", "precision", "F1", "start agreement", "s / window"]
    held = " --held-out" if args.held_out else ""
    body = (
        f"## Gene calling on one region at a time{' (train genomes, bank without the genus)' if held else ''}\n\n"
        f"Command: `python benchmarks/genecall_regions.py{held}"
        f"{f' --windows {args.windows}' if args.windows != 20 else ''}`\n\n"
        f"Machine: {machine()}\n\n"
        "Each window is called on its own. genoctx single = statistics self-trained on the "
        "window; meta = the best-scoring model of the shipped bank (genoctx.heads.meta_models), "
        "adapted to the window"
        + (", without models of the genome's genus" if held else "")
        + f"; auto = what `genoctx annotate` does (meta under {META_MAX_BP:,} bp). prodigal = "
        "pyrodigal trained on the window from 20 kb, metagenomic mode below; prodigal meta = "
        "metagenomic mode. Truth = CDS whose stop lies inside the window; calls running off the "
        "window's 3' end are left out; match = strand + stop."
        + ("" if held else " Train genomes (E. coli) are in-sample for meta: their own model "
           "is in the bank; `--held-out` measures without it.")
        + "\n\n" + md_table(headers, rows))
    if args.prior_bases is not None:  # a variant: print only
        return
    if not args.no_write:
        write_section("genecall-regions" + ("-held-out" if held else ""), body)


if __name__ == "__main__":
    main()
