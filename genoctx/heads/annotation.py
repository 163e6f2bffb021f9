"""Per-base annotation head: ``(B, T, 2D)`` embeddings → ``(B, T, NUM_CLASSES)`` class logits.

The backbone's :meth:`embed` concatenates a forward-strand and a reverse-complement pass, so
``embed(rc(x)) == flip_T(swap_halves(embed(x)))``. The head uses that to be exactly strand
equivariant at no extra backbone cost: it scores the embedding as given and as the reverse
complement would see it, and averages the two after mapping the second back (flip in T, swap the
strand of every class with :data:`classes.RC_PERMUTATION`). The reverse complement of the input
therefore gives the reverse-complemented output, up to float rounding.
"""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import closing
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

from genoctx.heads.classes import CDS_MINUS, CDS_PLUS, IGNORE_INDEX, INDEX, NUM_CLASSES, RC_PERMUTATION


@dataclass(kw_only=True)
class AnnotationHeadConfig:
    in_dim: int            # 2 * d_model of the backbone
    hidden: int = 128
    kernel_size: int = 9   # local conv: codon-scale context on top of the backbone
    num_classes: int = NUM_CLASSES

    def to_dict(self) -> dict:
        return asdict(self)


def conv_tokens_first(x_BTE: torch.Tensor, weight: torch.Tensor,
                      bias: torch.Tensor | None) -> torch.Tensor:
    """``F.conv1d`` with "same" zero padding on tokens-first data: ``[B, T, E] -> [B, T, O]``
    for an odd ``weight [O, E, K]``, as one matrix product per kernel tap (``out[t] += x[t + j
    - K//2] @ W_j``). Equal to the conv up to float rounding; on the CPU 1.3–1.7× faster than
    oneDNN's conv at the head's shapes (the head: ``python benchmarks/model_cpu_parts.py``),
    and it needs no transposed copy of the input."""
    O, _, K = weight.shape
    B, T, _ = x_BTE.shape
    half = K // 2
    taps = weight.permute(2, 1, 0).contiguous()  # [K, E, O]: tap j as an E x O matrix
    x = F.pad(x_BTE, (0, 0, half, half))  # [B, T + K - 1, E]
    out = x_BTE.new_empty(B, T, O)
    for b in range(B):
        o = out[b]
        if bias is None:
            torch.mm(x[b, :T], taps[0], out=o)
        else:
            torch.addmm(bias, x[b, :T], taps[0], out=o)
        for j in range(1, K):
            o.addmm_(x[b, j:j + T], taps[j])
    return out


