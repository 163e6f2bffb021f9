"""Gene calling on genera genoctx never saw: agreement with Prodigal, whole genomes and 10-kb contigs.

genoctx's decoder self-trains on each genome, but its ORF scorer and its bank of pre-trained
models were fitted on the data root's train genomes (the scorer on 13 of 7 genera, the bank on
17 of 8 genera, Klebsiella added; three phyla). This checks
that what was fitted there carries over to genomes of other genera and other G+C. No curated
annotation of such a genome is reachable offline here, so the reference is Prodigal's
(pyrodigal's) calls on the whole genome, trained on it, with which each tool's calls are
compared (strand + stop; ``genoctx.eval.metrics.gene_metrics``). That reference favours
Prodigal, and agreeing with it is not being right: read the columns as "how far from the field's
standard caller", not as accuracy. The two validation genomes of the data root (with curated
annotations, scored in the ``genecall`` section) are compared the same way, for scale.

Cases: ``whole`` (every record of the genome, as given), ``10-kb contigs`` (each record cut
into consecutive 10,000-bp contigs, all given together, as a draft assembly; reference genes
are those whose stop codon lies inside one contig, in its coordinates, cut at the contig's
first whole codon when they start in an earlier one; calls running off a contig's 3' end are
left out) and ``10-kb contigs, each alone`` (the same contigs, each
decoded on its own from pre-trained models, as in a metagenome: genoctx ``--procedure meta``,
its bank of 17 models from the train genera; Prodigal ``-p meta``, 50 models from many
genera). genoctx = ``call_bacterial`` (what ``genoctx annotate --model none`` writes);
Prodigal = ``prodigal_calls`` (pyrodigal trained on all contigs of the genome). On whole genomes
genoctx also runs without its ORF scorer (``DecoderParams(orf_scorer=False)``), the classifier
of ORFs learned across the train genomes (``genoctx.heads.orf_scorer``), to see what it adds.

The unseen genomes are NCBI sequence records shipped as example data in the Debian package
``ragout-examples`` 2.3-4 (Ragout's examples; the package is BSD-3-clause, the sequences are
NCBI's): S. aureus COL (NC_002951.2, Staphylococcus), H. pylori G27 (NC_011333.1,
Helicobacter), V. cholerae O395 (CP001235.1 + CP001236.1, Vibrio). A fourth, of a phylum the
train genomes lack (Actinomycetota), is C. diphtheriae NCTC11397 (GCF_001457455.1,
Corynebacterium), the genome pyrodigal ships as test data (pyrodigal is a dependency; GPL-3.0,
the sequence is NCBI's); its row is skipped when the installed pyrodigal lacks the file. None of
these genera is in the data root. The script fetches the Debian package with ``apt-get
download`` into ``--cache`` (default ``results/unseen``, which git ignores), unpacks it with
``dpkg-deb -x`` and checks each FASTA against the sha256 pinned below before use; nothing is
written into the project.

Run: ``python benchmarks/genecall_unseen.py [--cache DIR] [--data-root DIR] [--no-write]``
(writes the ``genecall-unseen`` section of docs/benchmarks.md).
"""

from __future__ import annotations

import sys
from pathlib import Path

# Put this folder last on the path: a sibling script named like a stdlib module (tokenize.py)
# must not shadow the standard library.
_HERE = Path(__file__).resolve().parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != _HERE] + [str(_HERE)]

import argparse
import hashlib
import shutil
import subprocess
import time

from _report import md_table, section_head, write_section
from genecall_fragments import fragment
from genecall_regions import prodigal_meta

from genoctx.eval.benchmarks.annotation_bacteria import prodigal_calls
from genoctx.eval.metrics import gene_metrics
from genoctx.heads.annotate import call_bacterial
from genoctx.heads.decoder import DecoderParams
from genoctx.io.annotation import read_sequences_genbank
from genoctx.io.dataroot import load_manifest, resolve_data_root
from genoctx.io.fasta import iter_records

