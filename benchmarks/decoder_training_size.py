"""From how many bases Prodigal's training pays: windows of train genomes, self-trained alone.

The fourth-revision decoder trains as Prodigal does (codon-pair table counted once on the
GC-frame programme's genes, start model over every ORF) on inputs of at least
``PRODIGAL_TRAINING_MIN_BP`` bases without a bank model; below that, both are fitted on the
called genes. This sets that limit: windows of each size are cut from the six development
train genomes (genecall_regions.py's ``TRAIN_DEV``; Paracoccus has no record that long) and
each is decoded on its own with ``procedure="single"`` (no RNA genes), under:

* ``prodigal`` — Prodigal's training at every size (the limit set to 0);
* ``calls`` — both fitted on the called genes at every size (``pair_table="calls"``,
  ``start_training="calls"``);
* ``third`` — as ``calls`` with the third revision's codon-pair share of 0.5.

Truth and matching as in genecall_fragments.py. Means are over the genomes with windows of
that size.

Run: ``python benchmarks/decoder_training_size.py [--sizes 200000 250000 300000 400000 800000]
[--no-write]`` (writes the ``decoder-training-size`` section of docs/benchmarks.md; about
10 minutes on 2 cores).
"""

from __future__ import annotations

import sys
from pathlib import Path

# Put this folder last on the path: a sibling script named like a stdlib module (tokenize.py)
# must not shadow the standard library.
_HERE = Path(__file__).resolve().parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != _HERE] + [str(_HERE)]

import numpy as np
from _report import machine, md_table, write_section
from genecall import parser
from genecall_regions import TRAIN_DEV, windows

import genoctx.heads.decoder as dec
from genoctx.eval.metrics import gene_metrics
from genoctx.heads.annotate import call_bacterial
from genoctx.heads.decoder import DecoderParams
from genoctx.io.annotation import read_genes, read_sequences_genbank
from genoctx.io.dataroot import resolve_data_root

CALLS = DecoderParams(pair_table="calls", start_training="calls")
VARIANTS = {"prodigal": (DecoderParams(), 0, dec.PAIR_SHARE),
            "calls": (CALLS, None, dec.PAIR_SHARE),
            "third": (CALLS, None, 0.5)}
WINDOWS = 2_000_000  # bases of windows per genome and size (at most 10 windows)


def main(argv=None) -> None:
    ap = parser(__doc__)
    ap.add_argument("--sizes", nargs="*", type=int,
                    default=[200_000, 250_000, 300_000, 400_000, 800_000])
    args = ap.parse_args(argv)
    root = resolve_data_root(args.data_root)
    limit, share = dec.PRODIGAL_TRAINING_MIN_BP, dec.PAIR_SHARE
    per: dict[tuple[int, str], list] = {}
    try:
        for rel in TRAIN_DEV:
            records = [(c, s) for c, s in read_sequences_genbank(root / rel) if len(s)]
            truth = read_genes(root / rel)
            for size in args.sizes:
                pick, genes = windows(records, truth, size, min(10, max(1, WINDOWS // size)))
                if not pick:
                    continue
                for name, (params, min_bp, pair_share) in VARIANTS.items():
                    dec.PRODIGAL_TRAINING_MIN_BP = limit if min_bp is None else min_bp
                    dec.PAIR_SHARE = pair_share
                    calls = []
                    for c in pick:
                        calls += [g for g in call_bacterial([c], procedure="single", params=params,
                                                            rna="none")[0] if not g.partial[1]]
                    m = gene_metrics(calls, genes)
                    v = (m.sensitivity, m.precision, m.f1, m.start_agreement)
                    per.setdefault((size, name), []).append(v)
                    print(Path(rel).name.split(".gbff")[0], size, len(pick), name,
                          " ".join(f"{x:.4f}" for x in v), flush=True)
    finally:
        dec.PRODIGAL_TRAINING_MIN_BP, dec.PAIR_SHARE = limit, share
    rows = []
    for (size, name), v in sorted(per.items()):
        mean = np.mean(v, axis=0)
        rows.append([f"{size:,}", name, len(v)] + [f"{x:.4f}" for x in mean])
        print("MEAN", size, name, " ".join(f"{x:.4f}" for x in mean), flush=True)
    body = (
        "## Decoder: from how many bases Prodigal's training pays\n\n"
        f"Command: `python benchmarks/decoder_training_size.py`\n\n"
        f"Machine: {machine()}\n\n"
        "Windows of the development train genomes, each self-trained alone (`single`, no RNA "
        "genes); prodigal = codon-pair table from the GC-frame programme and start model over "
        "every ORF at any size; calls = both fitted on the called genes; third = calls at the "
        f"third revision's codon-pair share 0.5. Shipped: prodigal from {limit:,} bp "
        "(`PRODIGAL_TRAINING_MIN_BP`), calls below. Means over the genomes with windows of "
        "the size.\n\n"
        + md_table(["window bp", "training", "genomes", "sensitivity", "precision", "F1",
                    "start agreement"], rows))
    if not args.no_write:
        write_section("decoder-training-size", body)


if __name__ == "__main__":
    main()