class AnnotationHead(nn.Module):
    """``embed_BTE -> logits_BTC``; see the module docstring for the strand symmetry."""

    def __init__(self, cfg: AnnotationHeadConfig):
        super().__init__()
        if cfg.kernel_size % 2 != 1:
            raise ValueError(f"kernel_size must be odd, got {cfg.kernel_size}")
        self.cfg = cfg
        self.norm = nn.LayerNorm(cfg.in_dim)
        self.conv = nn.Conv1d(cfg.in_dim, cfg.hidden, cfg.kernel_size, padding=cfg.kernel_size // 2)
        self.out = nn.Linear(cfg.hidden, cfg.num_classes)
        self.register_buffer("rc_perm", torch.tensor(RC_PERMUTATION), persistent=False)

    def _score(self, u_BTE: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
        if u_BTE.device.type == "cpu" and not torch.is_grad_enabled():
            h = conv_tokens_first(u_BTE, weight, self.conv.bias)
        else:
            h = F.conv1d(u_BTE.transpose(1, 2), weight, self.conv.bias,
                         padding=self.cfg.kernel_size // 2).transpose(1, 2)
        return self.out(F.gelu(h))

    def forward(self, e_BTE: torch.Tensor) -> torch.Tensor:
        # The reverse complement's view of the embedding is never built: rc(x) embeds to
        # e' = flip_T(swap_halves(e)). LayerNorm commutes with both, a conv over a flipped
        # input is the flipped conv with the kernel reversed, and the swap moves into the
        # conv's input channels, so flip_T(score(e')) = out(gelu(conv_{W'}(u'))) with
        # u' = ẑ · swap(γ) + swap(β), ẑ the affine-free normalisation of e and W' the conv
        # weight with its input halves swapped and its kernel reversed.
        E = e_BTE.shape[-1]
        z = F.layer_norm(e_BTE, (E,), eps=self.norm.eps)
        gamma, beta, w = self.norm.weight, self.norm.bias, self.conv.weight
        logits = self._score(torch.addcmul(beta, z, gamma), w)
        # rolling by half the channels swaps the two strands' halves
        logits_rc = self._score(torch.addcmul(beta.roll(E // 2), z, gamma.roll(E // 2)),
                                w.roll(E // 2, dims=1).flip(-1))
        return 0.5 * (logits + logits_rc[..., self.rc_perm])


def labels_from_tracks(tracks) -> np.ndarray:
    """Per-base class ids from :class:`genoctx.io.annotation.LabelTracks` (IGNORE where unknown).

    CDS wins over everything (the + strand over the - strand where both code), then rRNA, tRNA,
    ncRNA, UTR, intron, intergenic, following the track's own class priority.
    """
    from genoctx.io.annotation import CLASSES as TRACK_CLASSES

    L = tracks.length
    y = np.zeros(L, dtype=np.int64)
    strand = getattr(tracks, "feature_strand", None)
    if strand is None:
        strand = tracks.rna_strand
    minus = np.asarray(strand) < 0
    for name in ("intron", "UTR", "ncRNA", "tRNA", "rRNA"):  # lowest priority first
        where = np.asarray(tracks.klass) == TRACK_CLASSES.index(name)
        y[where & ~minus] = INDEX[f"{name}+"]
        y[where & minus] = INDEX[f"{name}-"]
    ph_m = np.asarray(tracks.cds_phase_minus)
    ph_p = np.asarray(tracks.cds_phase_plus)
    y[ph_m >= 0] = np.asarray(CDS_MINUS)[ph_m[ph_m >= 0]]
    y[ph_p >= 0] = np.asarray(CDS_PLUS)[ph_p[ph_p >= 0]]
    y[np.asarray(tracks.ignore, dtype=bool)] = IGNORE_INDEX
    return y


# ---- checkpoint: the backbone's files plus head.safetensors / head.json / head.safetensors.sha256

HEAD_WEIGHTS, HEAD_CONFIG = "head.safetensors", "head.json"


def save_annotation_model(directory, backbone, head: AnnotationHead) -> None:
    """Write the backbone checkpoint and the head beside it (safetensors + sha256, no pickle)."""
    import json

    from safetensors.torch import save_file

    from genoctx.io.atomic import atomic_path
    from genoctx.io.dataroot import sha256_file

    directory = Path(directory)
    backbone.save_pretrained(directory)
    with atomic_path(directory / HEAD_WEIGHTS) as tmp:
        save_file({k: v.detach().contiguous().cpu() for k, v in head.state_dict().items()},
                  str(tmp))
    (directory / HEAD_CONFIG).write_text(json.dumps(head.cfg.to_dict(), indent=2) + "\n")
    digest = sha256_file(directory / HEAD_WEIGHTS)
    (directory / (HEAD_WEIGHTS + ".sha256")).write_text(f"{digest}  {HEAD_WEIGHTS}\n")


def load_annotation_model(path_or_name="embedded", *, device="cpu", backend="auto"):
    """``(backbone, head)`` from a checkpoint directory or ``"embedded"``; sha256 checked."""
    import json

    from safetensors import SafetensorError
    from safetensors.torch import load_file

    from genoctx.errors import InputError
    from genoctx.io.digest import verify_digest_file
    from genoctx.model import checkpoint
    from genoctx.model.model import GenoCtxModel

    backbone = GenoCtxModel.from_pretrained(path_or_name, device=device, backend=backend)
    directory = checkpoint.resolve_checkpoint(path_or_name)
    wpath, cpath = directory / HEAD_WEIGHTS, directory / HEAD_CONFIG
    if not wpath.is_file() or not cpath.is_file():
        raise InputError(f"{directory} has no annotation head ({HEAD_WEIGHTS}, {HEAD_CONFIG}); "
                         "train one with `genoctx train --recipe annotation`")
    # read afresh every time (no cached digest), and an empty or missing .sha256 is one line
    verify_digest_file(wpath, "the annotation head's weights",
                       "use the checkpoint as `genoctx train` wrote it, or train it again")
    try:
        head = AnnotationHead(AnnotationHeadConfig(**json.loads(cpath.read_text())))
        head.load_state_dict(load_file(str(wpath)))
    except (ValueError, TypeError, RuntimeError, OSError, SafetensorError) as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise InputError(f"cannot load the annotation head of {directory} ({cpath.name}, "
                         f"{wpath.name}): {first}") from None
    return backbone, head.to(device).eval()


# Bases of all model calls in flight together on CPU. Both strands of 16,384 bases make
# [2, 2·8193, 128] fp32 hidden states of 16.8 MB; glibc serves blocks over 32 MB with a fresh
# mmap on every allocation and the kernel zeroes each page on first touch. At 4 × 8,192 bases
# per call that cost 1.2–2.2 M minor page faults and 2.6–3.0 s of system time per 250 kb
# (benchmarks/annotate_settings.py, setting 1024/-/1).
CPU_BASES_PER_CALL = 16_384
# bases per model call on a GPU when no batch size is given: 64 windows of the default context
GPU_BASES_PER_CALL = 64 * 8191
# Bumped whenever predict_probs gives other probabilities for the same arguments and weights
# (2: windows of context - 1 bases, BOS + window = context tokens); see probs_cache_key.
PROBS_VERSION = 2


def probs_cache_key(path_or_name, *settings) -> str:
    """Key for caching :func:`predict_probs` output: the backbone's and the head's sha256 and
    their configs' (``config.json``'s rope_theta moves the probabilities as much as the
    weights do), :data:`PROBS_VERSION` and the caller's ``settings`` (window sizes, data
    digests...)."""
    import hashlib

    from genoctx.io.dataroot import sha256_file, sha256_uncached
    from genoctx.model import checkpoint

    directory = checkpoint.resolve_checkpoint(path_or_name)
    head = directory / HEAD_WEIGHTS
    configs = [directory / checkpoint.CONFIG_NAME, directory / HEAD_CONFIG]
    parts = [checkpoint.verify_digest(directory), sha256_file(head) if head.is_file() else "",
             *(sha256_uncached(c) if c.is_file() else "" for c in configs),
             str(PROBS_VERSION), *map(str, settings)]
    return hashlib.sha256("|".join(parts).encode()).hexdigest()


def load_probs_cache(cache: Path, shape: list[tuple[str, int]]) -> dict[str, np.ndarray] | None:
    """Probabilities cached by :func:`save_probs_cache` for records ``shape`` (name, length),
    or None when there is no such file, or it is damaged (a run stopped while writing it, before
    writes were atomic) or holds other records: then they are computed again."""
    import zipfile

    if not Path(cache).is_file():
        return None
    try:
        with np.load(cache) as data:
            if all(c in data and len(data[c]) == n for c, n in shape):
                return {c: data[c] for c, _ in shape}
    except (OSError, ValueError, EOFError, zipfile.BadZipFile):
        pass
    return None


def save_probs_cache(cache: Path, probs: dict[str, np.ndarray]) -> None:
    """Write ``probs`` (per record) to ``cache`` atomically: never a half-written file."""
    from genoctx.io.atomic import atomic_path

    with atomic_path(cache) as tmp:
        np.savez(tmp, **probs)


def default_batch_size(window: int, cpu: bool) -> int:
    """Windows per model call when none is asked for: 4 on the CPU (where
    :data:`CPU_BASES_PER_CALL` caps it further), :data:`GPU_BASES_PER_CALL` bases' worth on a
    GPU, where a few windows per call leave it idle between kernel launches."""
    return 4 if cpu else max(1, GPU_BASES_PER_CALL // max(1, window))


def predict_probs(backbone, head: AnnotationHead, ids: np.ndarray, *, context: int = 8192,
                  overlap: int = 256, batch_size: int | None = None, progress=None,
                  workers: int | None = None, circular: bool = False,
                  reduce: Sequence[Sequence[int]] | None = None) -> np.ndarray:
    """Per-base class probabilities ``[L, NUM_CLASSES]`` (float32) for one contig.

    ``context`` is what the backbone reads per window: BOS and ``context - 1`` bases, so the
    default 8,192 tokens fill 64 whole attention blocks (block-aligned inputs skip the padded
    copies of partial blocks). The contig is cut into windows of ``context - 1`` bases
    overlapping by ``overlap``; each base takes its probabilities from the window in which it
    lies farthest from an edge, so every base keeps at least ``overlap // 2`` bases of context
    on both sides (except at contig ends).

    ``batch_size``: windows per model call; None takes 4 on the CPU and
    :data:`GPU_BASES_PER_CALL` bases' worth (64 windows of the default context) on a GPU, where
    a few windows per call leave it idle between launches. A call that runs out of GPU memory
    is retried in halves, and later calls take that many windows at most.

    On CPU, ``workers`` threads (default: :func:`genoctx.model.workers.cpu_workers`) run whole
    model calls side by side (:mod:`genoctx.model.workers`), and
    all calls in flight together take at most :data:`CPU_BASES_PER_CALL` bases (fewer windows
    than ``batch_size`` when they are long). Batching and threading move results only by float
    rounding; a given setting gives the same bytes on every run.

    ``circular``: the contig is a whole circular replicon; its windows wrap across the origin
    (half a window of the other end is read before and after it, as a base in the middle of a
    window reads either side), so its first and last bases get context on both sides.
    ``progress`` still adds up to L.

    ``reduce``: groups of class ids; the result is then ``[L, len(reduce)]``, each column the
    sum of its group's probabilities (added left to right, as numpy sums a few columns, so
    the columns are the same bytes as summing the full result's), taken on the model's
    device window by window. The full probabilities of a genome (E. coli: 4.6 M x 17
    float32, 316 MB) are then never copied off a GPU nor stitched in host memory.
    """
    from genoctx.model.workers import cpu_workers, in_order
    from genoctx.tokenize.windows import Stitcher

    L = len(ids)
    if context < 2:
        raise ValueError(f"context must be at least 2 tokens (BOS and one base), got {context}")
    if circular and L:
        pad = min(context // 2, L)
        padded = np.concatenate([ids[-pad:], ids, ids[:pad]])
        seen = [0, 0]  # padded bases reported to us, bases passed on

        def scaled(n: int) -> None:  # the padded sequence's progress, in bases of the contig
            seen[0] += n
            now = seen[0] * L // len(padded)
            progress(now - seen[1])
            seen[1] = now

        return predict_probs(backbone, head, padded, context=context, overlap=overlap,
                             batch_size=batch_size, progress=scaled if progress else None,
                             workers=workers, reduce=reduce)[pad:pad + L].copy()
    window = min(context - 1, L)  # bases; the backbone adds BOS
    overlap = min(overlap, window - 1) if window < L else 0
    stitcher = Stitcher(L, window, overlap)
    spans = stitcher.windows
    device = backbone.device
    cpu = device.type == "cpu"
    workers = cpu_workers(device, workers)  # 1 on a GPU: it takes the windows in batches
    if batch_size is None:
        batch_size = default_batch_size(window, cpu)
    if cpu:
        batch_size = max(1, min(batch_size, CPU_BASES_PER_CALL // (window * workers)))
    groups, i = [], 0
    while i < len(spans):  # consecutive windows of equal length, at most batch_size of them
        j = i
        while j < len(spans) and j - i < batch_size and spans[j][1] - spans[j][0] == \
                spans[i][1] - spans[i][0]:
            j += 1
        groups.append((i, j))
        i = j

    limit = [batch_size]  # lowered for good when a GPU runs out of memory at this many windows
    groups_of = None if reduce is None else [tuple(int(c) for c in g) for g in reduce]

    def forward(rows: np.ndarray) -> np.ndarray:
        out, a = [], 0
        while a < len(rows):
            part = rows[a:a + limit[0]]
            a += len(part)
            try:
                emb = backbone.embed(torch.from_numpy(part).to(device))
                probs = torch.softmax(head(emb).float(), -1)
                del emb
                if groups_of is not None:
                    probs = torch.stack([_sum_in_order(probs, g) for g in groups_of], -1)
                out.append(probs.cpu().numpy())
                del probs
                continue
            except torch.OutOfMemoryError:
                if len(part) == 1:
                    raise
            # out of the except block, so that the failed call's tensors (held by its
            # traceback) are freed before the cache is emptied and the halves run
            torch.cuda.empty_cache()
            limit[0] = max(1, len(part) // 2)  # half as many windows per call from now on
            out.append(forward(part))
        return np.concatenate(out)

    def run(group: tuple[int, int]) -> np.ndarray:
        with torch.inference_mode():  # thread-local: every worker enters it
            batch = np.stack([ids[s:e] for s, e in spans[group[0]:group[1]]]).astype(np.int64)
            return forward(batch)

    done = 0
    with closing(in_order(run, groups, workers)) as results:
        for (i, j), probs in zip(groups, results):
            for k in range(i, j):
                stitcher.add(k, probs[k - i])
            if progress:  # bases newly covered (windows overlap): the total adds up to L
                reach = max(e for _, e in spans[:j])
                progress(reach - done)
                done = reach
    return np.ascontiguousarray(stitcher.result(), dtype=np.float32)


def _sum_in_order(probs: torch.Tensor, group: tuple[int, ...]) -> torch.Tensor:
    """``probs[..., group].sum(-1)`` added left to right (numpy's order for a few columns)."""
    out = probs[..., group[0]].clone()
    for c in group[1:]:
        out += probs[..., c]
    return out


def predict_probs_many(backbone, head: AnnotationHead, items, *, context: int = 8192,
                       overlap: int = 256, batch_size: int | None = None, progress=None,
                       workers: int | None = None,
                       reduce: Sequence[Sequence[int]] | None = None):
    """``(key, probs)`` for each ``(key, ids, circular)`` of ``items``, in order:
    :func:`predict_probs` of many records (the contigs of an assembly or a metagenome).

    A record that fits one window is a single model call, which :func:`predict_probs` can only
    run on one worker thread; so on CPU, runs of such records go side by side, one record per
    worker thread (:func:`genoctx.model.workers.in_order`), and longer records (and circles,
    whose windows wrap) one at a time with their windows side by side. The probabilities are
    the same bytes either way. ``items`` is read lazily, at most ``workers`` records ahead of
    what has been yielded; ``progress`` adds up to the records' total length. ``reduce``: as
    for :func:`predict_probs`.
    """
    from itertools import groupby

    from genoctx.model.workers import cpu_workers, in_order

    workers = cpu_workers(backbone.device, workers)
    window = context - 1

    def alone(item) -> bool:  # one window, no wrap: a single call
        return workers > 1 and not item[2] and len(item[1]) <= window

    def one(item):
        return item[0], predict_probs(backbone, head, item[1], context=context, overlap=overlap,
                                      batch_size=batch_size, workers=1, reduce=reduce)

    for side_by_side, run in groupby(items, key=alone):
        if side_by_side:
            for key, probs in in_order(one, run, workers):
                if progress:
                    progress(len(probs))
                yield key, probs
        else:
            for key, ids, circular in run:
                yield key, predict_probs(backbone, head, ids, context=context, overlap=overlap,
                                         batch_size=batch_size, progress=progress,
                                         workers=workers, circular=circular, reduce=reduce)