PACKAGE, VERSION = "ragout-examples", "2.3-4"
BASE = "usr/share/doc/ragout/examples"
# name, genus, path inside the package, sha256 of the .fasta.gz
UNSEEN = (
    ("Staphylococcus_aureus_COL", "Staphylococcus", "S.Aureus/references/COL.fasta.gz",
     "e42c7cbcb34ea73ed05d79eff4e222d8852caf412c859a94a7feb03ec42d0648"),
    ("Helicobacter_pylori_G27", "Helicobacter", "H.Pylori/references/G27.fasta.gz",
     "80dd2ad4125b47fa644350cec0bee7bf3956e379bf3e3e97a25e9c17ba297658"),
    ("Vibrio_cholerae_O395", "Vibrio", "V.Cholerae/references/O395.fasta.gz",
     "3ecf6fc1bfac8787e560fe4c9965d1248bb2de1987d0cb7eb5470f01a1ca8772"),
)
# name, genus, path inside the installed pyrodigal package, sha256 of the .fna.gz
PYRODIGAL_DATA = (
    ("Corynebacterium_diphtheriae_NCTC11397", "Corynebacterium",
     "tests/data/GCF_001457455.1_NCTC11397_genomic.fna.gz",
     "e9f88cc1a5c1f0e10f372df91852e44630cbeb1d424a34566ed159e5e94850b3"),
)
VALIDATION = ("genomes/bacteria/Brucella_melitensis_16M.gbff.gz",
              "genomes/bacteria/Haemophilus_influenzae_Rd_KW20.gbff.gz")
CONTIG = 10_000


def fetch(cache: Path, package: str = PACKAGE, version: str = VERSION, base: str = BASE) -> Path:
    """The Debian package ``package`` ``version`` unpacked under ``cache`` (downloaded with
    ``apt-get download`` and unpacked on first use; ``base`` is a folder it must hold)."""
    root = cache / f"{package}_{version}"
    if (root / base).is_dir():
        return root
    cache.mkdir(parents=True, exist_ok=True)
    # a version with an epoch (1:1.0.3-1) is saved as 1%3a1.0.3-1
    stem = f"{package}_{version.replace(':', '%3a')}"
    debs = sorted(cache.glob(f"{stem}_*.deb"))
    if not debs:
        if not shutil.which("apt-get"):
            sys.exit(f"needs {package} {version}: put its .deb in {cache} (no apt-get here)")
        subprocess.run(["apt-get", "download", f"{package}={version}"], cwd=cache, check=True)
        debs = sorted(cache.glob(f"{stem}_*.deb"))
    subprocess.run(["dpkg-deb", "-x", str(debs[0]), str(root)], check=True)
    return root


def check_sha256(path: Path, sha256: str) -> Path:
    """``path``, once its sha256 is checked to be ``sha256`` (else the script exits)."""
    got = hashlib.sha256(path.read_bytes()).hexdigest()
    if got != sha256:
        sys.exit(f"{path}: sha256 {got}, expected {sha256}")
    return path


def read_checked(path: Path, sha256: str) -> list[tuple[str, bytes]]:
    """Records of a FASTA file whose sha256 must be ``sha256``."""
    return list(iter_records(check_sha256(path, sha256)))


def timed(fn, records):
    t0 = time.perf_counter()
    calls = fn(records)
    return calls, time.perf_counter() - t0


def compare(name, kind, role, records) -> list[list]:
    gc = sum(s.count(b"G") + s.count(b"C") for _, s in records) / sum(len(s) for _, s in records)
    reference, ref_wall = timed(prodigal_calls, records)
    rows = []
    kb = f"{CONTIG // 1000}-kb contigs"
    no_scorer = DecoderParams(orf_scorer=False)
    tools = {"whole": (("genoctx", lambda r: call_bacterial(r)[0]), ("Prodigal", prodigal_calls),
                       ("genoctx, no ORF scorer",
                        lambda r: call_bacterial(r, params=no_scorer)[0])),
             kb: (("genoctx", lambda r: call_bacterial(r)[0]), ("Prodigal", prodigal_calls)),
             f"{kb}, each alone": (("genoctx", lambda r: call_bacterial(r, procedure="meta")[0]),
                                   ("Prodigal", prodigal_meta))}
    for case, pair in tools.items():
        if case == "whole":
            contigs, ref = records, reference
        else:
            contigs, ref = fragment(records, reference, CONTIG)
        for tool, fn in pair:
            if case == "whole" and tool == "Prodigal":
                calls, wall = reference, ref_wall
            else:
                calls, wall = timed(fn, contigs)
            calls = [g for g in calls if not g.partial[1]]  # no stop codon: no stop to match
            m = gene_metrics(calls, ref)
            row = [name, kind, role, f"{gc:.3f}", case, tool, m.n_true, m.n_pred,
                   f"{m.sensitivity:.4f}", f"{m.precision:.4f}", f"{m.start_agreement:.4f}",
                   f"{wall:.1f}"]
            print("\t".join(map(str, row)), flush=True)
            rows.append(row)
    return rows


