"""Gene calling on genomes genoctx never saw, scored against their own annotation: archaea, Bradyrhizobium, Roseobacter, mycobacteria.

The train genomes of the data root are bacteria of three phyla; the unseen-genome benchmark
(``genecall_unseen.py``) adds genera and a phylum they lack, but with no annotation to score
against, only agreement with Prodigal. This one scores both tools against the genomes' own
annotations, on genomes of a domain no train genome belongs to, Archaea (four orders:
Methanococcales, Thermococcales, Methanobacteriales, Methanosarcinales), on a large high-G+C
bacterium of a genus the train genomes lack, and on two high-G+C Actinomycetota, a phylum they
lack:

* Methanococcus maripaludis S2 (NC_005791.1, 1.66 Mb, G+C 0.33)
* Thermococcus kodakarensis KOD1 (NC_006624.1, 2.09 Mb, G+C 0.52)
* Methanothermobacter thermautotrophicus ΔH (NC_000916.1, 1.75 Mb, G+C 0.50)
* Methanosarcina acetivorans C2A (NC_003552.1, 5.75 Mb, G+C 0.43)
* Bradyrhizobium japonicum USDA 110 (NC_004463.1, 9.11 Mb, G+C 0.64; Alphaproteobacteria, the
  class of Brucella and Paracoccus)
* Roseobacter denitrificans OCh 114, its chromosome (NC_008209, 4.13 Mb, G+C 0.59;
  Alphaproteobacteria, Rhodobacterales as Paracoccus, a genus the train genomes lack; added
  2026-12-08, after the decoder's G+C bias was set)
* Mycobacterium tuberculosis H37Rv (NC_000962.2, 4.41 Mb, G+C 0.66)
* Mycolicibacterium (Mycobacterium) smegmatis mc2 155 (7.0 Mb, G+C 0.67; TAMU's sequence of
  the strain, with the reference's annotation carried over: 17 of its 6,716 genes do not end
  in a stop codon there, a loss both tools share)

The first five are the RefSeq GenBank files (submitter annotations of 2002–2005, as
B. melitensis's is) shipped as example data in the Debian package ``cct-examples`` 1.0.3-1
(the CGView Comparison Tool's sample projects; GPL-2+, the records are NCBI's); the sixth is a
GenBank file of the same package's script tests (its 2006 annotation, 4,209 CDS). The two
mycobacteria are a FASTA and a protein table each, from the genome folder of TRANSIT in the
Debian package ``tnseq-transit`` 3.2.7-1 (GPL-3). The script fetches both packages with
``apt-get download`` into ``--cache`` (default ``results/unseen``, which git ignores), unpacks
them with ``dpkg-deb -x`` and checks each file against the sha256 pinned below before use;
nothing is written into the project.

Truth = the CDS features that are not pseudo and not joined (``genoctx.io.annotation.read_genes``;
the protein table's genes for the mycobacteria),
match = contig + strand + stop (``genoctx.eval.metrics.gene_metrics``), as in the ``genecall``
section. Cases: the whole genome (genoctx = ``call_bacterial``, what ``genoctx annotate --model
none`` writes; also without its cross-genome ORF scorer; Prodigal trained on the genome), the
genome cut into 10-kb contigs given together, as a draft assembly (both tools trained on all
of them), and the same contigs each decoded alone from pre-trained models, as in a metagenome
(genoctx ``--procedure meta``, its bank of 17 bacterial models; Prodigal ``-p meta``, whose 50
models include archaea); truth genes there are those whose stop codon lies inside one contig and
calls running off a contig's 3' end are left out (as ``genecall_fragments.py``).

Run: ``python benchmarks/genecall_curated_unseen.py [--cache DIR] [--genomes NAME ...] [--no-contigs]
[--no-write]`` (writes the ``genecall-curated-unseen`` section of docs/benchmarks.md).
"""

from __future__ import annotations

