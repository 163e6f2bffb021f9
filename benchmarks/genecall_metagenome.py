"""Gene calling on a mock metagenome: contigs of several genomes mixed in one FASTA.

A metagenomic assembly holds contigs of many organisms. Each genome's records are cut into
contigs of ``--size`` bases (``--contigs`` of them per genome, spread evenly over the genome),
and the contigs of all genomes are given together, as a user would give an assembly:

* genoctx meta — ``--procedure meta``: each contig decoded on its own from the best model of
  the bank (``call_bacterial(..., procedure="meta")``, what ``genoctx annotate --model none
  -p meta`` writes), with 1 worker process and with one per available core;
* genoctx single — ``--procedure single``: statistics self-trained on all contigs together, as
  if they were one genome (wrong for a mixture);
* genoctx auto — what ``genoctx annotate`` does by default: when the records' composition
  says they are a mixture (:func:`genoctx.heads.decoder.mixture_groups`; by G+C for these two)
  it decodes each group on its own (``--procedure groups``: self-trained from 150 kb, else
  from the bank);
* Prodigal meta — pyrodigal ``meta=True`` (``prodigal -p meta``), the usual tool here;
* Prodigal single — pyrodigal trained on all contigs together.

Truth and matching as in genecall_fragments.py: CDS whose stop codon lies inside a contig
(5'-partial included); calls that run off a contig's 3' end are left out; match = contig +
strand + stop. The default genomes are the two validation genomes (38% and 57% G+C): nothing
is fitted here. The meta rows with different worker counts must give the same calls (checked).

Run: ``python benchmarks/genecall_metagenome.py [--size 10000] [--contigs 100]
[--genomes PATH ...] [--no-write]`` (writes the ``genecall-metagenome`` section of
docs/benchmarks.md).
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
from genecall_fragments import fragment

from genoctx.cli.common import available_cores
from genoctx.eval.metrics import gene_metrics
from genoctx.heads.annotate import call_bacterial
from genoctx.heads.decoder import GeneCall, auto_procedure
from genoctx.io.annotation import read_genes, read_sequences_genbank
from genoctx.io.dataroot import load_manifest, resolve_data_root


def mock_metagenome(root: Path, genomes: list[str], size: int, per_genome: int):
    """Contigs ``GENOME|RECORD/k`` of every genome (evenly spread) and their truth genes."""
    contigs, truth = [], []
    for rel in genomes:
        tag = Path(rel).name.split(".gbff")[0]
        records = [(f"{tag}|{c}", s) for c, s in read_sequences_genbank(root / rel) if len(s)]
        genes = [dataclasses.replace(g, contig=f"{tag}|{g.contig}") for g in read_genes(root / rel)]
        cut, cut_genes = fragment(records, genes, size)
        full = [c for c in cut if len(c[1]) == size]
        step = max(1, len(full) // per_genome)
        keep = {name for name, _ in full[::step][:per_genome]}
        contigs += [c for c in cut if c[0] in keep]
        truth += [g for g in cut_genes if g.contig in keep]
    return contigs, truth


def prodigal(contigs, meta: bool) -> list[GeneCall]:
    import pyrodigal

    finder = pyrodigal.GeneFinder(meta=meta, closed=False)
    if not meta:
        finder.train(*[s for _, s in contigs])
    return [GeneCall(cid, g.begin - 1, g.end, g.strand, g.confidence() / 100.0, g.start_type,
                     (bool(g.partial_begin), bool(g.partial_end)))
            for cid, s in contigs for g in finder.find_genes(s)]


def main(argv=None) -> None:
    ap = parser(__doc__)
    ap.set_defaults(genomes=["genomes/bacteria/Brucella_melitensis_16M.gbff.gz",
                             "genomes/bacteria/Haemophilus_influenzae_Rd_KW20.gbff.gz"])
    ap.add_argument("--size", type=int, default=10_000)
    ap.add_argument("--contigs", type=int, default=100, help="contigs per genome")
    args = ap.parse_args(argv)
    root = resolve_data_root(args.data_root)
    manifest = load_manifest(root)
    contigs, truth = mock_metagenome(root, args.genomes, args.size, args.contigs)
    cores = available_cores()
    runs = [("genoctx meta", 1, lambda: call_bacterial(contigs, procedure="meta")[0])]
    if cores > 1:
        runs.append(("genoctx meta", cores,
                     lambda: call_bacterial(contigs, procedure="meta", workers=cores)[0]))
    runs += [("genoctx single", 1, lambda: call_bacterial(contigs, procedure="single")[0]),
             (f"genoctx auto ({auto_procedure(contigs)})", 1,
              lambda: call_bacterial(contigs, procedure="auto")[0]),
             ("Prodigal meta", 1, lambda: prodigal(contigs, True)),
             ("Prodigal single", 1, lambda: prodigal(contigs, False))]
    rows, meta_calls = [], []
    bases = sum(len(s) for _, s in contigs)
    for tool, workers, fn in runs:
        t0 = time.perf_counter()
        calls = fn()
        wall = time.perf_counter() - t0
        if tool == "genoctx meta":
            meta_calls.append([(g.contig, g.start, g.end, g.strand, g.score) for g in calls])
        calls = [g for g in calls if not g.partial[1]]
        m = gene_metrics(calls, truth)
        row = [tool, workers, m.n_true, m.n_pred, f"{m.sensitivity:.4f}", f"{m.precision:.4f}",
               f"{m.f1:.4f}", f"{m.start_agreement:.4f}", f"{wall:.1f}",
               f"{wall / bases * 1e6:.1f}"]
        print("\t".join(map(str, row)), flush=True)
        rows.append(row)
    if any(c != meta_calls[0] for c in meta_calls):
        sys.exit("genoctx meta gave different calls with different worker counts")
    names = ", ".join(f"{Path(g).name.split('.gbff')[0]} ({manifest[g].role})" for g in args.genomes)
    headers = ["tool", "processes", "true genes", "calls", "sensitivity", "precision", "F1",
               "start agreement", "wall s", "s per Mb"]
    body = (
        "## Gene calling on a mock metagenome: contigs of several genomes in one file\n\n"
        f"Command: `python benchmarks/genecall_metagenome.py --size {args.size} "
        f"--contigs {args.contigs}`\n\n"
        f"Machine: {machine()}\n\n"
        f"{len(contigs)} contigs of {args.size:,} bp ({bases / 1e6:.2f} Mb), {args.contigs} "
        f"evenly spread over each of: {names}. genoctx meta = `genoctx annotate -p meta` "
        "(each contig from the best bank model, adapted to it), with 1 process and with "
        "`--threads` = every available core (the same calls, checked); genoctx single = all "
        "contigs self-trained together; genoctx auto = the default (`groups` for a mixture: "
        "each composition group self-trained on its own from 150 kb, else from the bank); "
        "Prodigal = pyrodigal, metagenomic mode or trained on all contigs together. Truth = CDS whose stop codon lies inside a contig; calls running "
        "off a contig's 3' end are left out; match = contig + strand + stop.\n\n"
        + md_table(headers, rows))
    if not args.no_write:
        write_section("genecall-metagenome", body)


if __name__ == "__main__":
    main()
