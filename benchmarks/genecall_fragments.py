"""Gene calling on fragmented assemblies: genomes cut into contigs of N bases, genoctx vs Prodigal.

Draft genomes and metagenome-assembled genomes arrive in pieces, and every cut makes genes
partial. Each record of a genome is cut into consecutive contigs of ``--sizes`` bases (the last
one shorter); both tools see all contigs of the genome together, as a user would give them
(genoctx: ``call_bacterial``, what ``genoctx annotate --model none`` writes; Prodigal:
pyrodigal trained on all contigs, ``closed=False``).

Truth: the record's CDS (not pseudo, not joined) whose whole stop codon lies inside one contig,
in that contig's coordinates; a gene whose start lies in an earlier contig counts too (a caller
should report it as 5'-partial), from its first whole codon in the contig, so a 5'-partial call
agrees on the start when it runs off the contig's edge in the gene's frame. Calls that run off a
contig's 3' end have no stop codon and are left out of both counts. Match = contig + strand +
stop (genoctx.eval.metrics.gene_metrics).

``--gap N`` joins each record's contigs again, N bases of N between them, into one scaffold
(as assemblers write scaffolds: contigs ordered, gaps of unknown size): truth and calls are
then in the scaffold's coordinates, and Prodigal reads through the N runs (its default, without
``-m``) while genoctx decodes the pieces between gaps as contigs.

Run: ``python benchmarks/genecall_fragments.py [--sizes 10000 50000] [--gap N]
[--genomes PATH ...] [--no-write]`` (writes the ``genecall-fragments`` section of
docs/benchmarks.md, with ``--gap`` the ``genecall-scaffolds`` section).
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

# Put this folder last on the path: a sibling script named like a stdlib module (tokenize.py)
# must not shadow the standard library.
_HERE = Path(__file__).resolve().parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != _HERE] + [str(_HERE)]

import dataclasses

from _report import machine, md_table, write_section
from genecall import parser

from genoctx.eval.benchmarks.annotation_bacteria import prodigal_calls
from genoctx.eval.metrics import gene_metrics
from genoctx.heads.annotate import call_bacterial
from genoctx.io.annotation import read_genes, read_sequences_genbank
from genoctx.io.dataroot import load_manifest, resolve_data_root


def fragment(records: list[tuple[str, bytes]], truth: list, size: int):
    """Contigs ``RECORD/k`` of ``size`` bases and the truth genes whose stop codon lies in one,
    in its coordinates. A gene that starts in an earlier contig is cut at its first whole codon
    in this one, where a caller's 5'-partial gene starts (Prodigal's and genoctx's alike)."""
    contigs, genes = [], []
    for name, seq in records:
        for k, lo in enumerate(range(0, len(seq), size)):
            contigs.append((f"{name}/{k}", seq[lo:lo + size]))
        for g in truth:
            if g.contig != name:
                continue
            lo3, hi3 = (g.end - 3, g.end) if g.strand == 1 else (g.start, g.start + 3)
            k = lo3 // size
            if hi3 <= (k + 1) * size:
                off, n = k * size, min(size, len(seq) - k * size)
                start, end = g.start - off, g.end - off
                start = start % 3 if start < 0 else start   # the gene's codons stay in frame
                end = n - (end - n) % 3 if end > n else end
                cut = {"parts": []} if hasattr(g, "parts") else {}
                genes.append(dataclasses.replace(g, contig=f"{name}/{k}", start=start, end=end,
                                                 **cut))
    return contigs, genes


def scaffold(contigs: list[tuple[str, bytes]], genes: list, gap: int):
    """The contigs ``RECORD/k`` of each record joined by ``gap`` N into one sequence ``RECORD``,
    and the genes moved into its coordinates."""
    joined: dict[str, bytearray] = {}
    where = {}
    for name, seq in contigs:
        record = name.rsplit("/", 1)[0]
        s = joined.setdefault(record, bytearray())
        if s:
            s += b"N" * gap
        where[name] = (record, len(s))
        s += seq
    moved = [dataclasses.replace(g, contig=where[g.contig][0], start=g.start + where[g.contig][1],
                                 end=g.end + where[g.contig][1]) for g in genes]
    return [(r, bytes(s)) for r, s in joined.items()], moved


def main(argv=None) -> None:
    ap = parser(__doc__)
    ap.add_argument("--sizes", nargs="*", type=int, default=[10_000, 50_000])
    ap.add_argument("--gap", type=int, default=0,
                    help="join the contigs into scaffolds with this many N between them")
    args = ap.parse_args(argv)
    root = resolve_data_root(args.data_root)
    manifest = load_manifest(root)
    rows = []
    for rel in args.genomes:
        records = [(c, s) for c, s in read_sequences_genbank(root / rel) if len(s)]
        truth = read_genes(root / rel)
        for size in args.sizes:
            contigs, genes = fragment(records, truth, size)
            pieces = len(contigs)
            if args.gap:
                contigs, genes = scaffold(contigs, genes, args.gap)
            for tool in ("genoctx", "prodigal"):
                t0 = time.perf_counter()
                calls = call_bacterial(contigs)[0] if tool == "genoctx" else prodigal_calls(contigs)
                wall = time.perf_counter() - t0
                calls = [g for g in calls if not g.partial[1]]
                m = gene_metrics(calls, genes)
                row = [Path(rel).name.split(".gbff")[0], manifest[rel].role, f"{size:,}",
                       pieces, tool, m.n_true, m.n_pred, f"{m.sensitivity:.4f}",
                       f"{m.precision:.4f}", f"{m.f1:.4f}", f"{m.start_agreement:.4f}",
                       f"{wall:.1f}"]
                print("\t".join(map(str, row)), flush=True)
                rows.append(row)
    headers = ["genome", "role", "contig bp", "contigs", "tool", "true genes", "calls",
               "sensitivity", "precision", "F1", "start agreement", "wall s"]
    if args.gap:
        section, title, command = ("genecall-scaffolds", "on scaffolds (contigs joined by N runs)",
                                   f"genecall_fragments.py --gap {args.gap}")
        about = (f"As genecall-fragments, but each record's contigs are joined again with "
                 f"{args.gap} N between them into one scaffold; truth and calls in scaffold "
                 "coordinates. Prodigal (pyrodigal, default settings: no `-m`) reads through the "
                 "N runs; genoctx decodes the pieces between gaps (runs of >= 50 unknown bases) "
                 "as contigs, genes partial at a gap.")
    else:
        section, title, command = ("genecall-fragments", "on fragmented assemblies",
                                   "genecall_fragments.py")
        about = ("Each record cut into contigs of the given size; truth = CDS whose stop codon "
                 "lies inside one contig (5'-partial genes included); calls running off a "
                 "contig's 3' end are left out; match = contig + strand + stop. genoctx = "
                 "`call_bacterial` (the decoder and the RNA-gene filter, as `genoctx annotate "
                 "--model none`); Prodigal = pyrodigal trained on all contigs of the genome. "
                 "genoctx's decoder includes the cross-genome ORF scorer "
                 "(genoctx.heads.orf_scorer), fitted on the train genomes, so E. coli rows are "
                 "in-sample for it.")
    body = (f"## Gene calling {title}: genoctx vs Prodigal\n\n"
            f"Command: `python benchmarks/{command}`\n\n"
            f"Machine: {machine()}\n\n{about}\n\n" + md_table(headers, rows))
    if not args.no_write:
        write_section(section, body)


if __name__ == "__main__":
    main()