import sys
from pathlib import Path

# Put this folder last on the path: a sibling script named like a stdlib module (tokenize.py)
# must not shadow the standard library.
_HERE = Path(__file__).resolve().parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != _HERE] + [str(_HERE)]

import argparse

from _report import md_table, section_head, write_section
from genecall_fragments import fragment
from genecall_regions import prodigal_meta
from genecall_unseen import check_sha256, fetch, timed

from genoctx.eval.benchmarks.annotation_bacteria import prodigal_calls
from genoctx.eval.metrics import gene_metrics, stop_key
from genoctx.heads.annotate import call_bacterial
from genoctx.heads.decoder import DecoderParams
from genoctx.io.annotation import Gene, read_genes, read_sequences_genbank
from genoctx.io.fasta import iter_records

PACKAGE, VERSION = "cct-examples", "1:1.0.3-1"
BASE = "usr/share/doc/cct/examples/sample_projects"
# name, domain, group, path in the package, sha256 of the GenBank file
GENOMES = (
    ("Methanococcus_maripaludis_S2", "Archaea", "Methanococcales",
     f"{BASE}/sample_project_2/comparison_genomes/Methanococcus_maripaludis.gbk.gz",
     "187c0b1de0fb48301b6b1e18c8b35c5c030bbc17cd83317e3bf59d61d76b2682"),
    ("Thermococcus_kodakarensis_KOD1", "Archaea", "Thermococcales",
     f"{BASE}/sample_project_2/comparison_genomes/Thermococcus_kodakaraensis.gbk.gz",
     "e96f8d5cd4178bb9d187d710087def380d7ab6ac98950a595296184da08bb9d3"),
    ("Methanothermobacter_thermautotrophicus_dH", "Archaea", "Methanobacteriales",
     f"{BASE}/sample_project_2/reference_genome/Methanobacterium_thermoautotrophicum.gbk.gz",
     "cfcc46f617c9abd328e329b75cb9a7ff06f4ad135f99e8afa54237ec3399d92b"),
    ("Methanosarcina_acetivorans_C2A", "Archaea", "Methanosarcinales",
     f"{BASE}/sample_project_2/comparison_genomes/Methanosarcina_acetivorans.gbk.gz",
     "6a552bc33757c3f80e16372020527f9490f966cf7f91c4fc56e5d3be717a1309"),
    ("Bradyrhizobium_japonicum_USDA110", "Bacteria", "Alphaproteobacteria",
     f"{BASE}/sample_project_3/reference_genome/NC_004463.gbk.gz",
     "3f32bd902bff9b66abc170a6a6293575cab2609339297e0fcc7529722dddc7ad"),
    # the chromosome of R. denitrificans OCh 114 (NC_008209, 2006 annotation), test input of
    # the package's scripts (added 2026-12-08)
    ("Roseobacter_denitrificans_OCh114", "Bacteria", "Alphaproteobacteria",
     "usr/share/cct/lib/scripts/get_cds/test_input/R_denitrificans.gbk",
     "6c96fca8e8c66c4b2723ca4a59d47426e009487f2c32edd97fcfc40c75ef787c"),
)
# Mycobacteria (Actinomycetota) from TRANSIT's genome folder: a FASTA and a protein table (NCBI
# .ptt-like: product, start, end, strand, length, gi, gene id, name, locus tag, COG; 1-based)
TNSEQ, TNSEQ_VERSION = "tnseq-transit", "3.2.7-1"
TNSEQ_BASE = "usr/lib/python3/dist-packages/pytransit/genomes"
# name, domain, group, stem under TNSEQ_BASE, sha256 of the .fna, of the .prot_table
TNSEQ_GENOMES = (
    ("Mycobacterium_tuberculosis_H37Rv", "Bacteria", "Actinomycetota", "H37Rv",
     "cdaf67874c900baf860de9ded6206b1c27712505d539a2bbff4f2eedecbcd03f",
     "ede48b1ab6412ea86f09df2eb0d3ba752761fde07578228be5dda1f8a1cc8cf3"),
    ("Mycolicibacterium_smegmatis_mc2_155", "Bacteria", "Actinomycetota", "mc2_155_tamu",
     "68e9b284bf993dfa015f605e22962c1ef3fc2b06ef2a53015205851688c6b9f5",
     "7603f815072a0bc940a5ee7a569a97033769201db3a15d2f779bee119a9a2328"),
)
CONTIG = 10_000


