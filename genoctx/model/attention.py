"""Hybrid attention: block-local softmax (+ dynamic top-k far blocks) gated with linear attention.

Legend: B batch, T tokens, H query heads, Hk kv heads, hd head dim, NB blocks, BS block size,
K extra key blocks per query block, P carried prefix length (segmented inference).

Per layer and head: ``q`` (H heads) and ``k, v`` (Hk heads, expanded to H) get rotary positions;
``g = sigmoid(x W_g + b_g)`` is a per-token, per-head gate. Both branches read the same rotated
``q, k``::

    o = g * local(q, k, v; extra blocks) + (1 - g) * linear(q, k, v)

The extra far blocks of query block ``i`` and head ``h`` number ``n[i, h] = round(top_k_blocks ·
mean g)`` and are the best-scoring (pooled ``q̄ · k̄``) blocks among the ``topk_window_blocks``
beyond the halo. In causal mode block ``i`` is scored with the mean query and mean gate of block
``i − 1`` (a one-block right shift), so no query's key set depends on a later token.

The ops come from :mod:`genoctx.kernels` through a backend switch:

* ``reference`` — the kernels' pure-PyTorch references (``kernels/*/reference.py``), which define
  the semantics; readable and slow (they build every mask element by element).
* ``torch`` — :func:`local_attn_blocked` and :func:`linear_attn_chunked` below: the same
  functions computed with fused SDPA per block group and a loop-free chunked scan; tests hold
  them to the references at 1e-5. This is the CPU inference path.
* ``triton`` — ``genoctx.kernels.<op>.<op>``; a clear ValueError when they are not installed.
* ``auto`` — per op, triton when the tensors are on CUDA, the kernel imports and it takes the
  config's head_dim (:func:`triton_takes_head_dim`), else ``torch``.

With Triton ops, the hybrid layer is the fused kernel (``genoctx.kernels.hybrid``) unless
``GENOCTX_HYBRID=split`` asks for the two branch kernels and a lerp
(:func:`hybrid_from_branches`; docs/kernels.md has the H200 timings of both branches and the
fused kernel).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass

import torch
import torch.nn as nn
import torch.nn.functional as F

from genoctx.kernels.block_score.reference import block_topk_reference
from genoctx.kernels.hybrid.reference import hybrid_attn_reference
from genoctx.kernels.linear_attn.reference import State, feature_map, linear_attn_reference
from genoctx.kernels.local_attn.reference import local_attn_reference
from genoctx.model.config import BACKENDS, ModelConfig
from genoctx.model.rope import rope_freqs, rope_heads_first

# ---------------------------------------------------------------------------------------------
# Fast PyTorch path (backend "torch")
# ---------------------------------------------------------------------------------------------
# The model keeps q, k, v heads-first ([B, H, T, D] in memory) and hands the ops transposed
# views; for block-aligned lengths the block and chunk reshapes below are then free views.


def _rows(x_BTHD: torch.Tensor, size: int) -> torch.Tensor:
    """``[B, T, H, D] -> [B·H, N, size, D]`` fp32 (zero-padded to ``N·size`` tokens)."""
    x = x_BTHD.transpose(1, 2).float()  # [B, H, T, D]; a view when heads-first in memory
    B, H, T, D = x.shape
    N = -(-T // size)
    if N * size != T or not x.is_contiguous():
        x = F.pad(x, (0, 0, 0, N * size - T)).contiguous()
    return x.view(B * H, N, size, D)


def _unrows(o: torch.Tensor, B: int, T: int) -> torch.Tensor:
    """``[B·H, N, size, D] -> [B, T, H, D]`` (a transposed view of heads-first memory)."""
    BH, N, size, D = o.shape
    return o.view(B, BH // B, N * size, D)[:, :, :T].transpose(1, 2)


def _sanitize_extra(extra: torch.Tensor, NB: int, causal: bool) -> torch.Tensor:
    """``bad [B, H, NB, K]``: the entries the local_attn reference ignores (see its docstring)."""
    i = torch.arange(NB, device=extra.device)[None, None, :, None]
    in_local = (extra >= i - 1) & (extra <= (i if causal else i + 1))
    bad = (extra < 0) | (extra >= NB) | in_local
    return bad | (extra > i) if causal else bad


def _take(x_R: torch.Tensor, rows: torch.Tensor) -> torch.Tensor:
    """``x[rows]`` for a ``[R, ...]`` tensor and any index shape, via a flat ``index_select``
    (several times faster on CPU than advanced indexing)."""
    flat = x_R.reshape(x_R.shape[0], -1).index_select(0, rows.reshape(-1))
    return flat.view(*rows.shape, *x_R.shape[1:])


# Query blocks per SDPA call in causal local attention on CPU. Gathering the key and value
# blocks of a whole group at once made 32-MB copies (over glibc's mmap threshold: fresh pages,
# each zeroed on first touch) that also fell out of cache; 32 rows keep each call's gathers at
# 0.5–2 MB. The embedded model's annotate pass took 7% less
# (`python benchmarks/annotate_settings.py`, settings 256/16384/2/8192/- against 256/16384/2).
CPU_ROWS_PER_CALL = 32


def local_attn_blocked(q, k, v, *, block_size, causal=True, extra_blocks=None, scale=None):
    """Same contract as ``local_attn_reference`` (``[B, T, H, D]`` in, ``q.dtype`` out).

    Causal: query blocks are grouped by how many valid extra blocks they have; each group runs
    one fused SDPA over ``[extras | block i-1 | block i]`` with one broadcast mask, so no
    per-element mask is built. Bidirectional (full forwards only) uses a per-key mask. On the
    meta device (shapes only) the output is an empty tensor of its shape: the grouping depends
    on the values.
    """
    if q.is_meta:
        return q.new_empty(*q.shape[:3], v.shape[-1])
    if not causal:
        return _local_attn_bidir(q, k, v, block_size=block_size, extra_blocks=extra_blocks,
                                 scale=scale)
    B, T, H, D = q.shape
    BS, NB = block_size, -(-T // block_size)
    scale = D ** -0.5 if scale is None else scale
    q_r, k_r, v_r = (_rows(t, BS).flatten(0, 1) for t in (q, k, v))  # [B·H·NB, BS, D]
    groups = _causal_groups(B * H, NB, extra_blocks, q.device)
    tail = torch.full((BS, BS), float("-inf"), device=q.device).triu(1)
    out = q_r.new_empty(q_r.shape[0], BS, v_r.shape[-1])
    for rows, kidx in groups:
        m = kidx.shape[1]  # key blocks: [extras..., i-1, i], or just [i] for block 0
        mask = q_r.new_zeros(BS, m * BS)
        mask[:, (m - 1) * BS:] = tail
        step = max(1, CPU_ROWS_PER_CALL if q.device.type == "cpu" else rows.numel())
        for s in range(0, rows.numel(), step):
            r, kr = rows[s:s + step], kidx[s:s + step]
            o = F.scaled_dot_product_attention(_take(q_r, r)[:, None],
                                               _take(k_r, kr).flatten(1, 2)[:, None],
                                               _take(v_r, kr).flatten(1, 2)[:, None],
                                               attn_mask=mask, scale=scale)
            # the groups partition the rows; under autocast SDPA may return another dtype
            out.index_copy_(0, r, o[:, 0].to(out.dtype))
    return _unrows(out.view(B * H, NB, BS, -1), B, T).to(q.dtype)


def _causal_groups(BH: int, NB: int, extra_blocks,
                   device) -> list[tuple[torch.Tensor, torch.Tensor]]:
    """``[(rows [R], key_rows [R, m])]``: query rows grouped by key-block count.

    Row ``r = bh·NB + i``. Block 0 sees itself; block ``i >= 1`` sees its valid extra blocks,
    then ``i − 1`` and ``i``.
    """
    base = torch.arange(BH, device=device)[:, None] * NB
    first = base[:, 0]
    groups = [(first, first[:, None])]
    if NB == 1:
        return groups
    rest = (base + torch.arange(1, NB, device=device)).view(-1)
    window = torch.stack([rest - 1, rest], -1)
    K = 0 if extra_blocks is None else extra_blocks.shape[-1]
    if K == 0:
        return groups + [(rest, window)]
    extra = extra_blocks.to(device).long()
    bad = _sanitize_extra(extra, NB, True)[:, :, 1:].reshape(-1, K)
    count = (~bad).sum(-1)
    # Valid entries first; the key set, not its order, is what softmax sees.
    order = torch.argsort(bad.to(torch.int8), dim=-1, stable=True)
    extra = torch.gather(extra[:, :, 1:].reshape(-1, K), -1, order).clamp(0, NB - 1)
    extra_rows = (rest - rest % NB)[:, None] + extra
    for m in range(K + 1):
        sel = (count == m).nonzero()[:, 0]
        if sel.numel():
            groups.append((rest[sel], torch.cat([extra_rows[sel, :m], window[sel]], -1)))
    return groups


def _local_attn_bidir(q, k, v, *, block_size, extra_blocks, scale):
    """Bidirectional local attention with a per-key mask (broadcast over the block's queries)."""
    B, T, H, D = q.shape
    BS, NB = block_size, -(-T // block_size)
    scale = D ** -0.5 if scale is None else scale
    dev = q.device
    q_r, k_r, v_r = (_rows(t, BS).flatten(0, 1) for t in (q, k, v))
    i = torch.arange(NB, device=dev)
    blocks = torch.stack([i - 1, i, i + 1], -1).expand(B, H, NB, 3)  # [B, H, NB, S]
    ok = (blocks >= 0) & (blocks < NB)
    if extra_blocks is not None and extra_blocks.shape[-1]:
        extra = extra_blocks.to(dev).long()
        blocks = torch.cat([blocks, extra], -1)
        ok = torch.cat([ok, ~_sanitize_extra(extra, NB, False)], -1)
    blocks = blocks.clamp(0, NB - 1)
    base = (torch.arange(B * H, device=dev) * NB).view(B, H, 1, 1)
    kidx = (base + blocks).flatten(0, 2)  # [R, S] rows of the key blocks
    key_pos = blocks[..., None] * BS + torch.arange(BS, device=dev)  # [B, H, NB, S, BS]
    key_ok = (ok[..., None] & (key_pos < T)).flatten(-2).flatten(0, 2)  # [R, S·BS]
    mask = torch.zeros(key_ok.shape, device=dev).masked_fill_(~key_ok, float("-inf"))
    o = F.scaled_dot_product_attention(q_r[:, None], _take(k_r, kidx).flatten(1, 2)[:, None],
                                       _take(v_r, kidx).flatten(1, 2)[:, None],
                                       attn_mask=mask[:, None, None, :], scale=scale)
    return _unrows(o.view(B * H, NB, BS, -1), B, T).to(q.dtype)


def _phi(x: torch.Tensor) -> torch.Tensor:
    """``feature_map`` (elu(x) + 1) as ``max(x, 0) + exp(min(x, 0))``: the same function, equal
    up to float rounding, and faster on CPU than ``elu`` (which goes through expm1)."""
    if torch.is_grad_enabled() and x.requires_grad:
        return feature_map(x)
    return x.clamp(min=0).add_(x.clamp(max=0).exp_())


def linear_attn_chunked(q, k, v, *, causal=True, initial_state=None, output_final_state=False,
                        chunk_size=64, eps=1e-6):
    """Same contract as ``linear_attn_reference``; the chunk recurrence is a cumulative sum.

    Each chunk's ``φ(k)ᵀv`` is computed for all chunks at once and the state before every chunk
    is their exclusive prefix sum, so there is no Python loop over chunks.
    """
    if not causal:
        return linear_attn_reference(q, k, v, causal=False, initial_state=initial_state,
                                     output_final_state=output_final_state, eps=eps)
    B, T, H, D = q.shape
    E = v.shape[-1]
    fq, fk = _phi(_rows(q, chunk_size)), _phi(_rows(k, chunk_size))  # [B·H, NC, C, D]
    vf = _rows(v, chunk_size)
    pad = fk.shape[1] * chunk_size - T
    if pad:  # φ(0) = 1: padded keys must not count
        fk[:, -1, chunk_size - pad:] = 0
    if initial_state is None:
        S0 = q.new_zeros(B * H, 1, D, E, dtype=torch.float32)
        z0 = q.new_zeros(B * H, 1, D, dtype=torch.float32)
    else:
        S0 = initial_state[0].float().reshape(B * H, 1, D, E)
        z0 = initial_state[1].float().reshape(B * H, 1, D)
    S_incl = torch.cat([S0, fk.transpose(-1, -2) @ vf], 1).cumsum(1)  # [B·H, NC+1, D, E]
    z_incl = torch.cat([z0, fk.sum(2)], 1).cumsum(1)  # [B·H, NC+1, D]
    a = (fq @ fk.transpose(-1, -2)).tril_()  # [B·H, NC, C, C] intra-chunk
    num = torch.baddbmm(a.flatten(0, 1) @ vf.flatten(0, 1), fq.flatten(0, 1),
                        S_incl[:, :-1].flatten(0, 1))
    den = (fq @ z_incl[:, :-1, :, None])[..., 0] + a.sum(-1)
    o = num.view(*fq.shape[:3], E) / (den[..., None] + eps)  # [B·H, NC, C, E]
    state = None
    if output_final_state:
        state = (S_incl[:, -1].view(B, H, D, E), z_incl[:, -1].view(B, H, D))
    return _unrows(o, B, T).to(v.dtype), state


def hybrid_from_branches(local_attn: Callable, linear_attn: Callable, *,
                         fp32_mix: bool = False) -> Callable:
    """``hybrid_attn`` (same contract as ``hybrid_attn_reference``) from two branch ops and one
    lerp: in the inputs' dtype (computed in fp32 per element, without fp32 copies of the branch
    outputs), or with ``fp32_mix`` in fp32 as :func:`mix`."""

    def hybrid_attn_split(q, k, v, gate, *, block_size, causal=True, extra_blocks=None,
                          initial_state=None, output_final_state=False, scale=None):
        o_local = local_attn(q, k, v, block_size=block_size, causal=causal,
                             extra_blocks=extra_blocks, scale=scale)
        o_lin, state = linear_attn(q, k, v, causal=causal, initial_state=initial_state,
                                   output_final_state=output_final_state)
        if fp32_mix:
            return mix(gate, o_local, o_lin, q.dtype), state
        return torch.lerp(o_lin, o_local, gate[..., None].to(o_lin.dtype)), state

    return hybrid_attn_split


def mix(gate: torch.Tensor, o_local: torch.Tensor, o_lin: torch.Tensor, dtype) -> torch.Tensor:
    """``g · local + (1 − g) · linear`` (fp32), as one lerp."""
    return torch.lerp(o_lin.float(), o_local.float(), gate.float()[..., None]).to(dtype)


# the torch backend's hybrid: the two fast branches above, mixed in fp32
hybrid_attn_blocked = hybrid_from_branches(local_attn_blocked, linear_attn_chunked, fp32_mix=True)


# ---------------------------------------------------------------------------------------------
# Backend switch
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class AttentionOps:
    """The four attention ops one backend provides (signatures of the kernel references)."""

    local_attn: Callable
    linear_attn: Callable
    hybrid_attn: Callable
    block_topk: Callable
    prepare: Callable = lambda t: t  # input layout fix-up (contiguous for foreign kernels)


_REFERENCE = {"local_attn": local_attn_reference, "linear_attn": linear_attn_reference,
              "hybrid_attn": hybrid_attn_reference, "block_topk": block_topk_reference}
_TORCH = {"local_attn": local_attn_blocked, "linear_attn": linear_attn_chunked,
          "hybrid_attn": hybrid_attn_blocked, "block_topk": block_topk_reference}
_TRITON = {"local_attn": ("local_attn", "local_attn"),
           "linear_attn": ("linear_attn", "linear_attn"),
           "hybrid_attn": ("hybrid", "hybrid_attn"),
           "block_topk": ("block_score", "block_topk")}


def triton_op(package: str, name: str) -> Callable | None:
    """``genoctx.kernels.<package>.<name>`` if it imports (Triton kernels are optional; a
    Triton without a usable driver can fail at import with a RuntimeError)."""
    try:
        module = importlib.import_module(f"genoctx.kernels.{package}")
    except (ImportError, RuntimeError):
        return None
    return getattr(module, name, None)


def check_backend(backend: str) -> str:
    if backend not in BACKENDS:
        raise ValueError(f"backend must be one of {', '.join(BACKENDS)}, got {backend!r}")
    return backend


def triton_takes_head_dim(op: str, head_dim: int) -> bool:
    """Whether the Triton kernel of ``op`` computes heads of ``head_dim`` (the softmax kernels
    keep whole heads in registers: a few sizes; linear attention up to 128; block scores up to
    256)."""
    from genoctx.kernels._triton_utils import SUPPORTED_HEAD_DIMS  # torch only: no triton

    if op in ("local_attn", "hybrid_attn"):
        return head_dim in SUPPORTED_HEAD_DIMS
    if op == "linear_attn":
        return head_dim <= 128
    return head_dim <= 256  # block_topk


def attention_ops(backend: str, device: torch.device, head_dim: int | None = None
                  ) -> AttentionOps:
    """Resolve ``backend`` for tensors on ``device`` and heads of ``head_dim`` (see the module
    docstring): under ``auto`` an op whose kernel does not take ``head_dim`` runs the ``torch``
    path; under ``triton`` that is a ValueError before any work."""
    check_backend(backend)
    if backend == "reference":
        return AttentionOps(**_REFERENCE, prepare=torch.Tensor.contiguous)
    if backend == "torch":
        return AttentionOps(**_TORCH)
    ops = {}
    for op, (package, name) in _TRITON.items():
        fn = triton_op(package, name)
        if backend == "triton" and fn is None:
            raise ValueError(f"backend 'triton' needs genoctx.kernels.{package}.{name}, which is "
                             f"not available here; use backend 'auto' or 'torch'")
        fits = head_dim is None or triton_takes_head_dim(op, head_dim)
        if backend == "triton" and not fits:
            raise ValueError(f"backend 'triton': the {op} kernel does not take head_dim "
                             f"{head_dim}; use backend 'auto' (which runs such ops in PyTorch) "
                             f"or 'torch'")
        use = fn is not None and fits and (backend == "triton"
                                           or torch.device(device).type == "cuda")
        ops[op] = fn if use else _TORCH[op]
    if (hybrid_impl() == "split" and ops["hybrid_attn"] is not _TORCH["hybrid_attn"]
            and ops["local_attn"] is not _TORCH["local_attn"]
            and ops["linear_attn"] is not _TORCH["linear_attn"]):
        ops["hybrid_attn"] = hybrid_from_branches(ops["local_attn"], ops["linear_attn"])
    foreign = any(ops[op] is not _TORCH[op] for op in ops)
    return AttentionOps(**ops, prepare=torch.Tensor.contiguous if foreign else (lambda t: t))


HYBRID_IMPLS = ("fused", "split")
HYBRID_DEFAULT = "fused"


def hybrid_impl() -> str:
    """How the ``triton`` ops compute the hybrid layer: ``fused`` (one kernel,
    ``genoctx.kernels.hybrid``) or ``split`` (the local and linear kernels and a lerp,
    :func:`hybrid_from_branches`); ``$GENOCTX_HYBRID`` overrides :data:`HYBRID_DEFAULT`."""
    from genoctx.kernels._triton_utils import env_choice  # torch only: no triton needed

    return env_choice("GENOCTX_HYBRID", HYBRID_IMPLS, HYBRID_DEFAULT)


# ---------------------------------------------------------------------------------------------
# The layer
# ---------------------------------------------------------------------------------------------


@dataclass
class AttnCarry:
    """Per-layer context carried between segments (heads-first): the last blocks of rotated
    ``q [B, H, P, hd]``, ``k, v [B, Hk, P, hd]``, gate ``[B, H, P]``, and the linear-attention
    state ``(S, z)``."""

    q: torch.Tensor
    k: torch.Tensor
    v: torch.Tensor
    g: torch.Tensor
    state: State


def block_mean(x_BHT: torch.Tensor, block_size: int) -> torch.Tensor:
    """Mean over the valid positions of each block: ``[B, H, T, *] -> [B, H, NB, *]``.

    The same numbers as ``pool_blocks`` of the block_score reference, on heads-first data.
    """
    B, H, T = x_BHT.shape[:3]
    NB = -(-T // block_size)
    tail = x_BHT.shape[3:]
    pad = NB * block_size - T
    x = x_BHT.float()
    if pad:
        x = torch.cat([x, x.new_zeros(B, H, pad, *tail)], 2)
    sums = x.reshape(B, H, NB, block_size, *tail).sum(3)
    counts = torch.full((NB,), float(block_size), device=x.device)
    counts[-1] = block_size - pad
    return sums / counts.view(NB, *([1] * len(tail)))


def select_extra_blocks(q, k, gate, *, block_size, top_k_blocks, window_blocks, causal,
                        block_topk, prepare=lambda t: t) -> torch.Tensor | None:
    """Dynamic top-k far blocks: ``[B, H, NB, K'] int64`` (``-1`` = none), or None if none.

    ``q: [B, H, T, hd]`` and ``gate: [B, H, T]`` heads-first, ``k: [B, T, H, hd]``. Block ``i``
    of head ``h`` gets ``n = round(top_k_blocks · ḡ)`` blocks (round half to even), chosen by
    ``block_topk`` from pooled ``q̄ · k̄`` scores. Causal: ``q̄`` and ``ḡ`` are those of block
    ``i − 1`` (a one-block right shift). Trailing all-empty slots are dropped.
    """
    B, H, T, D = q.shape
    NB = -(-T // block_size)
    if top_k_blocks == 0 or window_blocks == 0 or NB < 3:
        return None  # no block lies beyond the halo
    q_bar, g_bar = block_mean(q, block_size), block_mean(gate, block_size)
    if causal:
        q_bar = torch.cat([torch.zeros_like(q_bar[:, :, :1]), q_bar[:, :, :-1]], 2)
        g_bar = torch.cat([torch.zeros_like(g_bar[:, :, :1]), g_bar[:, :, :-1]], 2)
    # Every position of block i holds q̄_i, so the op's own pooling returns exactly q̄_i.
    q_src = q_bar[:, :, :, None].expand(B, H, NB, block_size, D).reshape(B, H, -1, D)
    num_selected = torch.round(top_k_blocks * g_bar).long()
    idx, _ = block_topk(prepare(q_src[:, :, :T].transpose(1, 2)), k, block_size=block_size,
                        top_k=top_k_blocks, causal=causal, window_blocks=window_blocks,
                        num_selected=num_selected)
    if idx.is_meta:  # shapes only: any slot may be used
        return idx
    used = (idx >= 0).flatten(0, 2).any(0).nonzero()
    return idx[..., : int(used.max()) + 1].contiguous() if used.numel() else None


class HybridAttention(nn.Module):
    """``x_BTD -> y_BTD``: hybrid local/linear attention of one layer (see module docstring)."""

    def __init__(self, cfg: ModelConfig):
        super().__init__()
        self.cfg = cfg
        D, H, Hk, hd = cfg.d_model, cfg.num_heads, cfg.num_kv_heads, cfg.head_dim
        self.wq = nn.Linear(D, H * hd, bias=False)
        self.wk = nn.Linear(D, Hk * hd, bias=False)
        self.wv = nn.Linear(D, Hk * hd, bias=False)
        self.wo = nn.Linear(H * hd, D, bias=False)
        self.gate = nn.Linear(D, H, bias=True)

    def _expand(self, x_BKTd: torch.Tensor) -> torch.Tensor:
        """Grouped kv heads to query heads: head ``h`` reads kv head ``h // kv_groups``."""
        B, Hk, T, hd = x_BKTd.shape
        G = self.cfg.kv_groups
        if G == 1:
            return x_BKTd
        return x_BKTd[:, :, None].expand(B, Hk, G, T, hd).reshape(B, Hk * G, T, hd)

    def _project(self, x_BTD: torch.Tensor, freqs: torch.Tensor):
        """Rotated ``q [B, H, T, hd]``, ``k, v [B, Hk, T, hd]`` and gate ``[B, H, T]``."""
        cfg = self.cfg
        B, T, _ = x_BTD.shape
        H, Hk, hd = cfg.num_heads, cfg.num_kv_heads, cfg.head_dim
        q = rope_heads_first(self.wq(x_BTD).view(B, T, H, hd), freqs)
        k = rope_heads_first(self.wk(x_BTD).view(B, T, Hk, hd), freqs)
        v = self.wv(x_BTD).view(B, T, Hk, hd).transpose(1, 2).contiguous()
        g = torch.sigmoid(self.gate(x_BTD)).transpose(1, 2).contiguous()
        return q, k, v, g

    def forward(self, x_BTD: torch.Tensor, *, start: int = 0, freqs: torch.Tensor | None = None,
                carry: AttnCarry | None = None, keep_carry: bool = False,
                ops: AttentionOps) -> tuple[torch.Tensor, AttnCarry | None]:
        """Attend over ``x`` (positions ``start ..``) after the carried context, if any.

        ``freqs`` (from :func:`rope_freqs`, shared by all layers) is built when not given.
        Returns ``(y_BTD, carry)``; the new carry is built only when ``keep_carry``.
        """
        cfg = self.cfg
        B, T, _ = x_BTD.shape
        if freqs is None:
            freqs = rope_freqs(start, T, cfg.head_dim, cfg.rope_theta, x_BTD.device)
        q, k, v, g = self._project(x_BTD, freqs)
        state = None
        if carry is not None:
            q, k, v, g = (torch.cat([c, t], 2) for c, t in
                          ((carry.q, q), (carry.k, k), (carry.v, v), (carry.g, g)))
            state = carry.state
        P = q.shape[2] - T
        # The ops take [B, T, H, hd]; transposed views keep the memory heads-first.
        qt, kt, vt, gt = (ops.prepare(t.transpose(1, 2))
                          for t in (q, self._expand(k), self._expand(v), g))
        extra = select_extra_blocks(q, kt, g, block_size=cfg.block_size,
                                    top_k_blocks=cfg.top_k_blocks,
                                    window_blocks=cfg.topk_window_blocks, causal=cfg.causal,
                                    block_topk=ops.block_topk, prepare=ops.prepare)
        if P == 0:
            o, state = ops.hybrid_attn(qt, kt, vt, gt, block_size=cfg.block_size,
                                       causal=cfg.causal, extra_blocks=extra,
                                       initial_state=state, output_final_state=keep_carry)
        else:  # local ops see [carry ‖ segment]; linear attention the segment and the state
            o_loc = ops.local_attn(qt, kt, vt, block_size=cfg.block_size, causal=True,
                                   extra_blocks=extra)[:, P:]
            q_s, k_s, v_s = (ops.prepare(t[:, P:]) for t in (qt, kt, vt))
            o_lin, state = ops.linear_attn(q_s, k_s, v_s, causal=True, initial_state=state,
                                           output_final_state=keep_carry)
            o = mix(gt[:, P:], o_loc, o_lin, qt.dtype)
        y = self.wo(o.reshape(B, T, -1))
        if not keep_carry:
            return y, None
        assert q.shape[2] % cfg.block_size == 0, "segments must be block-aligned"
        n = cfg.carry_blocks * cfg.block_size
        keep = [t[:, :, -n:].clone() for t in (q, k, v, g)]
        return y, AttnCarry(*keep, state=state)
