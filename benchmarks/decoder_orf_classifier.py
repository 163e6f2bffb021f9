"""Would a supervised ORF scorer, trained across genomes, help the decoder? Leave one species out.

For every TRAIN genome the decoder (without the ORF scorer) self-trains as usual; then each ORF
(at its best start) becomes one row: the decoder's gene log-odds, its gene features, the
amino-acid composition of its translation (table 11), and its G+C and third-position G+C
against the genome's. Label: an annotated gene has that strand and stop. For each held-out
genome the ORF scorer (:func:`genoctx.heads.orf_scorer.fit_scorer`, gradient-boosted trees) is
fitted on the genomes of the *other* species (each species one unit of weight) and scores the
held-out ORFs.

Two uses of its log-odds z are measured on the held-out genome:

* ``replace`` — z (+ offset) replaces the decoder's gene log-odds in the dynamic programme;
* ``residual k`` — the decoder's log-odds plus k × clip(z − platt(log-odds), ±5), where
  platt is a one-feature logistic fit of the label on the decoder's log-odds: what the other
  features add, in the decoder's units. This is what ``genoctx annotate`` ships, with k = 3
  and the scorer fitted on all train genomes (``python -m genoctx.heads.orf_scorer``).

Prints ORF-level AUC (decoder log-odds vs classifier), and gene-level sensitivity / precision /
F1 per genome and their mean; then the score calibration: a Platt fit of "the call matches an
annotated gene" on the held-out calls of the shipped use (as decoder_dev.py --calibrate does on
in-sample calls), and how the shipped calibration and the refit fit them. Needs scikit-learn
(a genoctx dependency). About 5 minutes on one core. Run:
``python benchmarks/decoder_orf_classifier.py [--all | GENOME ...]`` (held-out genomes;
default: the five of decoder_dev.py; ``--all``: every train genome, about 8 minutes).
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

import dataclasses

import numpy as np
from decoder_dev import GENOMES, _calibration_rows

from genoctx.eval.metrics import gene_metrics
from genoctx.heads import decoder as dec
from genoctx.heads.decoder_fit import fit_logistic, species_key, species_weights
from genoctx.heads.orf_scorer import decoder_rows, fit_scorer
from genoctx.io.annotation import read_genes, read_sequences_genbank
from genoctx.io.dataroot import load_manifest, resolve_data_root

OFFSETS = (-1.0, 0.0)
KS = (1.0, 3.0, 6.0)
SHIPPED_WEIGHT = 3.0  # genoctx.heads.orf_scorer.OrfScorer.weight
COLS = ("sensitivity", "precision", "f1")


def decode_replaced(d: dec.GenomeDecoder, z: np.ndarray) -> list:
    """Decode with every ORF's gene log-odds replaced by ``z`` (rows as decoder_rows)."""
    base = np.concatenate([d.orf_table(si)[1] for si in range(len(d.strands))])
    d.set_orf_adjust(_Fixed(z - base))
    return d.decode()


@dataclasses.dataclass
class _Fixed:
    """A stand-in scorer whose adjustment is given."""
    adj: np.ndarray

    def adjustment(self, x):
        return self.adj


def decoded_train_genomes(held: list[str]) -> tuple[dict, list[str]]:
    """Every TRAIN genome self-trained by the decoder without the ORF scorer: ``{name: (rows,
    labels, decoder, chosen, annotated genes)}`` (rows and labels as ``decoder_rows``), and the
    held-out genomes named by ``held`` (``["--all"]``: every one; a name that is not a train
    genome exits)."""
    root = resolve_data_root(None)
    manifest = load_manifest(root)
    train = sorted(r for r, m in manifest.items()
                   if r.startswith("genomes/bacteria/") and r.endswith(".gbff.gz")
                   and m.role == "train")
    data = {}
    params = dec.DecoderParams(orf_scorer=False)
    for rel in train:  # only train-role genomes are ever read
        name = Path(rel).name.removesuffix(".gbff.gz")
        records = [(c, s) for c, s in read_sequences_genbank(root / rel) if len(s)]
        genes = read_genes(root / rel)
        d = dec.GenomeDecoder(records, None, params)
        chosen = d.train()
        x, y, _ = decoder_rows(d, [(g.contig, g.start, g.end, g.strand) for g in genes])
        data[name] = (x, y, d, chosen, genes)
        print(f"# {name}: {len(y)} ORFs, {int(y.sum())} annotated", flush=True)
    if held == ["--all"]:
        held = list(data)
    for name in held:
        if name not in data:
            sys.exit(f"{name} is not a train genome")
    return data, held