def read_prot_table(path: Path, contig: str) -> list[Gene]:
    """The protein-coding genes of a TRANSIT/NCBI protein table, on ``contig``."""
    genes = []
    for line in path.read_text().splitlines():
        f = line.split("\t")
        if len(f) < 9 or not f[1].isdigit():
            continue
        start, end = int(f[1]) - 1, int(f[2])
        genes.append(Gene(contig, start, end, 1 if f[3] == "+" else -1, "CDS", pseudo=False,
                          joined=False, partial=False, id=f[8], parts=[(start, end)]))
    return genes


def curated_genomes(cache: Path, names=None):
    """(name, domain, group, records, truth genes) of each genome (all, or those in ``names``)."""
    pkg = fetch(cache, PACKAGE, VERSION, BASE)
    for name, domain, group, rel, sha in GENOMES:
        if names and name not in names:
            continue
        path = check_sha256(pkg / rel, sha)
        records = [(c, s) for c, s in read_sequences_genbank(path) if len(s)]
        yield name, domain, group, records, read_genes(path)
    pkg = fetch(cache, TNSEQ, TNSEQ_VERSION, TNSEQ_BASE) / TNSEQ_BASE
    for name, domain, group, stem, sha_fna, sha_table in TNSEQ_GENOMES:
        if names and name not in names:
            continue
        (contig, seq), = iter_records(check_sha256(pkg / f"{stem}.fna", sha_fna))
        genes = read_prot_table(check_sha256(pkg / f"{stem}.prot_table", sha_table), contig)
        yield name, domain, group, [(contig, seq)], genes


def score(calls, truth, pieces: bool) -> list:
    if pieces:  # a call running off a piece's 3' end has no stop to match
        calls = [g for g in calls if not g.partial[1]]
    m = gene_metrics(calls, truth)
    return [m.n_true, m.n_pred, f"{m.sensitivity:.4f}", f"{m.precision:.4f}", f"{m.f1:.4f}",
            f"{m.start_agreement:.4f}"]


