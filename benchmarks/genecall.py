"""Gene calling: the genoctx decoder (sequence-only) against Prodigal (pyrodigal) on real genomes.

Gene-level matching is on strand + stop codon (genoctx.eval.metrics.gene_metrics); truth is the
record's CDS features that are not pseudo and not joined. Both tools are trained on each genome
as their users do (pyrodigal: ``GeneFinder().train(*records)`` then ``find_genes``).

Run: ``python benchmarks/genecall.py [--data-root DIR] [--genomes NAME ...] [--no-write]``
(writes the ``genecall`` section of docs/benchmarks.md).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

# Put this folder last on the path: a sibling script named like a stdlib module (tokenize.py)
# must not shadow the standard library.
_HERE = Path(__file__).resolve().parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != _HERE] + [str(_HERE)]

from _report import machine, md_table, write_section

from genoctx.eval.benchmarks.annotation_bacteria import prodigal_calls
from genoctx.eval.metrics import gene_metrics
from genoctx.heads.annotate import call_bacterial
from genoctx.heads.decoder import DecoderParams
from genoctx.io.annotation import read_genes, read_sequences_genbank
from genoctx.io.dataroot import load_manifest, resolve_data_root

GENOMES = (
    "genomes/bacteria/Brucella_melitensis_16M.gbff.gz",
    "genomes/bacteria/Haemophilus_influenzae_Rd_KW20.gbff.gz",
    "genomes/bacteria/Escherichia_coli_K12_MG1655.gbff.gz",
)


def run_genoctx(records, params=None):
    t0, c0 = time.perf_counter(), time.process_time()
    calls, _ = call_bacterial(records, params=params)  # what genoctx annotate --model none writes
    return calls, time.perf_counter() - t0, time.process_time() - c0


def run_genoctx_no_scorer(records):
    """``genoctx annotate --model none --no-orf-scorer``: the genome's own statistics alone."""
    return run_genoctx(records, DecoderParams(orf_scorer=False))


def run_prodigal(records):
    t0, c0 = time.perf_counter(), time.process_time()
    calls = prodigal_calls(records)
    return calls, time.perf_counter() - t0, time.process_time() - c0


def parser(doc: str) -> argparse.ArgumentParser:
    """Options shared by the gene-calling benchmarks: data root, genomes, --no-write."""
    ap = argparse.ArgumentParser(description=doc.splitlines()[0])
    ap.add_argument("--data-root", default=None)
    ap.add_argument("--genomes", nargs="*", default=list(GENOMES), help="manifest paths")
    ap.add_argument("--no-write", action="store_true", help="print only; leave docs alone")
    return ap


def main(argv=None) -> None:
    args = parser(__doc__).parse_args(argv)
    root = resolve_data_root(args.data_root)
    manifest = load_manifest(root)
    rows = []
    for rel in args.genomes:
        path = root / rel
        role = manifest[rel].role if rel in manifest else "?"
        records = list(read_sequences_genbank(path))
        truth = read_genes(path)
        size = sum(len(s) for _, s in records)
        for tool, fn in (("genoctx", run_genoctx), ("genoctx --no-orf-scorer", run_genoctx_no_scorer),
                         ("prodigal", run_prodigal)):
            calls, wall, cpu = fn(records)
            m = gene_metrics(calls, truth)
            row = [Path(rel).name.split(".gbff")[0], role, f"{size / 1e6:.2f}", tool, m.n_true,
                   m.n_pred, f"{m.sensitivity:.4f}", f"{m.precision:.4f}", f"{m.f1:.4f}",
                   f"{m.start_agreement:.4f}", f"{wall:.1f}", f"{cpu:.1f}"]
            print("\t".join(map(str, row)), flush=True)
            rows.append(row)
    headers = ["genome", "role", "Mb", "tool", "true genes", "calls", "sensitivity", "precision",
               "F1", "start agreement", "wall s", "CPU s"]
    body = (
        "## Gene calling (sequence only): genoctx decoder vs Prodigal\n\n"
        "Command: `python benchmarks/genecall.py`\n\n"
        f"Machine: {machine()}\n\n"
        "Match = same strand and stop codon; truth = CDS not `pseudo` and not joined. Both tools "
        "self-train on each genome (all records together). Start agreement is over matched "
        "genes. CPU s is the process's CPU time (the decoder itself is single-threaded). "
        "genoctx's decoder includes the cross-genome ORF scorer (genoctx.heads.orf_scorer), "
        "fitted on the train genomes, so train-genome rows (E. coli) are in-sample for it; "
        "`--no-orf-scorer` rows decode without it.\n\n"
        + md_table(headers, rows))
    if not args.no_write:
        write_section("genecall", body)


if __name__ == "__main__":
    main()