def held_out_use(rows: list[tuple[np.ndarray, np.ndarray, float]], x_held: np.ndarray,
                 y_held: np.ndarray, d: dec.GenomeDecoder, truth) -> list[float]:
    """Fit the scorer on ``rows`` ((features, labels, weight) of the other species), decode the
    held-out genome ``d`` with the shipped use of its term (3 × the bounded residual; ORFs too
    far below zero left alone) and return its sensitivity, precision, F1 and the ORF-level
    AUC of the trees on ``x_held`` (features of ``d``'s rows in ``rows``' layout)."""
    from sklearn.metrics import roc_auc_score

    from genoctx.heads.orf_scorer import SKIP_MARGIN

    scorer = fit_scorer(rows)
    z = scorer.trees.decision_function(x_held)
    a, b = scorer.platt
    logit = x_held[:, 0]
    adj = scorer.weight * np.clip(z - (a * logit + b), -scorer.clip, scorer.clip)
    adj[logit <= -(scorer.weight * scorer.clip + SKIP_MARGIN)] = 0.0  # as shipped
    d.set_orf_adjust(_Fixed(adj))
    m = gene_metrics(d.calls(d.decode()), truth).as_dict()
    d.orf_adjust = None
    return [m[c] for c in COLS] + [roc_auc_score(y_held, z)]


def main(argv=None) -> None:
    from sklearn.metrics import roc_auc_score

    held = (sys.argv[1:] if argv is None else argv) or list(GENOMES)
    data, held = decoded_train_genomes(held)
    variants = ["decoder"] + [f"replace{o:+g}" for o in OFFSETS] + [f"residual{k:g}" for k in KS]
    print("genome\tauc_decoder\tauc_trees\t" + "\t".join(
        f"{v}_{c}" for v in variants for c in COLS))
    sums = np.zeros((len(variants), len(COLS)))
    platt = []
    weights = dict(zip(data, species_weights(list(data))))
    for name in held:
        others = [n for n in data if species_key(n) != species_key(name)]
        scorer = fit_scorer([(data[n][0], data[n][1], weights[n]) for n in others])
        x, y, d, chosen, truth = data[name]
        z = scorer.trees.decision_function(x)
        scored = [d.calls(chosen)]
        scored += [d.calls(decode_replaced(d, z + o)) for o in OFFSETS]
        for k in KS:
            d.set_orf_adjust(dataclasses.replace(scorer, weight=k))
            scored.append(d.calls(d.decode()))
            if k == SHIPPED_WEIGHT:
                platt.append(_calibration_rows(scored[-1], truth))
        d.orf_adjust = None
        m = np.array([[gene_metrics(c, truth).as_dict()[col] for col in COLS] for c in scored])
        sums += m
        print(f"{name}\t{roc_auc_score(y, x[:, 0]):.4f}\t{roc_auc_score(y, z):.4f}\t"
              + "\t".join(f"{v:.4f}" for v in m.ravel()), flush=True)
    print("MEAN\t\t\t" + "\t".join(f"{v:.4f}" for v in (sums / len(held)).ravel()))
    # the score calibration, from held-out calls of the shipped use (each genome weighs the same)
    x, y, w = (np.concatenate(v) for v in zip(*platt))
    a, b = fit_logistic(x[:, None], y, w / w.sum(), l2=0.0)
    for label, (ca, cb) in (("shipped", dec.CALIBRATION), ("refit", (a, b))):
        p = 1.0 / (1.0 + np.exp(-(ca * x + cb)))
        brier = float(np.sum(w * (p - y) ** 2) / w.sum())
        print(f"calibration {label} (a, b) = ({ca:.4f}, {cb:.4f}): weighted Brier {brier:.4f}; "
              + ", ".join(f"p {p[m].mean():.3f} obs {y[m].mean():.3f} (n {m.sum()})"
                          for lo, hi in ((0, .8), (.8, .9), (.9, .95), (.95, .99))
                          if (m := (p >= lo) & (p < hi)).any()))


if __name__ == "__main__":
    main()
