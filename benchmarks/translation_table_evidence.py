"""How often TGA stands for tryptophan inside genes: the evidence a genetic-code-4 detector
would read, on the one code-4 sequence at hand and on the train genomes.

In genetic code 4 (Mycoplasma, Spiroplasma, Ureaplasma) TGA is read as tryptophan, and those
genomes use it for most of their Trp codons. Decoding with table 4 reads TGA through, so the
share of TGA among the Trp codons (TGA + TGG) inside the called genes tells the two codes
apart only where it is high. This prints that share, and TGA per 1,000 codons:

* on the 80-kb contig of pyrodigal's test data (``SRR492066.fna.gz``) that the shipped tests
  use as their code-4 example: in Prodigal's own code-4 genes (metagenomic mode picks a
  Mycoplasma model for it), and in genoctx's table-4 calls;
* on each train genome (``genomes/bacteria``, role train) decoded with table 4: code-11
  genomes, where every TGA inside a call is a stop read through.

Nothing is fitted or scored; the validation genomes are not read. Run:
``python benchmarks/translation_table_evidence.py [--data-root DIR] [--no-write]`` (about
40 s; writes the ``translation_table_evidence`` section of docs/benchmarks.md).
"""

from __future__ import annotations

import sys
from pathlib import Path

# Put this folder last on the path: a sibling script named like a stdlib module (tokenize.py)
# must not shadow the standard library.
_HERE = Path(__file__).resolve().parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != _HERE] + [str(_HERE)]

import argparse
import gzip

from _report import md_table, section_head, write_section

from genoctx.heads.decoder import DecoderParams, call_genes_multi
from genoctx.io.annotation import read_sequences_genbank
from genoctx.io.dataroot import resolve_data_root, role_of

COMPLEMENT = bytes.maketrans(b"ACGT", b"TGCA")


def trp_codons(seq: bytes, genes) -> tuple[int, int, int]:
    """(TGA, TGG, codons) inside ``genes`` ((start, end, strand) on ``seq``, upper case; the
    stop codon is not counted)."""
    tga = tgg = n = 0
    for start, end, strand in genes:
        piece = seq[start:end]
        if strand < 0:
            piece = piece.translate(COMPLEMENT)[::-1]
        codons = [piece[i:i + 3] for i in range(0, len(piece) - 3, 3)]
        tga += codons.count(b"TGA")
        tgg += codons.count(b"TGG")
        n += len(codons)
    return tga, tgg, n


def row(label: str, tga: int, tgg: int, n: int, genes: int) -> list:
    return [label, genes, f"{n:,}", f"{tga / max(tga + tgg, 1):.3f}", f"{1000 * tga / n:.2f}",
            f"{1000 * tgg / n:.2f}"]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data-root", default=None)
    ap.add_argument("--no-write", action="store_true")
    args = ap.parse_args()
    import pyrodigal

    rows = []
    contig = Path(pyrodigal.__file__).parent / "tests" / "data" / "SRR492066.fna.gz"
    if contig.is_file():
        with gzip.open(contig, "rt") as fh:
            lines = fh.read().splitlines()
        name, seq = lines[0][1:].split()[0], "".join(lines[1:]).upper().encode()
        genes = pyrodigal.GeneFinder(meta=True, closed=False).find_genes(seq)
        table = genes[0].translation_table if genes else None
        prod = [(g.begin - 1, g.end, g.strand) for g in genes]
        rows.append(row(f"SRR492066 contig: Prodigal meta (code {table})",
                        *trp_codons(seq, prod), len(prod)))
        calls = call_genes_multi([(name, seq)], params=DecoderParams(translation_table=4))
        ours = [(c.start, c.end, c.strand) for c in calls if c.end <= len(seq)]
        rows.append(row("SRR492066 contig: genoctx table 4", *trp_codons(seq, ours), len(ours)))
    else:
        print(f"{contig} is not installed with pyrodigal: no contig rows", file=sys.stderr)
    root = resolve_data_root(args.data_root)
    for path in sorted((root / "genomes" / "bacteria").glob("*.gbff.gz")):
        if role_of(path, root) != "train":
            continue
        records = [(c, s) for c, s in read_sequences_genbank(path) if len(s)]
        calls = call_genes_multi(records, params=DecoderParams(translation_table=4))
        counts = [0, 0, 0]
        for contig_name, seq in records:
            mine = [(c.start, c.end, c.strand) for c in calls
                    if c.contig == contig_name and c.end <= len(seq)]
            for i, v in enumerate(trp_codons(seq.upper(), mine)):
                counts[i] += v
        label = path.name.removesuffix(".gbff.gz")
        rows.append(row(f"{label}: genoctx table 4 (code 11 genome)", *counts, len(calls)))
        print(rows[-1], flush=True)
    table = md_table(["sequence: calls", "genes", "codons", "TGA / (TGA + TGG)",
                      "TGA per 1,000 codons", "TGG per 1,000 codons"], rows)
    print(table)
    if not args.no_write:
        body = section_head("translation_table_evidence — TGA among the Trp codons", __file__)
        body += ("TGA inside genes (stop codon excluded) when TGA is read as tryptophan. In a "
                 "code-11 genome decoded with table 4 every such TGA is a stop read through; a "
                 "genome that really uses code 4 reads most of its tryptophans as TGA. The "
                 "SRR492066 contig, the code-4 example of the tests, uses TGA for about one "
                 "Trp codon in seven, no more than the read-through of the high-G+C train "
                 "genomes: it is no evidence that a detector works, and no code-4 genome is in "
                 "the data root to fit or check one on.\n\n" + table + "\n")
        write_section("translation_table_evidence", body)


if __name__ == "__main__":
    main()
