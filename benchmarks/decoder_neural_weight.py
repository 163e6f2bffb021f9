"""How much should the gene decoder trust the annotation head? A sweep on a TRAIN genome slice.

Scores the decoder's gene calls (strand + stop match; genes ending inside the slice) on the first
``--bases`` of E. coli K-12 (train role) with the head's probabilities at several neural gene
and start weights. The chosen values go into the checkpoint's ``decoder.json``.

Run: ``python benchmarks/decoder_neural_weight.py --model runs/annotation/export``
"""

from __future__ import annotations

import argparse
import dataclasses

import torch

from genoctx.eval.metrics import gene_metrics
from genoctx.heads.annotation import load_annotation_model, predict_probs
from genoctx.heads.decoder import FEATURES, START_PARTS, DecoderParams, call_genes_multi
from genoctx.io.annotation import read_genes, read_sequences_genbank
from genoctx.io.dataroot import TRAINABLE_ROLES, require_role, resolve_data_root
from genoctx.tokenize import nucleotide as nt

GENOME = "genomes/bacteria/Escherichia_coli_K12_MG1655.gbff.gz"


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="embedded")
    ap.add_argument("--data-root", default=None)
    ap.add_argument("--bases", type=int, default=400_000)
    a = ap.parse_args(argv)
    torch.set_num_threads(1)
    path = resolve_data_root(a.data_root) / GENOME
    require_role(path, TRAINABLE_ROLES, a.data_root, purpose="decoder weight selection")
    (contig, seq), = list(read_sequences_genbank(path))[:1]
    seq = seq[:a.bases]
    truth = [g for g in read_genes(path) if g.end <= a.bases]
    backbone, head = load_annotation_model(a.model)
    probs = predict_probs(backbone, head, nt.encode(seq), context=8192, overlap=1024)
    print("neural_gene_weight neural_start_weight sensitivity precision F1 start_agreement")
    for gw_n in (0.0, 0.02, 0.05, 0.1, 0.2, 0.5):
        for sw_n in (0.0, 0.1):
            p = DecoderParams()
            gw, sw = list(p.gene_weights), list(p.start_weights)
            gw[FEATURES.index("neural_per_codon")], sw[START_PARTS.index("neural")] = gw_n, sw_n
            p = dataclasses.replace(p, gene_weights=tuple(gw), start_weights=tuple(sw))
            calls = [g for g in call_genes_multi([(contig, seq)], {contig: probs}, params=p)
                     if not g.partial[1]]
            m = gene_metrics(calls, truth)
            print(gw_n, sw_n, f"{m.sensitivity:.4f} {m.precision:.4f} {m.f1:.4f} "
                  f"{m.start_agreement:.4f}", flush=True)


if __name__ == "__main__":
    main()
