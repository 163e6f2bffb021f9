"""Which domain a genome's rRNA genes name: barrnap's archaeal against its bacterial profiles.

``genoctx annotate`` leaves its ORF scorer (fitted on bacteria) out when the genome's complete
16S and 23S rRNA genes all score higher with barrnap's archaeal profile of their kind than with
the bacterial one (:func:`genoctx.heads.rna_genes.rrna_domain`). This script shows, for every
genome at hand, what ``find_rrna`` marks: the complete 16S/23S genes scored, how many say
archaea, the bits of both profiles on each, and the verdict. Genomes: the four archaea,
B. japonicum and the two mycobacteria of ``genecall_curated_unseen.py``, the four unseen genera
of ``genecall_unseen.py`` (Debian packages, fetched into ``--cache``, and pyrodigal's test
genome), and every bacterium of
the data root (train and validation; only their rRNA genes are read, nothing is fitted).

Run: ``python benchmarks/rrna_domain.py [--cache DIR] [--data-root DIR] [--no-write]``
(writes the ``rrna-domain`` section of docs/benchmarks.md).
"""

from __future__ import annotations

import sys
from pathlib import Path

_HERE = Path(__file__).resolve().parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != _HERE] + [str(_HERE)]

import argparse
import time

from _report import md_table, section_head, write_section
from genecall_curated_unseen import curated_genomes
from genecall_unseen import BASE as UNSEEN_BASE
from genecall_unseen import PYRODIGAL_DATA, UNSEEN, fetch, read_checked

from genoctx.heads.rna_genes import find_rrna, rrna_domain
from genoctx.io.annotation import read_sequences
from genoctx.io.dataroot import load_manifest, resolve_data_root


def genomes(cache: Path, data_root: str | None):
    """(name, domain as annotated, where from, records) of each genome."""
    for name, domain, _, records, _ in curated_genomes(cache):
        yield name, domain, "unseen (cct-examples, tnseq-transit)", records
    pkg = fetch(cache) / UNSEEN_BASE
    for name, _, rel, sha in UNSEEN:
        yield name, "Bacteria", "unseen genus (ragout-examples)", read_checked(pkg / rel, sha)
    import pyrodigal

    for name, _, rel, sha in PYRODIGAL_DATA:
        path = Path(pyrodigal.__file__).parent / rel
        if path.is_file():
            yield name, "Bacteria", "unseen phylum (pyrodigal's test data)", read_checked(path, sha)
    root = resolve_data_root(data_root)
    for rel, e in sorted(load_manifest(root).items()):
        if rel.startswith("genomes/bacteria/"):
            yield Path(rel).name.split(".gbff")[0], "Bacteria", e.role, read_sequences(root / rel)


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cache", default="results/unseen", help="where the packages are kept")
    ap.add_argument("--data-root", default=None)
    ap.add_argument("--no-write", action="store_true", help="print only; leave docs alone")
    args = ap.parse_args(argv)
    rows, right, called = [], 0, 0
    for name, domain, source, records in genomes(Path(args.cache), args.data_root):
        t0 = time.perf_counter()
        rnas = find_rrna(records)
        wall = time.perf_counter() - t0
        scored = [r for r in rnas if "domain" in r.attrs]
        verdict = rrna_domain(rnas)
        if verdict is not None:
            called += 1
            right += verdict == domain.lower()
        bits = " ".join(f"{r.attrs['product'].split()[0]} {a:.0f}/{b:.0f}"
                        for r in scored for a, b in [r.attrs["domain_bits"]])
        row = [name, domain, source, len(rnas), len(scored),
               sum(r.attrs["domain"] == "archaea" for r in scored), bits or "–",
               verdict or "none (no complete 16S/23S)", f"{wall:.1f}"]
        print("\t".join(map(str, row)), flush=True)
        rows.append(row)
    body = (section_head("rRNA genes name the domain: barrnap's archaeal vs bacterial profiles",
                         __file__)
            + "Per genome: rRNA genes `find_rrna` finds, the complete 16S/23S genes it scores "
              "for their domain (at most 6), how many score higher with the archaeal profile, "
              "the bits (archaeal / bacterial profile) of each, and `rrna_domain`'s verdict; "
              "wall s = `find_rrna` on one process with the scoring. "
              f"Verdict right on {right} of the {called} genomes that have one.\n\n"
            + md_table(["genome", "annotated domain", "source / role", "rRNA genes",
                        "scored", "archaeal", "bits (arc / bac)", "verdict", "wall s"], rows))
    print(body)
    if not args.no_write:
        write_section("rrna-domain", body)


if __name__ == "__main__":
    main()
