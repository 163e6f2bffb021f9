"""How much should the gene decoder trust the annotation head? A sweep on whole TRAIN genomes.

For each genome (train role only; refused otherwise) the head's per-base probabilities are computed
once (cached as float16 ``.npz`` keyed by the checkpoint's sha256) and the decoder is run as
``genoctx annotate`` runs it (``call_bacterial``: statistics shared over the genome's records, CDS
calls inside RNA genes dropped) at every pair of neural gene weight (the head's mean in-frame CDS
log-odds per codon in the gene score) and neural start weight (the head's summed log-odds in the
coding part of start choice and of the gene score). Genes are scored at gene level (strand + stop).
The chosen pair goes into the checkpoint's ``decoder.json``. The shipped pair was chosen before
the decoder's ORF scorer existed; ``--no-scorer`` reproduces that sweep (with the scorer, these
train genomes are in-sample for it).

Run: ``python benchmarks/decoder_neural_weight.py --model runs/annotation2/export``
(default genomes: N. meningitidis MC58 and S. pyogenes M1, about 5 min of model time on 2 cores
for the first run; the sweep itself about 30 s per pair).
"""

from __future__ import annotations

# The path fix comes before any import that pulls in the standard library's tokenize.
import sys
from pathlib import Path

# Put this folder last on the path: a sibling script named like a stdlib module (tokenize.py)
# must not shadow the standard library.
_HERE = Path(__file__).resolve().parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != _HERE] + [str(_HERE)]

import argparse
import dataclasses
import os

import numpy as np

from genoctx.eval.metrics import gene_metrics
from genoctx.heads import rna_genes
from genoctx.heads.decoder import FEATURES, START_PARTS, DecoderParams, call_genes_multi
from genoctx.io.annotation import read_genes, read_sequences_genbank
from genoctx.io.dataroot import TRAINABLE_ROLES, require_role, resolve_data_root, sha256_file

GENOMES = ("Neisseria_meningitidis_MC58", "Streptococcus_pyogenes_M1_GAS")
GENE_WEIGHTS = (0.0, 0.1, 0.25, 0.5, 1.0)
START_WEIGHTS = (0.0, 0.05, 0.1, 0.25)
CONTEXT, OVERLAP = 8192, 1024


def with_neural(gene_w: float, start_w: float, scorer: bool = True) -> DecoderParams:
    p = DecoderParams(orf_scorer=scorer)
    gw, sw = list(p.gene_weights), list(p.start_weights)
    gw[FEATURES.index("neural_per_codon")], sw[START_PARTS.index("neural")] = gene_w, start_w
    return dataclasses.replace(p, gene_weights=tuple(gw), start_weights=tuple(sw))


def head_probs(model: str, records, cache: Path) -> dict[str, np.ndarray]:
    """Float16-rounded probabilities per record (as the eval harness keeps them)."""
    if cache.is_file():
        data = np.load(cache)
        if all(c in data for c, _ in records):
            return {c: data[c].astype(np.float32) for c, _ in records}
    from genoctx.heads.annotation import load_annotation_model, predict_probs
    from genoctx.progress import progress_bar
    from genoctx.tokenize import nucleotide as nt

    backbone, head = load_annotation_model(model)
    out = {}
    with progress_bar(f"probabilities {cache.stem}", sum(len(s) for _, s in records)) as bar:
        for c, s in records:
            out[c] = predict_probs(backbone, head, nt.encode(s), context=CONTEXT, overlap=OVERLAP,
                                   progress=bar.advance).astype(np.float16)
    cache.parent.mkdir(parents=True, exist_ok=True)
    np.savez(cache, **out)
    return {c: v.astype(np.float32) for c, v in out.items()}


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="embedded")
    ap.add_argument("--data-root", default=None)
    ap.add_argument("--genomes", nargs="*", default=list(GENOMES))
    ap.add_argument("--gene-weights", type=float, nargs="*", default=list(GENE_WEIGHTS))
    ap.add_argument("--start-weights", type=float, nargs="*", default=list(START_WEIGHTS))
    ap.add_argument("--cache", default="results/neural_weight")
    ap.add_argument("--no-scorer", action="store_true",
                    help="decoder without its ORF scorer (as when decoder.json was chosen)")
    a = ap.parse_args(argv)
    import torch

    torch.set_num_threads(int(os.environ.get("GENOCTX_THREADS", "2")))
    from genoctx.model import checkpoint

    mdir = checkpoint.resolve_checkpoint(a.model)
    key = sha256_file(mdir / "head.safetensors")[:12] + sha256_file(mdir / "model.safetensors")[:12]
    root = resolve_data_root(a.data_root)
    data = []
    for name in a.genomes:
        path = root / "genomes" / "bacteria" / f"{name}.gbff.gz"
        require_role(path, TRAINABLE_ROLES, a.data_root, purpose="decoder weight selection")
        records = list(read_sequences_genbank(path))
        probs = head_probs(a.model, records, Path(a.cache) / f"{name}_{key}.npz")
        found = rna_genes.find_rna_genes(records) if all(rna_genes.available().values()) else None
        data.append((name, records, read_genes(path), probs, found))
    print("gene_w\tstart_w\tgenome\tsens\tprec\tF1\tstart", flush=True)
    for gw in a.gene_weights:
        for sw in a.start_weights:
            p = with_neural(gw, sw, not a.no_scorer)
            rows = []
            for name, records, truth, probs, found in data:
                calls = call_genes_multi(records, probs, params=p)
                if found is not None:
                    calls = rna_genes.drop_cds_in_rna(calls, found)
                m = gene_metrics(calls, truth)
                rows.append((m.sensitivity, m.precision, m.f1, m.start_agreement))
                print(f"{gw}\t{sw}\t{name}\t" + "\t".join(f"{v:.4f}" for v in rows[-1]), flush=True)
            print(f"{gw}\t{sw}\tMEAN\t" + "\t".join(f"{v:.4f}" for v in np.mean(rows, 0)),
                  flush=True)


if __name__ == "__main__":
    main()
