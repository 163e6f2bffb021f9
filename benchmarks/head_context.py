"""Per-base quality of the annotation head at several inference window sizes.

On the first ``--bases`` of a genome's first record: argmax CDS-vs-rest F1 and MCC over bases with
a label, and the share of annotated CDS bases whose argmax class has the right strand and codon
phase — over all of them, and over those within 256 bases of a seam (where the stitched result
passes from one window to the next; ``near_seam``). Each ``CONTEXT/OVERLAP`` argument is one run of ``predict_probs`` (what ``genoctx
annotate`` calls with ``--context`` / ``--overlap``).

Run: ``python benchmarks/head_context.py --model embedded 2048/256 8192/1024``
"""

from __future__ import annotations

# The path fix comes before any import that pulls in the standard library's tokenize.
import sys
from pathlib import Path

_HERE = Path(__file__).resolve().parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != _HERE] + [str(_HERE)]

import argparse
import time

import numpy as np
import torch

from genoctx.eval.metrics import binary_scores
from genoctx.heads.annotation import labels_from_tracks, load_annotation_model, predict_probs
from genoctx.heads.classes import CDS_MINUS, CDS_PLUS
from genoctx.io.annotation import label_tracks, read_features, read_sequences_genbank
from genoctx.io.dataroot import resolve_data_root
from genoctx.tokenize import nucleotide as nt
from genoctx.tokenize.windows import Stitcher

SEAM = 256  # bases either side of a seam counted as near it


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("windows", nargs="*", default=["8192/1024"], help="CONTEXT/OVERLAP")
    ap.add_argument("--model", default="embedded")
    ap.add_argument("--genome", default="genomes/bacteria/Escherichia_coli_K12_MG1655.gbff.gz")
    ap.add_argument("--bases", type=int, default=200_000)
    ap.add_argument("--data-root", default=None)
    a = ap.parse_args(argv)
    torch.set_flush_denormal(True)
    path = resolve_data_root(a.data_root) / a.genome
    (contig, seq), = list(read_sequences_genbank(path))[:1]
    # Label the whole record (features must lie inside it), then keep the first bases.
    y = labels_from_tracks(label_tracks(read_features(path), {contig: len(seq)})[contig])
    seq, y = seq[:a.bases], y[:a.bases]
    backbone, head = load_annotation_model(a.model)
    cds = np.asarray(CDS_PLUS + CDS_MINUS)
    in_cds = np.isin(y, cds)
    print("context\toverlap\tcds_f1\tcds_mcc\tright_phase\tnear_seam\tseconds")
    for w in a.windows:
        context, overlap = (int(v) for v in w.split("/"))
        t = time.perf_counter()
        arg = predict_probs(backbone, head, nt.encode(seq), context=context,
                            overlap=overlap).argmax(1)
        s = binary_scores(np.isin(arg, cds), in_cds, y >= 0)
        phase = float((arg[in_cds] == y[in_cds]).mean())
        near = np.zeros(len(seq), dtype=bool)
        for _, cut in Stitcher(len(seq), context, overlap).owned[:-1]:
            near[max(0, cut - SEAM):cut + SEAM] = True
        sel = in_cds & near
        seam = f"{float((arg[sel] == y[sel]).mean()):.4f}" if sel.any() else "-"
        print(f"{context}\t{overlap}\t{s['f1']:.4f}\t{s['mcc']:.4f}\t{phase:.4f}\t{seam}\t"
              f"{time.perf_counter() - t:.1f}", flush=True)


if __name__ == "__main__":
    main()
