"""Start agreement of genoctx and Prodigal on the genes both find, and who is right where they differ.

Start agreement (genoctx.eval.metrics.gene_metrics) is counted over each tool's own matched genes
(match = contig + strand + stop), so a tool that finds more short, weak genes, whose starts are
harder, is measured on a harder set. This script separates that from start choice itself: for
each genome it prints each tool's agreement on its own matches, on the genes both tools match,
and on the genes only it matches; then, among the common genes where exactly one tool has the
annotated start, how often that tool is genoctx and how often Prodigal.

genoctx = ``call_genes_multi(records)`` (the shipped decoder, sequence only, as
``genoctx annotate --model none`` calls genes before the RNA-overlap filter); Prodigal =
pyrodigal trained on the genome. Measurement only: nothing is fitted. Run:
``python benchmarks/start_agreement_common.py [GENOME ...]`` (file names under
genomes/bacteria/ without ``.gbff.gz``; default: the two validation genomes), about 30 s a genome.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

# Put this folder last on the path: a sibling script named like a stdlib module (tokenize.py)
# must not shadow the standard library.
_HERE = Path(__file__).resolve().parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != _HERE] + [str(_HERE)]
os.environ.setdefault("OMP_NUM_THREADS", "1")

from genoctx.eval.benchmarks.annotation_bacteria import prodigal_calls
from genoctx.eval.metrics import _start_of, _stop_key
from genoctx.heads.decoder import call_genes_multi
from genoctx.io.annotation import read_genes, read_sequences_genbank
from genoctx.io.dataroot import resolve_data_root

DEFAULT = ("Brucella_melitensis_16M", "Haemophilus_influenzae_Rd_KW20")


def _share(hits: list[bool]) -> str:
    return f"{sum(hits) / len(hits):.4f}" if hits else "-"


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("genomes", nargs="*", default=list(DEFAULT))
    ap.add_argument("--data-root", default=None)
    args = ap.parse_args(argv)
    root = resolve_data_root(args.data_root)
    print("genome\ttool\tmatched\tagree_own\tcommon\tagree_common\tonly\tagree_only\t"
          "right_alone_on_common")
    for name in args.genomes:
        rel = root / f"genomes/bacteria/{name}.gbff.gz"
        if not rel.is_file():
            sys.exit(f"{rel} not found")
        records = list(read_sequences_genbank(rel))
        true: dict[tuple, set] = {}
        for g in read_genes(rel):
            true.setdefault(_stop_key(g), set()).add(_start_of(g))
        starts = {}
        for tool, calls in (("genoctx", call_genes_multi(records, None)),
                            ("prodigal", prodigal_calls(records))):
            starts[tool] = {}
            for g in calls:
                if _stop_key(g) in true:
                    starts[tool].setdefault(_stop_key(g), _start_of(g))
        common = set(starts["genoctx"]) & set(starts["prodigal"])
        right = {t: {k for k, s in v.items() if s in true[k]} for t, v in starts.items()}
        for tool, own in starts.items():
            other = "prodigal" if tool == "genoctx" else "genoctx"
            only = set(own) - common
            alone = len((right[tool] - right[other]) & common)
            print(f"{name}\t{tool}\t{len(own)}\t{_share([k in right[tool] for k in own])}\t"
                  f"{len(common)}\t{_share([k in right[tool] for k in common])}\t{len(only)}\t"
                  f"{_share([k in right[tool] for k in only])}\t{alone}", flush=True)


if __name__ == "__main__":
    main()
