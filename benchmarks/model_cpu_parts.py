"""Where the annotation model's CPU time goes, and the no-grad fast paths against torch's own.

``predict_probs`` (what ``genoctx annotate`` runs for the probability tracks) on the first
``--bases`` of E. coli K-12 (train role) with the embedded checkpoint, on one thread and one
worker so that the parts add up. Two settings alternate (the shared cores of a small machine
vary by ±30% within minutes):

* ``torch``: the annotation head's conv through ``F.conv1d`` (oneDNN), RMSNorm through
  ``nn.RMSNorm.forward`` (pow, mean, rsqrt, two multiplies) and the MoE router losses computed
  in every forward, as before 2026-12-07;
* ``fast``: the conv as one matrix product per kernel tap on tokens-first data
  (:func:`genoctx.heads.annotation.conv_tokens_first`), RMSNorm's mean square as one
  ``vecdot`` with in-place scaling (:class:`genoctx.model.model.RMSNorm`), and the router losses
  left until read (inference never reads them).

Prints wall seconds per run, then the parts of each setting's last run (seconds inside each
wrapped function; nested parts are inside their parents) and how far the two settings'
probabilities are apart; ``--write`` puts the table in docs/benchmarks.md.

Run: ``python benchmarks/model_cpu_parts.py [--bases 65536] [--reps 5] [--write]``
"""

from __future__ import annotations

# The path fix comes before any import that pulls in the standard library's tokenize.
import sys
from pathlib import Path

_HERE = Path(__file__).resolve().parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != _HERE] + [str(_HERE)]

import argparse
import collections
import functools
import time
from contextlib import contextmanager, nullcontext

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from genoctx.heads import annotation
from genoctx.io.annotation import read_sequences_genbank
from genoctx.io.dataroot import resolve_data_root
from genoctx.model import attention, model, moe
from genoctx.tokenize import nucleotide as nt

PARTS = collections.defaultdict(float)


def _timing(fn, label: str):
    """``fn``, adding its time to ``PARTS[label]``."""
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        t0 = time.perf_counter()
        try:
            return fn(*args, **kwargs)
        finally:
            PARTS[label] += time.perf_counter() - t0

    return wrapper


def _timed(owner, name: str, label: str) -> None:
    setattr(owner, name, _timing(getattr(owner, name), label))


def instrument() -> None:
    """Wrap the parts; the torch backend's ops are looked up in ``attention._TORCH``."""
    for name in ("local_attn_blocked", "linear_attn_chunked"):
        _timed(attention, name, f"attention: {name}")
    attention._TORCH["hybrid_attn"] = attention.hybrid_from_branches(
        attention.local_attn_blocked, attention.linear_attn_chunked, fp32_mix=True)
    _timed(attention, "select_extra_blocks", "attention: select_extra_blocks")
    _timed(attention.HybridAttention, "_project", "attention: projections + rope")
    _timed(attention.HybridAttention, "forward", "attention (all)")
    _timed(moe, "grouped_mm_torch", "moe: grouped matmuls")
    _timed(moe, "moe_permute_fast", "moe: permute")
    _timed(moe, "moe_unpermute_fast", "moe: unpermute")
    _timed(moe.MoE, "route", "moe: router")
    _timed(moe.MoE, "forward", "moe (all)")
    _timed(model.RMSNorm, "forward", "rmsnorm")
    _timed(annotation.AnnotationHead, "forward", "annotation head")
    _timed(model.GenoCtxModel, "_run", "backbone (all)")


def _score_conv1d(self, u_BTE, weight):
    h = F.conv1d(u_BTE.transpose(1, 2), weight, self.conv.bias,
                 padding=self.cfg.kernel_size // 2).transpose(1, 2)
    return self.out(F.gelu(h))


def _losses_eager(self, logits, counts):
    self._counts, self._logits = counts.detach(), logits
    self._set_losses()


@contextmanager
def torch_paths():
    """The ``torch`` setting: the code paths before the fast ones."""
    saved = (annotation.AnnotationHead._score, model.RMSNorm.forward, moe.MoE._losses)
    annotation.AnnotationHead._score = _score_conv1d
    model.RMSNorm.forward = _timing(nn.RMSNorm.forward, "rmsnorm")
    moe.MoE._losses = _losses_eager
    try:
        yield
    finally:
        annotation.AnnotationHead._score, model.RMSNorm.forward, moe.MoE._losses = saved


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bases", type=int, default=65_536)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--data-root", default=None)
    ap.add_argument("--write", action="store_true", help="write the table to docs/benchmarks.md")
    a = ap.parse_args(argv)
    torch.set_flush_denormal(True)
    torch.set_num_threads(1)
    path = resolve_data_root(a.data_root) / "genomes/bacteria/Escherichia_coli_K12_MG1655.gbff.gz"
    (_, seq), = list(read_sequences_genbank(path))[:1]
    ids = nt.encode(seq[:a.bases])
    backbone, head = annotation.load_annotation_model("embedded")
    instrument()

    def run():
        return annotation.predict_probs(backbone, head, ids, workers=1)

    run()  # warm up
    walls = {"torch": [], "fast": []}
    probs, parts = {}, {}
    for _ in range(a.reps):
        for name, runs in walls.items():
            PARTS.clear()
            with torch_paths() if name == "torch" else nullcontext():
                t0 = time.perf_counter()
                probs[name] = run()
                runs.append(time.perf_counter() - t0)
            parts[name] = dict(PARTS)
            print(f"{name}\t{runs[-1]:.2f} s", flush=True)
    diff = float(np.abs(probs["fast"] - probs["torch"]).max())
    agree = float((probs["fast"].argmax(1) == probs["torch"].argmax(1)).mean())
    rows = [[k, f"{parts['torch'].get(k, 0):.2f}", f"{v:.2f}",
             f"{100 * v / walls['fast'][-1]:.0f}%"]
            for k, v in sorted(parts["fast"].items(), key=lambda kv: -kv[1])]
    print("\npart (last run of each)\ttorch s\tfast s\tshare of the fast run")
    for r in rows:
        print("\t".join(r))
    print(f"\nmax |Δp| fast vs torch {diff:.2e}; argmax agrees on {agree:.6f} of bases")
    if a.write:
        from _report import md_table, section_head, write_section

        body = section_head("Annotation model on CPU: parts and fast paths", __file__)
        body += (f"Input: the first {a.bases:,} bases of E. coli K-12 (train role), embedded "
                 "checkpoint, `predict_probs` on one thread and one worker; the settings "
                 "alternate (module docstring).\n\n")
        body += md_table(["setting", "wall s per run", "fastest"],
                         [[k, " / ".join(f"{w:.2f}" for w in runs), f"{min(runs):.2f}"]
                          for k, runs in walls.items()])
        body += ("\n\nParts of the last run of each setting (seconds inside each part; nested "
                 "parts are inside their parents):\n\n")
        body += md_table(["part", "torch s", "fast s", "share of the fast run"], rows)
        body += (f"\n\nmax |Δp| between the settings {diff:.1e}; the argmax class agrees on "
                 f"{agree:.4%} of bases.\n")
        write_section("model_cpu_parts", body)


if __name__ == "__main__":
    main()
