"""Decoder development table: genoctx's self-trained decoder vs Prodigal on TRAIN genomes.

For each train genome: sensitivity, precision, F1 and start agreement against the record's
annotation (genoctx.eval.metrics.gene_metrics: match = contig + strand + stop), for
``call_genes_multi(records, None)`` and pyrodigal trained on the genome; then the means.
Only train-role genomes are used, so the decoder can be tuned on this table. The cross-genome
ORF scorer (genoctx.heads.orf_scorer) was fitted on these genomes, so with it the table is
in-sample; ``--no-scorer`` leaves it out (its held-out effect: decoder_orf_classifier.py).

Run: ``python benchmarks/decoder_dev.py [--genomes NAME ...] [--cache DIR] [--data-root DIR]``
(``--cache`` keeps Prodigal's calls between runs; they do not change). ``--calibrate`` also
prints the Platt fit (a, b) of "the call matches an annotated gene" on the decoder's log-odds
over its complete calls below CALIBRATION_CAP (each genome weighing the same), which is where
genoctx.heads.decoder.CALIBRATION comes from.
"""

from __future__ import annotations

import argparse
import os
import pickle
import sys
import time
from pathlib import Path

# Put this folder last on the path: a sibling script named like a stdlib module (tokenize.py)
# must not shadow the standard library.
_HERE = Path(__file__).resolve().parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != _HERE] + [str(_HERE)]
os.environ.setdefault("OMP_NUM_THREADS", "1")

import numpy as np

from genoctx.eval.benchmarks.annotation_bacteria import prodigal_calls
from genoctx.eval.metrics import gene_metrics
from genoctx.heads.decoder import DecoderParams, call_genes_multi
from genoctx.io.annotation import read_genes, read_sequences_genbank
from genoctx.io.dataroot import load_manifest, resolve_data_root

GENOMES = ("Escherichia_coli_K12_MG1655", "Paracoccus_sp._SCN_68-21", "Neisseria_meningitidis_MC58",
           "Streptococcus_pyogenes_M1_GAS", "Yersinia_pestis_KIM")
COLS = ("sensitivity", "precision", "f1", "start_agreement")
CALIBRATION_CAP = 30.0  # log-odds; above it nearly every call is right and σ saturates anyway


def prodigal_cached(name, records, cache: Path | None):
    f = cache / f"{name}.prodigal.pkl" if cache else None
    if f and f.is_file():
        return pickle.loads(f.read_bytes())
    calls = prodigal_calls(records)
    if f:
        f.parent.mkdir(parents=True, exist_ok=True)
        f.write_bytes(pickle.dumps(calls))
    return calls


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data-root", default=None)
    ap.add_argument("--genomes", nargs="*", default=list(GENOMES))
    ap.add_argument("--cache", default=None, help="folder for Prodigal's calls (optional)")
    ap.add_argument("--calibrate", action="store_true", help="also fit the score calibration")
    ap.add_argument("--no-scorer", action="store_true", help="leave out the ORF scorer")
    args = ap.parse_args(argv)
    root = resolve_data_root(args.data_root)
    manifest = load_manifest(root)
    cache = Path(args.cache) if args.cache else None
    print("genome\ttool\tsens\tprec\tF1\tstart\tcalls\ttrue\tsec")
    sums = {t: dict.fromkeys(COLS, 0.0) for t in ("genoctx", "prodigal")}
    platt = []
    params = DecoderParams(orf_scorer=not args.no_scorer)
    for name in args.genomes:
        rel = f"genomes/bacteria/{name}.gbff.gz"
        if manifest[rel].role != "train":
            sys.exit(f"{name} is not a train genome; tune on train genomes only")
        records = list(read_sequences_genbank(root / rel))
        truth = read_genes(root / rel)
        for tool in ("genoctx", "prodigal"):
            t0 = time.process_time()
            calls = (call_genes_multi(records, None, params=params) if tool == "genoctx"
                     else prodigal_cached(name, records, cache))
            dt = time.process_time() - t0
            m = gene_metrics(calls, truth).as_dict()
            if tool == "genoctx" and args.calibrate:
                platt.append(_calibration_rows(calls, truth))
            for c in COLS:
                sums[tool][c] += m[c]
            print(f"{name[:28]}\t{tool}\t" + "\t".join(f"{m[c]:.4f}" for c in COLS)
                  + f"\t{m['n_pred']}\t{m['n_true']}\t{dt:.1f}", flush=True)
    n = len(args.genomes)
    for tool, s in sums.items():
        print(f"MEAN\t{tool}\t" + "\t".join(f"{s[c] / n:.4f}" for c in COLS))
    if platt:
        from genoctx.heads.decoder_fit import fit_logistic

        x, y, w = (np.concatenate(v) for v in zip(*platt))
        a, b = fit_logistic(x[:, None], y, w, l2=0.0)
        print(f"calibration (a, b) = ({a:.4f}, {b:.4f})")


def _calibration_rows(calls, truth):
    """(log-odds, matches, weight) of complete calls below CALIBRATION_CAP; weights sum to 1."""
    key = {(g.contig, g.strand, g.end if g.strand == 1 else g.start) for g in truth}
    keep = [g for g in calls if not any(g.partial) and g.attrs["logit"] < CALIBRATION_CAP]
    x = np.array([g.attrs["logit"] for g in keep])
    y = np.array([(g.contig, g.strand, g.end if g.strand == 1 else g.start) in key for g in keep],
                 dtype=np.float64)
    return x, y, np.full(len(x), 1.0 / max(len(x), 1))


if __name__ == "__main__":
    main()