def scorer_change(name, with_scorer, without, truth) -> list:
    """What the ORF scorer changes on a whole genome: calls it adds (of them true genes, and
    those overlapping no true gene), calls it removes (of them true), and the added calls'
    median length."""
    true = {stop_key(g) for g in truth}
    a = {stop_key(g): g for g in with_scorer}
    b = {stop_key(g): g for g in without}
    added = [a[k] for k in a.keys() - b.keys()]
    removed = [b[k] for k in b.keys() - a.keys()]
    spans = {}  # true genes' spans per contig, either strand
    for g in truth:
        spans.setdefault(g.contig, []).append((g.start, g.end))
    alone = sum(not any(min(g.end, e) > max(g.start, s) for s, e in spans.get(g.contig, ()))
                for g in added if stop_key(g) not in true)
    lengths = sorted(g.end - g.start for g in added)
    return [name, len(added), sum(stop_key(g) in true for g in added), alone, len(removed),
            sum(stop_key(g) in true for g in removed),
            lengths[len(lengths) // 2] if lengths else "–"]


def rows_for(name, domain, records, truth, contigs: bool) -> list[list]:
    gc = sum(s.count(b"G") + s.count(b"C") for _, s in records) / sum(len(s) for _, s in records)
    head = [name, domain, f"{gc:.3f}"]
    no_scorer = DecoderParams(orf_scorer=False)
    cases = [("whole", "genoctx", lambda r: call_bacterial(r)[0]),
             ("whole", "genoctx, no ORF scorer", lambda r: call_bacterial(r, params=no_scorer)[0]),
             ("whole", "Prodigal", prodigal_calls)]
    kb = f"{CONTIG // 1000}-kb contigs, each alone"
    draft = f"{CONTIG // 1000}-kb contigs together"
    if contigs:
        cases += [(draft, "genoctx", lambda r: call_bacterial(r)[0]),
                  (draft, "Prodigal", prodigal_calls),
                  (kb, "genoctx --procedure meta",
                   lambda r: call_bacterial(r, procedure="meta")[0]),
                  (kb, "Prodigal -p meta", prodigal_meta)]
    pieces = fragment(records, truth, CONTIG) if contigs else None
    rows, whole = [], []
    for case, tool, fn in cases:
        seqs, ref = (records, truth) if case == "whole" else pieces
        calls, wall = timed(fn, seqs)
        if case == "whole" and tool.startswith("genoctx"):
            whole.append(calls)
        row = head + [case, tool] + score(calls, ref, case != "whole") + [f"{wall:.1f}"]
        print("\t".join(map(str, row)), flush=True)
        rows.append(row)
    change = scorer_change(name, *whole, truth)
    print("ORF scorer:", *change, flush=True)
    return rows, change


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cache", default="results/unseen", help="where the package is kept")
    ap.add_argument("--genomes", nargs="*", default=None, help="names (default: all)")
    ap.add_argument("--no-contigs", action="store_true", help="whole genomes only")
    ap.add_argument("--no-write", action="store_true", help="print only; leave docs alone")
    args = ap.parse_args(argv)
    rows, changes = [], []
    for name, domain, _, records, truth in curated_genomes(Path(args.cache), args.genomes):
        r, c = rows_for(name, domain, records, truth, not args.no_contigs)
        rows += r
        changes.append(c)
    headers = ["genome", "domain", "G+C", "case", "tool", "true genes", "calls", "sensitivity",
               "precision", "F1", "start agreement", "wall s"]
    body = (section_head("Gene calling on unseen genomes against their annotation: archaea, "
                         "Bradyrhizobium, Roseobacter, mycobacteria", __file__, argv)
            + "Truth: the RefSeq records' CDS (not pseudo, not joined), or the protein table's "
            "genes (mycobacteria); match = contig + strand + stop; start agreement among "
            "matches. None of these genomes, nor any archaeon, Bradyrhizobium, Roseobacter or "
            "member of the Actinomycetota, is in the data root. Genomes: GenBank files of the Debian "
            f"package {PACKAGE} {VERSION}, FASTA and protein tables of {TNSEQ} {TNSEQ_VERSION}, "
            "sha256-checked (the script's docstring). genoctx = "
            "`call_bacterial` (as `genoctx annotate --model none`), its ORF scorer fitted on 13 "
            "bacterial train genomes, its model bank on 17 (three phyla, no archaea); Prodigal "
            "= pyrodigal, trained on the genome (`-p meta` for contigs alone: 50 models, "
            "archaea among them). Contigs: each record cut into 10-kb pieces, given together "
            "as a draft assembly (both tools trained on all of them) or each decoded on "
            "its own; truth genes with their stop inside a piece, calls running off a piece's "
            "3' end left out.\n\n" + md_table(headers, rows)
            + "\n\nWhat the cross-genome ORF scorer changes on each whole genome (genoctx "
            "against genoctx without it; match by strand + stop):\n\n"
            + md_table(["genome", "calls it adds", "of them true",
                        "false, overlapping no true gene", "calls it removes", "of them true",
                        "median length of the added (bp)"], changes))
    if not args.no_write:
        write_section("genecall-curated-unseen", body)


if __name__ == "__main__":
    main()