def genome_args(doc: str) -> argparse.ArgumentParser:
    """The options of a script over :func:`genomes` (``doc``: its docstring)."""
    ap = argparse.ArgumentParser(description=doc.splitlines()[0])
    ap.add_argument("--cache", default="results/unseen", help="where the package is kept")
    ap.add_argument("--data-root", default=None, help="for the validation rows (skipped without)")
    ap.add_argument("--no-write", action="store_true", help="print only; leave docs alone")
    return ap


def genomes(cache: Path, data_root: str | None):
    """(name, genus, role, records) of each genome compared: the unseen ones, then the
    validation ones when a data root is found (they are for scale only)."""
    pkg = fetch(cache) / BASE
    for name, genus, rel, sha in UNSEEN:
        yield name, genus, "unseen genus", read_checked(pkg / rel, sha)
    import pyrodigal

    for name, genus, rel, sha in PYRODIGAL_DATA:
        path = Path(pyrodigal.__file__).parent / rel
        if not path.is_file():
            print(f"no {name} row: pyrodigal {pyrodigal.__version__} lacks {rel}", file=sys.stderr)
            continue
        yield name, genus, "unseen phylum", read_checked(path, sha)
    try:
        root = resolve_data_root(data_root)
    except Exception as err:  # noqa: BLE001 — the validation rows are for scale only
        print(f"no validation rows: {err}", file=sys.stderr)
        return
    manifest = load_manifest(root)
    for rel in VALIDATION:
        records = [(c, s) for c, s in read_sequences_genbank(root / rel) if len(s)]
        name = Path(rel).name.split(".gbff")[0]
        yield name, name.split("_")[0], manifest[rel].role, records


def main(argv=None) -> None:
    args = genome_args(__doc__).parse_args(argv)
    rows = []
    for name, genus, role, records in genomes(Path(args.cache), args.data_root):
        rows += compare(name, genus, role, records)
    headers = ["genome", "genus", "role", "G+C", "case", "tool", "reference genes",
               "calls", "share of Prodigal's found", "share of calls Prodigal makes",
               "same start", "wall s"]
    body = (section_head("Gene calling on genera genoctx never saw: agreement with Prodigal",
                         __file__, argv)
            + "Reference: Prodigal's calls on the whole genome (pyrodigal, trained on it); match "
            "= contig + strand + stop; `same start` among matches. Agreement with Prodigal is "
            "not accuracy (the curated validation genomes are scored in the `genecall` "
            "section): the Prodigal rows of the whole-genome case are the reference itself. "
            "Cases: the whole genome; its records cut into 10-kb contigs given together (a "
            "draft); the same contigs each decoded alone from pre-trained models (genoctx "
            "`--procedure meta`, Prodigal `-p meta`); on whole genomes genoctx also runs "
            "without its cross-genome ORF scorer. A reference gene that starts in an "
            "earlier contig is cut at its first whole codon. "
            f"Unseen genomes: NCBI records from the Debian package {PACKAGE} {VERSION} and "
            "the C. diphtheriae genome pyrodigal ships as test data (Actinomycetota, a phylum "
            "the train genomes lack), sha256-checked (the script's docstring). genoctx = "
            "`call_bacterial` (as `genoctx annotate --model none`), its ORF scorer fitted on 13 "
            "train genomes of 7 other genera, its model bank on 17 of 8 (three phyla).\n\n"
            + md_table(headers, rows))
    if not args.no_write:
        write_section("genecall-unseen", body)


if __name__ == "__main__":
    main()
