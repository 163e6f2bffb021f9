"""Would a convolutional model of the translation help the ORF scorer? Species held out.

docs/decoder.md names a learned protein-level model of each ORF's translation (a convolutional
network over residues, as Balrog's) as the next lever after the dipeptide table, which added
nothing (``decoder_dipeptide.py``). This script measures it before anything is built into the
decoder:

* every TRAIN genome is decoded without the scorer (``decoder_orf_classifier.py``; each ORF at
  its best start is one row, label: an annotated gene ends at its stop);
* the species are cut into three folds (:data:`FOLDS`; a genus stays in one fold). For each
  fold a small dilated CNN (:class:`ProteinCNN`: residue embedding, three convolutions, masked
  mean and max pooling) is trained on the translations (codons after the start codon, at most
  :data:`MAX_RESIDUES` from the N-terminus) of the ORFs of the other two folds, each species one
  unit of weight, annotated and other ORFs weighing the same; it scores the fold's own ORFs. So
  every row's CNN logit comes from a network that never saw its species;
* for each held-out development genome the scorer is refitted on the other species with the CNN
  logit as one more feature, and the genome is decoded with the shipped use (3 × the bounded
  term), beside ``base`` (the scorer's shipped features, refitted the same way).

Prints gene-level sensitivity / precision / F1 and the ORF-level AUC of the trees per genome and
their mean, and the CNN's own AUC per fold. Only train-role genomes are read. About 25 minutes
on 2 cores.

Run: ``python benchmarks/decoder_protein_cnn.py [--epochs N] [--width C] [GENOME ...]``
(held-out genomes; default: the five of decoder_dev.py).
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

import argparse
import time

import numpy as np
import torch
from decoder_dev import GENOMES
from decoder_dipeptide import frame_residues, row_groups
from decoder_orf_classifier import COLS, decoded_train_genomes, held_out_use
from torch import nn

from genoctx.heads import decoder as dec
from genoctx.heads.decoder_fit import species_key, species_weights

MAX_RESIDUES = 256
PAD = 21  # residue codes 0..19, 20 "other" (a codon with N), 21 padding
FOLDS = (("escherichia_coli", "shigella_flexneri", "chlamydia_trachomatis"),
         ("yersinia_pestis", "streptococcus_pyogenes"),
         ("neisseria_meningitidis", "paracoccus_sp."))
TOKENS_PER_BATCH = 32768


def translations(d: dec.GenomeDecoder) -> list[np.ndarray]:
    """The residues (codons after the start codon, before the stop; at most MAX_RESIDUES) of
    every row of ``decoder_rows(d)``, in its order."""
    out = []
    for x, frame, j, k in row_groups(d):
        rows = [np.zeros(0, np.int8)] * len(frame)
        for aa, m in frame_residues(x, frame, d.params.translation_table):
            first = np.minimum(j[m] + 1, len(aa))
            last = np.minimum(np.clip(k[m], first, len(aa)), first + MAX_RESIDUES)
            for r, a, z in zip(m.tolist(), first.tolist(), last.tolist()):
                rows[r] = aa[a:z].astype(np.int8)
        out += rows
    return out


class ProteinCNN(nn.Module):
    """Residues [B, T] → one logit per sequence (dilated convolutions, masked mean + max)."""

    def __init__(self, width: int = 48):
        super().__init__()
        self.embed = nn.Embedding(PAD + 1, 16, padding_idx=PAD)
        self.convs = nn.ModuleList([nn.Conv1d(16, width, 9, padding=4),
                                    nn.Conv1d(width, width, 9, padding=8, dilation=2),
                                    nn.Conv1d(width, width, 9, padding=16, dilation=4)])
        self.out = nn.Linear(2 * width, 1)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        mask = (ids != PAD).unsqueeze(1).float()  # [B, 1, T]
        h = self.embed(ids).transpose(1, 2)
        for conv in self.convs:
            h = torch.relu(conv(h)) * mask
        n = mask.sum(-1).clamp_min(1.0)
        mean = h.sum(-1) / n
        top = (h - (1 - mask) * 1e4).amax(-1)
        return self.out(torch.cat([mean, top], 1)).squeeze(1)


def _batches(seqs: list[np.ndarray], order: np.ndarray) -> list[np.ndarray]:
    """Index batches of about TOKENS_PER_BATCH padded residues, in ``order``'s length runs."""
    out, cur, width = [], [], 1
    for i in order.tolist():
        w = max(width, len(seqs[i]), 1)
        if cur and w * (len(cur) + 1) > TOKENS_PER_BATCH:
            out.append(np.array(cur))
            cur, w = [], max(len(seqs[i]), 1)
        cur.append(i)
        width = w
    if cur:
        out.append(np.array(cur))
    return out


