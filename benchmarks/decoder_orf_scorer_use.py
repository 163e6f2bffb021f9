"""Where does the cross-genome ORF scorer help? Held out by species, whole genomes and short regions.

The ORF scorer (``genoctx.heads.orf_scorer``) adds a bounded term, learnt on the train genomes,
to each ORF's gene log-odds after the decoder's last training round. This script measures what
that term is worth on genomes the scorer did not see, in the two ways the decoder runs:

1. ``single`` — a whole train genome, statistics self-trained on it, decoded with a scorer
   fitted on the *other* species' genomes (each species one unit of weight) and without any
   scorer (as ``decoder_orf_features.py``; every train genome);
2. ``meta`` — windows of ``--sizes`` bases cut from the genomes of ``genecall_regions.py
   --held-out``, each decoded on its own from the model bank without the genome's genus
   (Escherichia and Shigella count as one), the scorer fitted without its species, and
   without any scorer. The RNA-gene finders are not run (they would drop the same CDS calls
   from both); truth, windows and matching are those of ``genecall_regions.py``.

Gene-level sensitivity / precision / F1 (strand + stop), per genome and size, and their means.
Reads only train-role genomes. About 15 minutes on 2 cores. Run:
``python benchmarks/decoder_orf_scorer_use.py [--sizes 5000 20000 50000 100000] [--windows 12]
[--no-write]`` (writes the ``decoder-orf-scorer-use`` section of docs/benchmarks.md).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

# Put this folder last on the path: a sibling script named like a stdlib module (tokenize.py)
# must not shadow the standard library.
_HERE = Path(__file__).resolve().parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != _HERE] + [str(_HERE)]
os.environ.setdefault("OMP_NUM_THREADS", "1")

import argparse

import numpy as np
from _report import md_table, section_head, write_section
from decoder_orf_classifier import decoded_train_genomes
from decoder_orf_features import decode_with
from genecall_regions import TRAIN_DEV, genus, windows

from genoctx.eval.metrics import gene_metrics
from genoctx.heads import orf_scorer as osc
from genoctx.heads.annotate import call_bacterial
from genoctx.heads.decoder import DecoderParams
from genoctx.heads.decoder_fit import species_key, species_weights
from genoctx.heads.meta_models import default_bank
from genoctx.io.annotation import read_sequences_genbank
from genoctx.io.dataroot import resolve_data_root


def f3(m) -> str:
    return f"{m.sensitivity:.4f} / {m.precision:.4f} / {m.f1:.4f}"


def meta_calls(pick, bank, scorer):
    """Calls of each window decoded alone under ``meta`` with ``scorer`` as the ORF scorer
    (None: without one); calls running off a window's 3' end are left out."""
    params = DecoderParams(orf_scorer=scorer is not None)
    shipped = osc.default_scorer
    osc.default_scorer = lambda: scorer  # what the decoder's last step loads
    try:
        calls = []
        for c in pick:
            got = call_bacterial([c], procedure="meta", bank=bank, params=params, rna="none")[0]
            calls += [g for g in got if not g.partial[1]]
    finally:
        osc.default_scorer = shipped
    return calls


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", nargs="*", type=int, default=[5_000, 20_000, 50_000, 100_000])
    ap.add_argument("--windows", type=int, default=12, help="windows per genome and size")
    ap.add_argument("--no-write", action="store_true", help="print only; leave docs alone")
    args = ap.parse_args(argv)
    data, held = decoded_train_genomes(["--all"])
    weights = dict(zip(data, species_weights(list(data))))
    scorers = {}

    def held_out_scorer(name: str) -> osc.OrfScorer:
        key = species_key(name)
        if key not in scorers:
            scorers[key] = osc.fit_scorer([(data[n][0], data[n][1], weights[n]) for n in data
                                           if species_key(n) != key])
        return scorers[key]

    single_rows, sums = [], np.zeros((2, 3))
    for name in held:
        _, _, d, _, truth = data[name]
        ms = [gene_metrics(decode_with(d, s), truth) for s in (None, held_out_scorer(name))]
        for k, m in enumerate(ms):
            sums[k] += (m.sensitivity, m.precision, m.f1)
        row = [name, *(f3(m) for m in ms), f"{ms[1].f1 - ms[0].f1:+.4f}"]
        print("\t".join(row), flush=True)
        single_rows.append(row)
    mean = sums / len(held)
    single_rows.append(["mean", *(" / ".join(f"{v:.4f}" for v in r) for r in mean),
                        f"{mean[1, 2] - mean[0, 2]:+.4f}"])

    root = resolve_data_root(None)
    full_bank = default_bank()
    meta_rows, by_size = [], {s: np.zeros((2, 3)) for s in args.sizes}
    counts = dict.fromkeys(args.sizes, 0)
    for rel in TRAIN_DEV:
        name = Path(rel).name.removesuffix(".gbff.gz")
        bank = tuple(m for m in full_bank if genus(m.name) != genus(rel))
        records = [(c, s) for c, s in read_sequences_genbank(root / rel) if len(s)]
        truth = data[name][4]
        for size in args.sizes:
            pick, genes = windows(records, truth, size, args.windows)
            if not pick:
                continue
            ms = [gene_metrics(meta_calls(pick, bank, s), genes)
                  for s in (None, held_out_scorer(name))]
            for k, m in enumerate(ms):
                by_size[size][k] += (m.sensitivity, m.precision, m.f1)
            counts[size] += 1
            row = [name, f"{size:,}", len(pick), *(f3(m) for m in ms),
                   f"{ms[1].f1 - ms[0].f1:+.4f}"]
            print("\t".join(map(str, row)), flush=True)
            meta_rows.append(row)
    for size in args.sizes:
        if counts[size]:
            m = by_size[size] / counts[size]
            meta_rows.append(["mean", f"{size:,}", "", *(" / ".join(f"{v:.4f}" for v in r)
                                                          for r in m),
                              f"{m[1, 2] - m[0, 2]:+.4f}"])
            print("\t".join(map(str, meta_rows[-1])), flush=True)

    heads = ["no scorer", "scorer fitted without the species", "F1 change"]
    body = (section_head("Where the ORF scorer helps: held out by species", __file__, argv)
            + "Sensitivity / precision / F1, gene level (strand + stop). The scorer is fitted on "
            "the other species' train genomes and used as shipped (3 × the bounded residual). "
            "Whole genomes: statistics self-trained on each (`single`). Windows: each decoded "
            "alone (`meta`) from the model bank without the genome's genus, no RNA-gene "
            "finders; calls running off a window's 3' end left out.\n\n"
            + md_table(["whole train genome (single)", *heads], single_rows)
            + "\n\n" + md_table(["genome (meta)", "window bp", "windows", *heads], meta_rows))
    if not args.no_write:
        write_section("decoder-orf-scorer-use", body)


if __name__ == "__main__":
    main()
