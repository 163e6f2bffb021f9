"""How GCX_DLL depends on an indel's length: SNVs, and insertions and deletions of 1 and 3
bases, at random positions of the shipped example (pPCP1), scored by ``genoctx score-variants``
with the embedded model.

GCX_DLL is the difference of whole-window log-likelihoods: an insertion adds terms (each
about −1.4 nats, log 1/4, for a base the model cannot predict) and a deletion removes them, so
indels are shifted by their length before any effect. This prints that shift, per kind, and
writes the ``variant_length_bias`` section of docs/benchmarks.md.

Run: ``python benchmarks/variant_length_bias.py [--per-kind N] [--seed S] [--context N]
[--no-write]``
"""

from __future__ import annotations

import sys
from pathlib import Path

# Put this folder last on the path: a sibling script named like a stdlib module (tokenize.py)
# must not shadow the standard library.
_HERE = Path(__file__).resolve().parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != _HERE] + [str(_HERE)]

import argparse
import random
import statistics
import tempfile

import pysam
from _report import md_table, section_head, write_section

from genoctx.cli.score_variants import score_vcf
from genoctx.io.fasta import FastaFile

EXAMPLE = _HERE.parent / "data" / "examples" / "Yersinia_pestis_pPCP1_NC_005816.fna"
KINDS = ("SNV", "insertion 1 bp", "deletion 1 bp", "insertion 3 bp", "deletion 3 bp")


def write_vcf(path: Path, fasta: Path, per_kind: int, seed: int, margin: int) -> None:
    """``per_kind`` variants of every kind at random positions (ID = the kind)."""
    fa = FastaFile(fasta)
    contig = fa.contigs[0]
    seq = fa.fetch(contig).decode().upper()
    rng = random.Random(seed)
    records = []
    for kind in KINDS:
        for _ in range(per_kind):
            p = rng.randrange(margin, len(seq) - margin)
            ref = seq[p]
            k = int(kind.split()[1]) if kind != "SNV" else 0
            if kind == "SNV":
                records.append((p, ref, rng.choice([b for b in "ACGT" if b != ref]), kind))
            elif kind.startswith("insertion"):
                records.append((p, ref, ref + "".join(rng.choice("ACGT") for _ in range(k)), kind))
            else:
                records.append((p, seq[p:p + 1 + k], ref, kind))
    lines = ["##fileformat=VCFv4.2", f"##contig=<ID={contig},length={len(seq)}>",
             "#CHROM\tPOS\tID\tREF\tALT\tQUAL\tFILTER\tINFO"]
    lines += [f"{contig}\t{p + 1}\t{kind.replace(' ', '_')}\t{r}\t{a}\t.\t.\t."
              for p, r, a, kind in sorted(records)]
    path.write_text("\n".join(lines) + "\n")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--per-kind", type=int, default=40)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--context", type=int, default=1024)
    ap.add_argument("--no-write", action="store_true")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        vcf, out = Path(tmp) / "in.vcf", Path(tmp) / "out.vcf"
        write_vcf(vcf, EXAMPLE, args.per_kind, args.seed, margin=args.context)
        score_vcf(vcf, EXAMPLE, out, context=args.context, quiet=True)
        by_kind: dict[str, list[float]] = {}
        with pysam.VariantFile(str(out)) as vf:
            for rec in vf:
                by_kind.setdefault(rec.id.replace("_", " "), []).append(rec.info["GCX_DLL"][0])
    rows = [[kind, len(v), f"{statistics.mean(v):+.2f}", f"{statistics.median(v):+.2f}",
             f"{min(v):+.2f} .. {max(v):+.2f}"] for kind in KINDS if (v := by_kind.get(kind))]
    table = md_table(["variant", "n", "mean GCX_DLL", "median", "range"], rows)
    print(table)
    if not args.no_write:
        body = section_head("variant_length_bias — GCX_DLL of indels by length", __file__)
        body += ("Random SNVs and indels at positions of pPCP1 (9.6 kb, the shipped example), "
                 f"embedded model, `--context {args.context}`. Compare GCX_DLL between variants "
                 "of the same length change: an insertion's score is lowered, a deletion's "
                 "raised, by about its length in nats, whatever its effect.\n\n" + table + "\n")
        write_section("variant_length_bias", body)


if __name__ == "__main__":
    main()
