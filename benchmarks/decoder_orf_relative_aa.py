"""Would the ORF scorer carry over better with amino-acid composition against the genome's own?

The ORF scorer (:mod:`genoctx.heads.orf_scorer`) reads each ORF's amino-acid composition as it
is. Proteomes differ by phylum and G+C, so composition learned on the train genera might mislead
it on a genome of a phylum it never saw (C. diphtheriae: ``genecall_disagreements.py``). This
fits the scorer three ways and compares them:

- ``abs``: the shipped features;
- ``rel``: the 20 composition features minus the genome's reference composition: the mean over
  its confident ORFs (decoder log-odds > 10, weighted by codons), shrunk towards the train
  genomes' mean by a prior of 30,000 codons (so a 10-kb contig keeps near the train mean);
- ``both``: the shipped features and the 20 relative ones.

Part 1, held out by species (as ``decoder_orf_classifier.py --all``): for each train genome the
scorer is fitted on the other species' genomes, and the genome is decoded with the shipped use
(3 × the bounded residual); gene sensitivity / precision / F1 against its annotation.
Part 2, the genomes of ``genecall_unseen.py``: the scorer fitted on all train genomes; calls,
and agreement with Prodigal's whole-genome calls (share of Prodigal's found / share of calls
Prodigal makes), beside the decoder without any scorer. Decoder calls only (no RNA filter).

Run: ``python benchmarks/decoder_orf_relative_aa.py [--cache DIR] [--data-root DIR]
[--no-write]`` (about 20 minutes on 2 cores; writes the ``decoder-orf-relative-aa`` section of
docs/benchmarks.md).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

# Put this folder last on the path: a sibling script named like a stdlib module (tokenize.py)
# must not shadow the standard library.
_HERE = Path(__file__).resolve().parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != _HERE] + [str(_HERE)]
os.environ.setdefault("OMP_NUM_THREADS", "2")

import numpy as np
from _report import md_table, section_head, write_section
from decoder_orf_classifier import _Fixed, decoded_train_genomes
from genecall_unseen import genome_args, genomes

from genoctx.eval.benchmarks.annotation_bacteria import prodigal_calls
from genoctx.eval.metrics import gene_metrics
from genoctx.heads.decoder import DecoderParams, GenomeDecoder
from genoctx.heads.decoder_fit import species_key, species_weights
from genoctx.heads.orf_scorer import FEATURE_NAMES, decoder_rows, fit_scorer

AA = slice(FEATURE_NAMES.index("aa_A"), FEATURE_NAMES.index("aa_Y") + 1)
CONFIDENT = 10.0   # decoder log-odds above which an ORF counts towards the genome's composition
PRIOR = 30_000.0   # codons of the train mean in each genome's reference composition
VARIANTS = ("abs", "rel", "both")


def confident_mean(x: np.ndarray) -> tuple[np.ndarray, float]:
    """Codon-weighted mean composition of the confident rows of ``x``, and their codons."""
    keep = x[:, 0] > CONFIDENT
    w = np.exp(x[keep, FEATURE_NAMES.index("log_length")]) / 3.0
    return (w @ x[keep, AA]) / max(w.sum(), 1e-9), float(w.sum())


def transform(x: np.ndarray, variant: str, prior: np.ndarray) -> np.ndarray:
    """One genome's rows in ``variant``'s features (``prior``: the train mean composition)."""
    if variant == "abs":
        return x
    mean, codons = confident_mean(x)
    rel = x[:, AA] - (codons * mean + PRIOR * prior) / (codons + PRIOR)
    if variant == "rel":
        out = x.copy()
        out[:, AA] = rel
        return out
    return np.column_stack([x, rel])


def held_out(data: dict) -> list[list]:
    names = list(data)
    weights = dict(zip(names, species_weights(names)))
    rows, sums = [], np.zeros((len(VARIANTS), 3))
    for name in names:
        others = [n for n in names if species_key(n) != species_key(name)]
        prior = np.mean([confident_mean(data[n][0])[0] for n in others], axis=0)
        x, _, d, _, truth = data[name]
        row = [name]
        for i, v in enumerate(VARIANTS):
            scorer = fit_scorer([(transform(data[n][0], v, prior), data[n][1], weights[n])
                                 for n in others])
            d.set_orf_adjust(_Fixed(scorer.adjustment(transform(x, v, prior))))
            m = gene_metrics(d.calls(d.decode()), truth)
            d.orf_adjust = None
            sums[i] += (m.sensitivity, m.precision, m.f1)
            row.append(f"{m.sensitivity:.4f} / {m.precision:.4f} / {m.f1:.4f}")
        print("\t".join(row), flush=True)
        rows.append(row)
    rows.append(["**mean**", *(" / ".join(f"{t:.4f}" for t in s / len(names)) for s in sums)])
    return rows


def unseen(data: dict, cache: Path, data_root: str | None) -> list[list]:
    names = list(data)
    weights = dict(zip(names, species_weights(names)))
    prior = np.mean([confident_mean(data[n][0])[0] for n in names], axis=0)
    scorers = {v: fit_scorer([(transform(data[n][0], v, prior), data[n][1], weights[n])
                              for n in names]) for v in VARIANTS}
    rows = []
    for name, _genus, role, records in genomes(cache, data_root):
        ref = prodigal_calls(records)
        d = GenomeDecoder(records, None, DecoderParams(orf_scorer=False))
        d.train()
        x, _, _ = decoder_rows(d)
        cells = []
        for v in (None, *VARIANTS):
            if v is not None:
                d.set_orf_adjust(_Fixed(scorers[v].adjustment(transform(x, v, prior))))
            m = gene_metrics(d.calls(d.decode()), ref)
            d.orf_adjust = None
            cells.append(f"{m.n_pred}: {m.sensitivity:.4f} / {m.precision:.4f}")
        row = [name, role, *cells]
        print("\t".join(row), flush=True)
        rows.append(row)
    return rows


def main(argv=None) -> None:
    args = genome_args(__doc__).parse_args(argv)
    data, _ = decoded_train_genomes([])  # train-role genomes only
    part1 = held_out(data)
    part2 = unseen(data, Path(args.cache), args.data_root)
    body = (section_head("ORF scorer: amino-acid composition as it is or against the genome's",
                         __file__, argv)
            + "Variants (the script's docstring): `abs` the shipped features; `rel` the 20 "
            "composition features minus the genome's reference composition (its confident "
            f"ORFs, decoder log-odds > {CONFIDENT:g}, shrunk towards the train mean by "
            f"{PRIOR:,.0f} codons); `both` the two sets. Held out by species: the scorer "
            "fitted on the other species, gene sensitivity / precision / F1 against the "
            "annotation.\n\n"
            + md_table(["held-out genome", *VARIANTS], part1)
            + "\n\nUnseen genomes (and the validation genomes for scale): the scorer fitted on "
            "all train genomes; `calls: share of Prodigal's found / share of calls Prodigal "
            "makes` (Prodigal trained on the genome is the reference; decoder calls only, no "
            "RNA filter).\n\n"
            + md_table(["genome", "role", "no scorer", *VARIANTS], part2))
    if not args.no_write:
        write_section("decoder-orf-relative-aa", body)


if __name__ == "__main__":
    main()