def _tensor(seqs: list[np.ndarray], idx: np.ndarray) -> torch.Tensor:
    width = max(1, max(len(seqs[i]) for i in idx))
    ids = np.full((len(idx), width), PAD, dtype=np.int64)
    for r, i in enumerate(idx.tolist()):
        ids[r, :len(seqs[i])] = seqs[i]
    return torch.from_numpy(ids)


def train_cnn(seqs, y, w, epochs: int, width: int = 48, seed: int = 0) -> ProteinCNN:
    torch.manual_seed(seed)
    rng = np.random.default_rng(seed)
    model = ProteinCNN(width)
    opt = torch.optim.AdamW(model.parameters(), lr=2e-3, weight_decay=1e-4)
    lengths = np.array([len(s) for s in seqs])
    yt, wt = torch.from_numpy(y.astype(np.float32)), torch.from_numpy(w.astype(np.float32))
    for epoch in range(epochs):
        # sort by length with random ties, cut into batches, visit the batches in random order
        order = np.lexsort((rng.random(len(seqs)), lengths))
        batches = _batches(seqs, order)
        rng.shuffle(batches)
        total, t0 = 0.0, time.time()
        for idx in batches:
            logit = model(_tensor(seqs, idx))
            loss = (nn.functional.binary_cross_entropy_with_logits(
                logit, yt[idx], reduction="none") * wt[idx]).sum() / wt[idx].sum()
            opt.zero_grad()
            loss.backward()
            opt.step()
            total += float(loss.detach()) * len(idx)
        print(f"#   epoch {epoch + 1}: loss {total / len(seqs):.4f} ({time.time() - t0:.0f} s)",
              flush=True)
    return model


@torch.no_grad()
def predict(model: ProteinCNN, seqs) -> np.ndarray:
    model.eval()
    out = np.zeros(len(seqs), dtype=np.float64)
    order = np.argsort([len(s) for s in seqs], kind="stable")
    for idx in _batches(seqs, order):
        out[idx] = model(_tensor(seqs, idx)).numpy()
    return out


def main(argv=None) -> None:
    from sklearn.metrics import roc_auc_score

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("genomes", nargs="*", default=list(GENOMES))
    ap.add_argument("--epochs", type=int, default=3)
    ap.add_argument("--width", type=int, default=48, help="channels of each convolution")
    args = ap.parse_args(argv)
    torch.set_num_threads(int(os.environ["OMP_NUM_THREADS"]))
    data, held = decoded_train_genomes(args.genomes)
    weights = dict(zip(data, species_weights(list(data))))
    seqs = {n: translations(data[n][2]) for n in data}
    fold_of = {n: next(i for i, f in enumerate(FOLDS) if species_key(n) in f) for n in data}
    cnn = {}
    for fold in range(len(FOLDS)):
        train = [n for n in data if fold_of[n] != fold]
        s = [q for n in train for q in seqs[n]]
        y = np.concatenate([data[n][1] for n in train])
        # each species one unit (weights), annotated and other ORFs half of it each
        w = np.concatenate([weights[n] * np.where(data[n][1], 0.5 / data[n][1].sum(),
                                                  0.5 / (~data[n][1]).sum()) for n in train])
        print(f"# fold {fold}: training on {len(s)} ORFs of {len(train)} genomes", flush=True)
        model = train_cnn(s, y, w * len(w) / w.sum(), args.epochs, args.width)
        for n in data:
            if fold_of[n] == fold:
                cnn[n] = predict(model, seqs[n])
                print(f"#   {n}: CNN AUC {roc_auc_score(data[n][1], cnn[n]):.4f}, decoder AUC "
                      f"{roc_auc_score(data[n][1], data[n][0][:, 0]):.4f}", flush=True)
    variants = ("base", "cnn")
    print("genome\t" + "\t".join(f"{v}_{c}" for v in variants for c in (*COLS, "auc")))
    sums = np.zeros((len(variants), len(COLS) + 1))
    for name in held:
        others = [n for n in data if species_key(n) != species_key(name)]
        _, y, d, _, genes = data[name]
        out = []
        for variant in variants:
            def rows(n, variant=variant):
                return data[n][0] if variant == "base" else np.column_stack([data[n][0], cnn[n]])
            out.append(held_out_use([(rows(n), data[n][1], weights[n]) for n in others],
                                    rows(name), y, d, genes))
        sums += np.array(out)
        print(name + "\t" + "\t".join(f"{v:.4f}" for r in out for v in r), flush=True)
    print("MEAN\t" + "\t".join(f"{v:.4f}" for v in (sums / len(held)).ravel()))


if __name__ == "__main__":
    main()
