"""Pooled block scores and top-k key-block selection in Triton.

Legend: B batch, T tokens, H heads, D head dim, NB blocks, BS block size, W window (candidate
blocks per side), W' candidate slots (W causal, 2W bidirectional), K top-k.

Semantics are those of :func:`genoctx.kernels.block_score.reference.block_topk_reference`.

What runs where. The block means are one Triton pass over ``q`` and ``k`` (the PyTorch path pads
and copies both to fp32 first). The banded scores ``[B, H, NB, W']`` come from a Triton kernel
that multiplies tiles of pooled queries and keys and scatters each product into its candidate
slot, so the ``[NB, W', D]`` gather of the reference never exists; slots without a candidate keep
the ``-inf`` they were filled with. The selection itself is ``torch.topk`` on that tensor (same
tie rule as the reference), which Triton would not beat. The scores use IEEE fp32 products so that
the ranking matches the fp32 reference. Outputs carry no gradient: the selection is discrete.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

from genoctx.errors import InputError
from genoctx.kernels._triton_utils import interpreting, new_output, next_pow2
from genoctx.kernels.block_score.reference import block_topk_reference, candidate_blocks


@triton.jit
def block_pool_kernel(
    x, out, T, H, D, NB, BS,
    BT: tl.constexpr, BD: tl.constexpr,
):
    """Mean of each block's valid rows: ``x [B, T, H, D] -> out [B, H, NB, D]`` fp32.

    Grid (B*H, NB).
    """
    i_bh, i_n = tl.program_id(0), tl.program_id(1)
    b, h = i_bh // H, i_bh % H
    base = x + (b.to(tl.int64) * T * H + h) * D
    offs_t, offs_d = tl.arange(0, BT), tl.arange(0, BD)
    md = offs_d < D
    t_start = i_n.to(tl.int64) * BS
    t_end = tl.minimum(t_start + BS, T)
    acc = tl.zeros([BT, BD], dtype=tl.float32)
    for i in range(0, tl.cdiv(BS, BT)):
        t = t_start + i * BT + offs_t
        mask = (t < t_end)[:, None] & md[None, :]
        x_t = tl.load(base + t[:, None] * (H * D) + offs_d[None, :], mask=mask, other=0.0)
        acc += x_t.to(tl.float32)
    mean = tl.sum(acc, 0) / (t_end - t_start).to(tl.float32)
    tl.store(out + (i_bh.to(tl.int64) * NB + i_n) * D + offs_d, mean, mask=md)


@triton.jit
def block_score_kernel(
    qbar, kbar, s, NB, D, W, WS, scale,
    BIDIR: tl.constexpr, BI: tl.constexpr, BJ: tl.constexpr, BD: tl.constexpr,
):
    """Banded scores ``s [B, H, NB, WS]`` (WS = W or 2W) from pooled ``[B, H, NB, D]``.

    Grid (B*H, NB/BI). Slot ``w < W`` holds key block ``i - 2 - w``; slot ``W + w``
    (bidirectional) holds ``i + 2 + w``.
    """
    i_bh, i_blk = tl.program_id(0), tl.program_id(1)
    offs_i = i_blk * BI + tl.arange(0, BI)
    offs_j, offs_d = tl.arange(0, BJ), tl.arange(0, BD)
    md = offs_d < D
    base = i_bh.to(tl.int64) * NB * D
    qt = tl.load(qbar + base + offs_i[:, None] * D + offs_d[None, :],
                 mask=(offs_i < NB)[:, None] & md[None, :], other=0.0)
    s_rows = s + (i_bh.to(tl.int64) * NB + offs_i)[:, None] * WS
    row_ok = (offs_i < NB)[:, None]
    # backward candidates: key blocks [i0 - 1 - W, i0 + BI - 3]
    j_lo = tl.maximum(i_blk * BI - 1 - W, 0)
    j_hi = tl.minimum(i_blk * BI + BI - 3, NB - 1)
    for jt in range(0, tl.cdiv(j_hi - j_lo + 1, BJ)):
        j = j_lo + jt * BJ + offs_j
        kt = tl.load(kbar + base + j[:, None] * D + offs_d[None, :],
                     mask=(j < NB)[:, None] & md[None, :], other=0.0)
        p = tl.dot(qt, tl.trans(kt), input_precision="ieee") * scale
        w = offs_i[:, None] - 2 - j[None, :]
        ok = row_ok & (w >= 0) & (w < W) & (j < NB)[None, :]
        tl.store(s_rows + w, p, mask=ok)
    if BIDIR:  # forward candidates: key blocks [i0 + 2, i0 + BI + W]
        j_lo = i_blk * BI + 2
        j_hi = tl.minimum(i_blk * BI + BI + W, NB - 1)
        for jt in range(0, tl.cdiv(j_hi - j_lo + 1, BJ)):
            j = j_lo + jt * BJ + offs_j
            kt = tl.load(kbar + base + j[:, None] * D + offs_d[None, :],
                         mask=(j < NB)[:, None] & md[None, :], other=0.0)
            p = tl.dot(qt, tl.trans(kt), input_precision="ieee") * scale
            w = j[None, :] - offs_i[:, None] - 2
            ok = row_ok & (w >= 0) & (w < W) & (j < NB)[None, :]
            tl.store(s_rows + W + w, p, mask=ok)


# ---------------------------------------------------------------------------------------------
# host wrappers
# ---------------------------------------------------------------------------------------------

def pool_blocks(x: torch.Tensor, block_size: int) -> torch.Tensor:
    """Block means ``[B, T, H, D] -> [B, H, NB, D]`` (fp32) in one Triton pass."""
    B, T, H, D = x.shape
    NB = triton.cdiv(T, block_size)
    out = new_output((B, H, NB, D), dtype=torch.float32, device=x.device)
    BD = max(16, next_pow2(D))
    BT = max(1, min(next_pow2(block_size), 8192 // BD))
    block_pool_kernel[(B * H, NB)](x.contiguous(), out, T, H, D, NB, block_size, BT=BT, BD=BD,
                                   num_warps=4)
    return out


def banded_scores(qbar: torch.Tensor, kbar: torch.Tensor, W: int, causal: bool,
                  scale: float) -> torch.Tensor:
    """Scores of each query block's candidates ``[B, H, NB, W']``, ``-inf`` where none exists."""
    B, H, NB, D = qbar.shape
    WS = W if causal else 2 * W
    s = torch.full((B, H, NB, WS), float("-inf"), device=qbar.device, dtype=torch.float32)
    BI = BJ = 32
    BD = max(16, next_pow2(D))
    block_score_kernel[(B * H, triton.cdiv(NB, BI))](qbar, kbar, s, NB, D, W, WS, scale,
                                                     BIDIR=not causal, BI=BI, BJ=BJ, BD=BD,
                                                     num_warps=4)
    return s


@torch.no_grad()
def _candidate_scores(q, k, block_size, causal, window_blocks, scale):
    """``(scores [B, H, NB, W'], cand [NB, W'])``; the selection is discrete, so no graph."""
    qbar, kbar = pool_blocks(q, block_size), pool_blocks(k, block_size)
    NB = qbar.shape[2]
    W = NB if window_blocks is None else window_blocks
    cand, _ = candidate_blocks(NB, causal, window_blocks, q.device)
    return banded_scores(qbar, kbar, W, causal, scale), cand


def block_topk(
    q: torch.Tensor,
    k: torch.Tensor,
    *,
    block_size: int,
    top_k: int,
    causal: bool = True,
    window_blocks: int | None = None,
    num_selected: torch.Tensor | None = None,
    scale: float | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Top-k far key blocks per query block by pooled-mean score.

    Same result as :func:`~genoctx.kernels.block_score.reference.block_topk_reference`; memory
    is O(B * H * NB * W') for the banded scores. No gradient flows through either output. CPU
    tensors run the reference unless ``TRITON_INTERPRET=1``.

    Args:
        q: Queries ``[B, T, H, D]``.
        k: Keys ``[B, T, H, D]``.
        block_size: Tokens per block (the last block may be short).
        top_k: Slots per query block, ``K``.
        causal: Only earlier blocks are candidates.
        window_blocks: ``W``: candidates are limited to the W nearest blocks beyond the local
            window on each allowed side; ``None`` means all blocks.
        num_selected: ``[B, H, NB]`` ints; slots at or beyond it are emptied.
        scale: Score scale, ``D ** -0.5`` by default.

    Returns:
        ``(indices [B, H, NB, K] int64, scores [B, H, NB, K] fp32)``; empty slots hold ``-1`` and
        ``-inf``, filled slots are in descending score order.

    Example:
        >>> q = torch.randn(1, 65536, 16, 64, device="cuda", dtype=torch.bfloat16)
        >>> idx, s = block_topk(q, q, block_size=512, top_k=4, window_blocks=32)
        >>> idx.shape
        torch.Size([1, 16, 128, 4])
    """
    if q.dim() != 4 or k.shape != q.shape:
        raise InputError(f"block_topk wants q, k of one shape [B, T, H, D]; got "
                         f"{tuple(q.shape)} and {tuple(k.shape)}")
    if block_size < 1 or top_k < 0 or (window_blocks is not None and window_blocks < 1):
        raise InputError(f"block_size and window_blocks must be >= 1 and top_k >= 0; got "
                         f"block_size={block_size}, top_k={top_k}, window_blocks={window_blocks}")
    if not q.is_cuda and not interpreting():
        return block_topk_reference(q, k, block_size=block_size, top_k=top_k, causal=causal,
                                    window_blocks=window_blocks, num_selected=num_selected,
                                    scale=scale)
    if q.shape[-1] > 256:
        raise InputError(f"block_topk's kernel takes head dims up to 256, got {q.shape[-1]}")
    B, T, H, D = q.shape
    scale = D ** -0.5 if scale is None else scale
    s, cand = _candidate_scores(q, k, block_size, causal, window_blocks, float(scale))
    NB = s.shape[2]
    kk = min(top_k, s.shape[-1])
    top_s, top_i = torch.topk(s, kk, dim=-1)
    idx = torch.gather(cand.expand(B, H, NB, -1), 3, top_i)
    idx = torch.where(torch.isinf(top_s), torch.full_like(idx, -1), idx)
    if kk < top_k:
        idx = torch.cat([idx, idx.new_full((B, H, NB, top_k - kk), -1)], -1)
        top_s = torch.cat([top_s, top_s.new_full((B, H, NB, top_k - kk), float("-inf"))], -1)
    if num_selected is not None:
        drop = torch.arange(top_k, device=q.device) >= num_selected.to(q.device)[..., None]
        idx = idx.masked_fill(drop, -1)
        top_s = top_s.masked_fill(drop, float("-inf"))
    return idx, top_s
