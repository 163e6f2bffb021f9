"""A gene bias at the final decode, swept on every TRAIN genome: which bias suits which G+C?

Each train genome is decoded as shipped (self-trained, then the ORF scorer's term at weight 3),
with the scorer fitted on the other species only (as ``decoder_orf_classifier.py`` does), and
a constant bias added to every ORF's gene log-odds in the final decode (negative: fewer genes).
Prints sensitivity / precision / F1 (gene level: strand + stop) per genome and bias, the
genome's G+C and the bias with the best F1, and the means. This is what set the decoder's
G+C-rich bias (``genoctx.heads.decoder.high_gc_bias``); the "shipped" column decodes with it.
About 8 minutes on one core. Run: ``python benchmarks/decoder_gene_bias.py [--biases B ...]
[--no-write]`` (writes the ``decoder-gene-bias`` section of docs/benchmarks.md).
"""

from __future__ import annotations

import sys
from pathlib import Path

_HERE = Path(__file__).resolve().parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != _HERE] + [str(_HERE)]

import argparse

import numpy as np
from _report import md_table, section_head, write_section
from decoder_orf_classifier import _Fixed, decoded_train_genomes

from genoctx.eval.metrics import gene_metrics
from genoctx.heads.decoder import HIGH_GC_BIAS, high_gc_bias
from genoctx.heads.decoder_fit import species_key, species_weights
from genoctx.heads.orf_scorer import SKIP_MARGIN, fit_scorer

BIASES = (-24.0, -16.0, -12.0, -8.0, -5.0, -3.0, -1.5, 0.0, 2.0)


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--biases", type=float, nargs="+", default=list(BIASES))
    ap.add_argument("--no-write", action="store_true", help="print only; leave docs alone")
    args = ap.parse_args(argv)
    biases = list(args.biases)
    data, held = decoded_train_genomes(["--all"])
    weights = dict(zip(data, species_weights(list(data))))
    total = np.zeros((len(biases) + 1, 3))
    rows = []
    for name in held:
        others = [n for n in data if species_key(n) != species_key(name)]
        scorer = fit_scorer([(data[n][0], data[n][1], weights[n]) for n in others])
        x, _, d, _, truth = data[name]
        z = scorer.trees.decision_function(x)
        a, b = scorer.platt
        logit = x[:, 0]
        adj = scorer.weight * np.clip(z - (a * logit + b), -scorer.clip, scorer.clip)
        adj[logit <= -(scorer.weight * scorer.clip + SKIP_MARGIN)] = 0.0  # as shipped
        shipped = high_gc_bias(d.gc)
        f1s = []
        for i, bias in enumerate([*biases, shipped]):
            d.set_orf_adjust(_Fixed(adj + bias))
            m = gene_metrics(d.calls(d.decode()), truth).as_dict()
            total[i] += [m["sensitivity"], m["precision"], m["f1"]]
            f1s.append(m["f1"])
        d.orf_adjust = None
        best = biases[int(np.argmax(f1s[:-1]))]
        rows.append([name, f"{d.gc:.3f}", *(f"{f:.4f}" for f in f1s[:-1]), f"{best:g}",
                     f"{shipped:.1f}: {f1s[-1]:.4f}"])
        print("\t".join(rows[-1]), flush=True)
    mean = total / len(held)
    rows.append(["mean (sensitivity / precision / F1)", "",
                 *(" / ".join(f"{t:.4f}" for t in r) for r in mean[:-1]), "",
                 " / ".join(f"{t:.4f}" for t in mean[-1])])
    print("\t".join(rows[-1]))
    headers = (["genome", "G+C"] + [f"F1 at {b:g}" for b in biases] + ["best bias", "shipped"])
    body = (section_head("A gene bias at the final decode, by G+C (train genomes, scorer held out)",
                         __file__, argv)
            + "Each train genome self-trained by the decoder, the ORF scorer fitted on the other "
            "species, and a constant bias (nats) added to every ORF's gene log-odds in the final "
            "decode. Gene level: match = strand + stop. `shipped` = the bias "
            f"`genoctx.heads.decoder.high_gc_bias` gives the genome's G+C (at most {HIGH_GC_BIAS:g}) "
            "and its F1.\n\n" + md_table(headers, rows))
    if not args.no_write:
        write_section("decoder-gene-bias", body)


if __name__ == "__main__":
    main()
