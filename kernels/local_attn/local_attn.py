"""Triton block-local softmax attention (neighbour-block halo + extra top-k key blocks).

Legend: B batch, T tokens, H heads, D head dim, NB blocks, BS block size, K extra blocks per
query block, BH = B * H. Semantics: :mod:`genoctx.kernels.local_attn.reference`.

Design. One program per (query tile, head): a query tile is ``BLOCK_M`` rows inside one block
(a block longer than the tile is split into ``cdiv(BS, BLOCK_M)`` tiles, so any block size works).
It streams ``BLOCK_N``-key tiles over the local window -- one contiguous key range -- and then
over each valid extra block, with a flash-style online softmax in the log2 domain; the only T-sized
extra output is the row log-sum-exp for the backward. Key tiles that need no mask (all keys
visible to all rows) run a mask-free loop body. The backward recomputes probabilities: one kernel
per query tile for dq (same key loop as the forward) and one per key tile for dk/dv, which loops
over the query tiles that see it. Extra blocks make that set irregular; rather than scatter
dk/dv with atomics (fp32 buffers, non-deterministic sums, contention on popular blocks), the host
builds a reverse index (key block -> query blocks, CSR, device-side sort) and each dk/dv program
gathers its contributions, so gradients are deterministic and written once.
"""

from __future__ import annotations

import math

import torch
import triton
import triton.language as tl
from genoctx.kernels._triton_utils import (
    check_qkv,
    cuda_arch,
    dot_precision,
    first_order_only,
    interpreting,
    new_output,
    next_pow2,
    reverse_block_index,
    sanitize_extra_blocks,
    tile_config,
)
from genoctx.kernels.local_attn.reference import local_attn_reference

from genoctx.errors import InputError

LOG2E = 1.4426950408889634


@triton.jit
def _load_tile(base, start, offs_r, offs_d, stride_t, row_hi, HEAD_D: tl.constexpr,
               BLOCK_D: tl.constexpr, MASK_ROWS: tl.constexpr):
    """Rows ``start + offs_r`` (zero beyond ``row_hi`` when MASK_ROWS) of a [T, D] slice."""
    ptrs = base + tl.cast(start, tl.int64) * stride_t + offs_r[:, None] * stride_t + offs_d[None, :]
    if MASK_ROWS:
        mask = (start + offs_r)[:, None] < row_hi
        if BLOCK_D != HEAD_D:
            mask = mask & (offs_d[None, :] < HEAD_D)
        x = tl.load(ptrs, mask=mask, other=0.0)
    elif BLOCK_D != HEAD_D:
        x = tl.load(ptrs, mask=offs_d[None, :] < HEAD_D, other=0.0)
    else:
        x = tl.load(ptrs)
    return x


@triton.jit
def _store_tile(base, start, offs_r, offs_d, stride_t, row_hi, x, HEAD_D: tl.constexpr):
    ptrs = base + tl.cast(start, tl.int64) * stride_t + offs_r[:, None] * stride_t + offs_d[None, :]
    mask = ((start + offs_r)[:, None] < row_hi) & (offs_d[None, :] < HEAD_D)
    tl.store(ptrs, x.to(base.dtype.element_ty), mask=mask)


@triton.jit
def _tile_span(pid, TILES, BS, T, BLOCK: tl.constexpr):
    """Block index, first row and row bound of the tile ``pid`` (tiles never cross a block)."""
    blk = pid // TILES
    start = blk * BS + (pid % TILES) * BLOCK
    end = tl.minimum(tl.minimum(start + BLOCK, blk * BS + BS), T)
    return blk, start, end


@triton.jit
def _extra_span(EXTRA, row, x, BS, T):
    """Key range of extra slot ``x`` of query-block row ``row``; empty when the slot is -1."""
    j = tl.load(EXTRA + row + x)
    lo = tl.maximum(j, 0) * BS
    hi = tl.where(j >= 0, tl.minimum(lo + BS, T), lo)
    return lo, hi


@triton.jit
def _fwd_inner(acc, l_i, m_i, q, k_base, v_base, q_pos, start, end, hi, stride_t, qk_scale,
               offs_n, offs_d, HEAD_D: tl.constexpr, BLOCK_D: tl.constexpr,
               BLOCK_N: tl.constexpr, MASK: tl.constexpr, CAUSAL: tl.constexpr,
               PREC: tl.constexpr):
    """Online-softmax update over key tiles ``[start, end)``; keys >= hi masked when MASK."""
    for n in range(start, end, BLOCK_N):
        k = _load_tile(k_base, n, offs_n, offs_d, stride_t, hi, HEAD_D, BLOCK_D, MASK)
        v = _load_tile(v_base, n, offs_n, offs_d, stride_t, hi, HEAD_D, BLOCK_D, MASK)
        s = tl.dot(q, tl.trans(k), input_precision=PREC) * qk_scale
        if MASK:
            k_pos = n + offs_n
            ok = k_pos[None, :] < hi
            if CAUSAL:
                ok = ok & (k_pos[None, :] <= q_pos[:, None])
            s = tl.where(ok, s, float("-inf"))
        m_new = tl.maximum(m_i, tl.max(s, 1))
        p = tl.math.exp2(s - m_new[:, None])
        alpha = tl.math.exp2(m_i - m_new)
        l_i = l_i * alpha + tl.sum(p, 1)
        acc = tl.dot(p.to(v.dtype), v, acc * alpha[:, None], input_precision=PREC)
        m_i = m_new
    return acc, l_i, m_i


@triton.jit
def _local_window(blk, q_start, q_end, BS, T, CAUSAL: tl.constexpr, BLOCK_N: tl.constexpr):
    """Key range of the halo window and where its mask-free key tiles end."""
    lo = tl.maximum(blk - 1, 0) * BS
    if CAUSAL:
        hi = q_end
        full_end = lo + ((q_start - lo) // BLOCK_N) * BLOCK_N
    else:
        hi = tl.minimum((blk + 2) * BS, T)
        full_end = lo + ((hi - lo) // BLOCK_N) * BLOCK_N
    # Tiles past T in a short last block are empty: give them empty loops.
    hi = tl.where(q_start < q_end, hi, lo)
    return lo, tl.minimum(full_end, hi), hi


@triton.jit
def local_attn_fwd_kernel(Q, K, V, O, LSE, EXTRA, qk_scale, T, H, NB, NX, BS, TILES,
                          HEAD_D: tl.constexpr, BLOCK_D: tl.constexpr, BLOCK_M: tl.constexpr,
                          BLOCK_N: tl.constexpr, CAUSAL: tl.constexpr, HAS_EXTRA: tl.constexpr,
                          STORE_LSE: tl.constexpr, PREC: tl.constexpr):
    pid = tl.program_id(0)
    bh = tl.program_id(1)
    blk, q_start, q_end = _tile_span(pid, TILES, BS, T, BLOCK_M)
    stride_t = H * HEAD_D
    base = (bh // H).to(tl.int64) * T * stride_t + (bh % H) * HEAD_D
    offs_m = tl.arange(0, BLOCK_M)
    offs_n = tl.arange(0, BLOCK_N)
    offs_d = tl.arange(0, BLOCK_D)
    q = _load_tile(Q + base, q_start, offs_m, offs_d, stride_t, q_end, HEAD_D, BLOCK_D, True)
    q_pos = q_start + offs_m
    # A finite floor keeps exp2(m_old - m_new) defined while a row has seen only masked keys.
    m_i = tl.full([BLOCK_M], -1.0e30, dtype=tl.float32)
    l_i = tl.zeros([BLOCK_M], dtype=tl.float32)
    acc = tl.zeros([BLOCK_M, BLOCK_D], dtype=tl.float32)
    lo, full_end, hi = _local_window(blk, q_start, q_end, BS, T, CAUSAL, BLOCK_N)
    acc, l_i, m_i = _fwd_inner(acc, l_i, m_i, q, K + base, V + base, q_pos, lo, full_end, hi,
                               stride_t, qk_scale, offs_n, offs_d, HEAD_D, BLOCK_D, BLOCK_N,
                               False, CAUSAL, PREC)
    acc, l_i, m_i = _fwd_inner(acc, l_i, m_i, q, K + base, V + base, q_pos, full_end, hi, hi,
                               stride_t, qk_scale, offs_n, offs_d, HEAD_D, BLOCK_D, BLOCK_N,
                               True, CAUSAL, PREC)
    if HAS_EXTRA:
        row = (bh * NB + blk) * NX
        for x in range(tl.where(q_start < q_end, NX, 0)):
            e_lo, e_hi = _extra_span(EXTRA, row, x, BS, T)
            acc, l_i, m_i = _fwd_inner(acc, l_i, m_i, q, K + base, V + base, q_pos, e_lo, e_hi,
                                       e_hi, stride_t, qk_scale, offs_n, offs_d, HEAD_D,
                                       BLOCK_D, BLOCK_N, True, False, PREC)
    seen = l_i > 0.0  # a row with no visible key gets a zero output, as in the reference
    o = acc / tl.where(seen, l_i, 1.0)[:, None]
    _store_tile(O + base, q_start, offs_m, offs_d, stride_t, q_end, o, HEAD_D)
    if STORE_LSE:
        lse = tl.where(seen, m_i + tl.math.log2(tl.where(seen, l_i, 1.0)), float("inf"))
        tl.store(LSE + bh.to(tl.int64) * T + q_pos, lse, mask=q_pos < q_end)


@triton.jit
def local_attn_bwd_preprocess_kernel(O, DO, DELTA, T, H, HEAD_D: tl.constexpr,
                                     BLOCK_D: tl.constexpr, BLOCK_M: tl.constexpr):
    """``delta[bh, t] = sum_d o * do`` in fp32 (the softmax backward's row term)."""
    start = tl.program_id(0) * BLOCK_M
    bh = tl.program_id(1)
    stride_t = H * HEAD_D
    base = (bh // H).to(tl.int64) * T * stride_t + (bh % H) * HEAD_D
    offs_m = tl.arange(0, BLOCK_M)
    offs_d = tl.arange(0, BLOCK_D)
    o = _load_tile(O + base, start, offs_m, offs_d, stride_t, T, HEAD_D, BLOCK_D, True)
    do = _load_tile(DO + base, start, offs_m, offs_d, stride_t, T, HEAD_D, BLOCK_D, True)
    delta = tl.sum(o.to(tl.float32) * do.to(tl.float32), 1)
    pos = start + offs_m
    tl.store(DELTA + bh.to(tl.int64) * T + pos, delta, mask=pos < T)


@triton.jit
def _bwd_dq_inner(dq, q, do, lse, delta, k_base, v_base, q_pos, start, end, hi, stride_t,
                  qk_scale, offs_n, offs_d, HEAD_D: tl.constexpr, BLOCK_D: tl.constexpr,
                  BLOCK_N: tl.constexpr, MASK: tl.constexpr, CAUSAL: tl.constexpr,
                  PREC: tl.constexpr):
    for n in range(start, end, BLOCK_N):
        k = _load_tile(k_base, n, offs_n, offs_d, stride_t, hi, HEAD_D, BLOCK_D, MASK)
        v = _load_tile(v_base, n, offs_n, offs_d, stride_t, hi, HEAD_D, BLOCK_D, MASK)
        s = tl.dot(q, tl.trans(k), input_precision=PREC) * qk_scale
        if MASK:
            k_pos = n + offs_n
            ok = k_pos[None, :] < hi
            if CAUSAL:
                ok = ok & (k_pos[None, :] <= q_pos[:, None])
            s = tl.where(ok, s, float("-inf"))
        p = tl.math.exp2(s - lse[:, None])
        dp = tl.dot(do, tl.trans(v), input_precision=PREC)
        ds = p * (dp - delta[:, None])
        dq = tl.dot(ds.to(k.dtype), k, dq, input_precision=PREC)
    return dq


@triton.jit
def local_attn_bwd_kernel_dq(Q, K, V, DO, DQ, LSE, DELTA, EXTRA, sm_scale, qk_scale, T, H, NB,
                             NX, BS, TILES, HEAD_D: tl.constexpr, BLOCK_D: tl.constexpr,
                             BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                             CAUSAL: tl.constexpr, HAS_EXTRA: tl.constexpr, PREC: tl.constexpr):
    pid = tl.program_id(0)
    bh = tl.program_id(1)
    blk, q_start, q_end = _tile_span(pid, TILES, BS, T, BLOCK_M)
    stride_t = H * HEAD_D
    base = (bh // H).to(tl.int64) * T * stride_t + (bh % H) * HEAD_D
    offs_m = tl.arange(0, BLOCK_M)
    offs_n = tl.arange(0, BLOCK_N)
    offs_d = tl.arange(0, BLOCK_D)
    q = _load_tile(Q + base, q_start, offs_m, offs_d, stride_t, q_end, HEAD_D, BLOCK_D, True)
    do = _load_tile(DO + base, q_start, offs_m, offs_d, stride_t, q_end, HEAD_D, BLOCK_D, True)
    q_pos = q_start + offs_m
    row_ptr = bh.to(tl.int64) * T + q_pos
    lse = tl.load(LSE + row_ptr, mask=q_pos < q_end, other=float("inf"))
    delta = tl.load(DELTA + row_ptr, mask=q_pos < q_end, other=0.0)
    dq = tl.zeros([BLOCK_M, BLOCK_D], dtype=tl.float32)
    lo, full_end, hi = _local_window(blk, q_start, q_end, BS, T, CAUSAL, BLOCK_N)
    dq = _bwd_dq_inner(dq, q, do, lse, delta, K + base, V + base, q_pos, lo, full_end, hi,
                       stride_t, qk_scale, offs_n, offs_d, HEAD_D, BLOCK_D, BLOCK_N, False,
                       CAUSAL, PREC)
    dq = _bwd_dq_inner(dq, q, do, lse, delta, K + base, V + base, q_pos, full_end, hi, hi,
                       stride_t, qk_scale, offs_n, offs_d, HEAD_D, BLOCK_D, BLOCK_N, True,
                       CAUSAL, PREC)
    if HAS_EXTRA:
        row = (bh * NB + blk) * NX
        for x in range(tl.where(q_start < q_end, NX, 0)):
            e_lo, e_hi = _extra_span(EXTRA, row, x, BS, T)
            dq = _bwd_dq_inner(dq, q, do, lse, delta, K + base, V + base, q_pos, e_lo, e_hi,
                               e_hi, stride_t, qk_scale, offs_n, offs_d, HEAD_D, BLOCK_D,
                               BLOCK_N, True, False, PREC)
    _store_tile(DQ + base, q_start, offs_m, offs_d, stride_t, q_end, dq * sm_scale, HEAD_D)


@triton.jit
def _bwd_dkdv_inner(dk, dv, k, v, k_pos, q_base, do_base, lse_ptr, delta_ptr, start, end, hi,
                    stride_t, qk_scale, offs_m, offs_d, HEAD_D: tl.constexpr,
                    BLOCK_D: tl.constexpr, BLOCK_M: tl.constexpr, MASK: tl.constexpr,
                    CAUSAL: tl.constexpr, PREC: tl.constexpr):
    """Accumulate dk (unscaled) and dv of one key tile over query tiles ``[start, end)``."""
    for m in range(start, end, BLOCK_M):
        q = _load_tile(q_base, m, offs_m, offs_d, stride_t, hi, HEAD_D, BLOCK_D, MASK)
        do = _load_tile(do_base, m, offs_m, offs_d, stride_t, hi, HEAD_D, BLOCK_D, MASK)
        q_pos = m + offs_m
        if MASK:
            lse = tl.load(lse_ptr + q_pos, mask=q_pos < hi, other=float("inf"))
            delta = tl.load(delta_ptr + q_pos, mask=q_pos < hi, other=0.0)
        else:
            lse = tl.load(lse_ptr + q_pos)
            delta = tl.load(delta_ptr + q_pos)
        s_t = tl.dot(k, tl.trans(q), input_precision=PREC) * qk_scale
        if MASK:
            ok = q_pos[None, :] < hi
            if CAUSAL:
                ok = ok & (q_pos[None, :] >= k_pos[:, None])
            s_t = tl.where(ok, s_t, float("-inf"))
        p_t = tl.math.exp2(s_t - lse[None, :])
        dv = tl.dot(p_t.to(do.dtype), do, dv, input_precision=PREC)
        dp_t = tl.dot(v, tl.trans(do), input_precision=PREC)
        ds_t = p_t * (dp_t - delta[None, :])
        dk = tl.dot(ds_t.to(q.dtype), q, dk, input_precision=PREC)
    return dk, dv


@triton.jit
def _query_window(blk, k_start, k_end, BS, T, CAUSAL: tl.constexpr, BLOCK_M: tl.constexpr,
                  BLOCK_N: tl.constexpr):
    """Query range that sees a key tile through the halo: masked head, mask-free middle, tail."""
    hi = tl.minimum((blk + 2) * BS, T)
    if CAUSAL:
        lo = tl.minimum(k_start, hi)
        # Query tiles overlapping the key tile's diagonal need the causal mask.
        head_end = tl.minimum(k_start + ((BLOCK_N + BLOCK_M - 1) // BLOCK_M) * BLOCK_M, hi)
    else:
        lo = tl.maximum(blk - 1, 0) * BS
        head_end = lo
    hi = tl.where(k_start < k_end, hi, lo)  # empty tile past T: empty loops
    head_end = tl.minimum(head_end, hi)
    full_end = head_end + ((hi - head_end) // BLOCK_M) * BLOCK_M
    return lo, head_end, full_end, hi


@triton.jit
def local_attn_bwd_kernel_dkdv(Q, K, V, DO, DK, DV, LSE, DELTA, REV_OFF, REV_IDX, sm_scale,
                               qk_scale, T, H, NB, BS, TILES, HEAD_D: tl.constexpr,
                               BLOCK_D: tl.constexpr, BLOCK_M: tl.constexpr,
                               BLOCK_N: tl.constexpr, CAUSAL: tl.constexpr,
                               HAS_EXTRA: tl.constexpr, PREC: tl.constexpr):
    pid = tl.program_id(0)
    bh = tl.program_id(1)
    blk, k_start, k_end = _tile_span(pid, TILES, BS, T, BLOCK_N)
    stride_t = H * HEAD_D
    base = (bh // H).to(tl.int64) * T * stride_t + (bh % H) * HEAD_D
    offs_m = tl.arange(0, BLOCK_M)
    offs_n = tl.arange(0, BLOCK_N)
    offs_d = tl.arange(0, BLOCK_D)
    k = _load_tile(K + base, k_start, offs_n, offs_d, stride_t, k_end, HEAD_D, BLOCK_D, True)
    v = _load_tile(V + base, k_start, offs_n, offs_d, stride_t, k_end, HEAD_D, BLOCK_D, True)
    k_pos = k_start + offs_n
    lse_ptr = LSE + bh.to(tl.int64) * T
    delta_ptr = DELTA + bh.to(tl.int64) * T
    dk = tl.zeros([BLOCK_N, BLOCK_D], dtype=tl.float32)
    dv = tl.zeros([BLOCK_N, BLOCK_D], dtype=tl.float32)
    lo, head_end, full_end, hi = _query_window(blk, k_start, k_end, BS, T, CAUSAL, BLOCK_M,
                                                 BLOCK_N)
    dk, dv = _bwd_dkdv_inner(dk, dv, k, v, k_pos, Q + base, DO + base, lse_ptr, delta_ptr, lo,
                             head_end, hi, stride_t, qk_scale, offs_m, offs_d, HEAD_D, BLOCK_D,
                             BLOCK_M, True, CAUSAL, PREC)
    dk, dv = _bwd_dkdv_inner(dk, dv, k, v, k_pos, Q + base, DO + base, lse_ptr, delta_ptr,
                             head_end, full_end, hi, stride_t, qk_scale, offs_m, offs_d, HEAD_D,
                             BLOCK_D, BLOCK_M, False, CAUSAL, PREC)
    dk, dv = _bwd_dkdv_inner(dk, dv, k, v, k_pos, Q + base, DO + base, lse_ptr, delta_ptr,
                             full_end, hi, hi, stride_t, qk_scale, offs_m, offs_d, HEAD_D,
                             BLOCK_D, BLOCK_M, True, CAUSAL, PREC)
    if HAS_EXTRA:
        r_lo = tl.load(REV_OFF + bh * NB + blk)
        r_hi = tl.where(k_start < k_end, tl.load(REV_OFF + bh * NB + blk + 1), r_lo)
        for r in range(r_lo, r_hi):
            i = tl.load(REV_IDX + r)
            e_lo = i * BS
            e_hi = tl.minimum(e_lo + BS, T)
            dk, dv = _bwd_dkdv_inner(dk, dv, k, v, k_pos, Q + base, DO + base, lse_ptr,
                                     delta_ptr, e_lo, e_hi, e_hi, stride_t, qk_scale, offs_m,
                                     offs_d, HEAD_D, BLOCK_D, BLOCK_M, True, False, PREC)
    _store_tile(DK + base, k_start, offs_n, offs_d, stride_t, k_end, dk * sm_scale, HEAD_D)
    _store_tile(DV + base, k_start, offs_n, offs_d, stride_t, k_end, dv, HEAD_D)


def _launch_shape(q: torch.Tensor, block_size: int, kind: str):
    B, T, H, D = q.shape
    tiles = tile_config(kind, block_size=block_size, head_dim=D, arch=cuda_arch(q.device))
    return B, T, H, D, (T + block_size - 1) // block_size, tiles


def local_attn_fwd(q, k, v, extra, *, block_size: int, causal: bool, scale: float,
                   need_lse: bool):
    """Launch the forward. ``extra``: sanitised ``[B, H, NB, K]`` int32 or None.

    Returns ``(o [B, T, H, D], lse [B*H, T] fp32 in log2 units, or None)``.
    """
    B, T, H, D, NB, tiles = _launch_shape(q, block_size, "local_fwd")
    per_block = triton.cdiv(block_size, tiles.block_m)
    o = new_output(q.shape, dtype=q.dtype, device=q.device)
    lse = new_output((B * H, T), dtype=torch.float32, device=q.device) if need_lse else o
    extra_t = extra if extra is not None else torch.empty(1, dtype=torch.int32, device=q.device)
    local_attn_fwd_kernel[(NB * per_block, B * H)](
        q, k, v, o, lse, extra_t, scale * LOG2E, T, H, NB,
        extra.shape[-1] if extra is not None else 0, block_size, per_block,
        HEAD_D=D, BLOCK_D=next_pow2(D), BLOCK_M=tiles.block_m, BLOCK_N=tiles.block_n,
        CAUSAL=causal, HAS_EXTRA=extra is not None, STORE_LSE=need_lse,
        PREC=dot_precision(q.dtype), num_warps=tiles.num_warps, num_stages=tiles.num_stages)
    return o, (lse if need_lse else None)


def _launch_bwd_dq(q, k, v, do, lse, delta, extra, *, block_size, causal, scale):
    B, T, H, D, NB, tq = _launch_shape(q, block_size, "local_bwd_dq")
    dq = new_output(q.shape, dtype=q.dtype, device=q.device)
    per_q = triton.cdiv(block_size, tq.block_m)
    local_attn_bwd_kernel_dq[(NB * per_q, B * H)](
        q, k, v, do, dq, lse, delta, extra if extra is not None else lse, scale,
        scale * LOG2E, T, H, NB, extra.shape[-1] if extra is not None else 0, block_size, per_q,
        HEAD_D=D, BLOCK_D=next_pow2(D), BLOCK_M=tq.block_m, BLOCK_N=tq.block_n, CAUSAL=causal,
        HAS_EXTRA=extra is not None, PREC=dot_precision(q.dtype), num_warps=tq.num_warps,
        num_stages=tq.num_stages)
    return dq


def _launch_bwd_dkdv(q, k, v, do, lse, delta, extra, *, block_size, causal, scale):
    B, T, H, D, NB, tk = _launch_shape(q, block_size, "local_bwd_dkdv")
    dk, dv = (new_output(q.shape, dtype=q.dtype, device=q.device) for _ in range(2))
    rev_off, rev_idx = reverse_block_index(extra, NB) if extra is not None else (lse, lse)
    per_k = triton.cdiv(block_size, tk.block_n)
    local_attn_bwd_kernel_dkdv[(NB * per_k, B * H)](
        q, k, v, do, dk, dv, lse, delta, rev_off, rev_idx, scale, scale * LOG2E, T, H, NB,
        block_size, per_k, HEAD_D=D, BLOCK_D=next_pow2(D), BLOCK_M=tk.block_m,
        BLOCK_N=tk.block_n, CAUSAL=causal, HAS_EXTRA=extra is not None,
        PREC=dot_precision(q.dtype), num_warps=tk.num_warps, num_stages=tk.num_stages)
    return dk, dv


def local_attn_bwd(q, k, v, o, lse, do, extra, *, block_size: int, causal: bool, scale: float):
    """Launch the backward kernels; returns ``(dq, dk, dv)`` in the input dtype."""
    B, T, H, D = q.shape
    delta = new_output((B * H, T), dtype=torch.float32, device=q.device)
    local_attn_bwd_preprocess_kernel[(triton.cdiv(T, 64), B * H)](
        o, do, delta, T, H, HEAD_D=D, BLOCK_D=next_pow2(D), BLOCK_M=64)
    kw = {"block_size": block_size, "causal": causal, "scale": scale}
    dq = _launch_bwd_dq(q, k, v, do, lse, delta, extra, **kw)
    dk, dv = _launch_bwd_dkdv(q, k, v, do, lse, delta, extra, **kw)
    return dq, dk, dv


class LocalAttnFunction(torch.autograd.Function):
    """Autograd wrapper: saves q, k, v, o and the row log-sum-exp; indices get no gradient."""

    @staticmethod
    def forward(ctx, q, k, v, extra, block_size, causal, scale, need_grad):
        o, lse = local_attn_fwd(q, k, v, extra, block_size=block_size, causal=causal,
                                scale=scale, need_lse=need_grad)
        if need_grad:
            ctx.save_for_backward(q, k, v, o, lse, extra)
        ctx.args = (block_size, causal, scale)
        return o

    @staticmethod
    @first_order_only
    def backward(ctx, do):
        q, k, v, o, lse, extra = ctx.saved_tensors
        block_size, causal, scale = ctx.args
        dq, dk, dv = local_attn_bwd(q, k, v, o, lse, do.contiguous(), extra,
                                    block_size=block_size, causal=causal, scale=scale)
        return dq, dk, dv, None, None, None, None, None


def local_attn(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    *,
    block_size: int,
    causal: bool = True,
    extra_blocks: torch.Tensor | None = None,
    scale: float | None = None,
) -> torch.Tensor:
    """Block-local softmax attention with a neighbour-block halo, fused in Triton.

    Same contract as :func:`genoctx.kernels.local_attn.reference.local_attn_reference`: a query
    in block ``i`` attends to blocks ``i-1, i`` (causal, keys after it masked) or ``i-1..i+1``
    (bidirectional), plus the valid entries of ``extra_blocks[b, h, i]``.

    Args:
        q, k, v: ``[B, T, H, D]``, one dtype among fp32/fp16/bf16, D in {32, 48, 64, 128}.
        block_size: tokens per block (any size; the last block may be short).
        causal: mask keys after the query.
        extra_blocks: ``[B, H, NB, K]`` integer key-block indices, NB = ceil(T / block_size);
            -1, out-of-range, in-window and (causal) future entries are ignored. No gradient.
        scale: score scale, default ``D ** -0.5``.

    Returns:
        ``o: [B, T, H, D]`` in ``q.dtype``. Differentiable in q, k, v.

    Example:
        >>> q = k = v = torch.randn(1, 4096, 8, 64, device="cuda", dtype=torch.bfloat16)
        >>> o = local_attn(q, k, v, block_size=512)  # [1, 4096, 8, 64]

    On CPU tensors it runs the reference, unless ``TRITON_INTERPRET=1``.
    """
    if q.device.type == "cpu" and not interpreting():
        return local_attn_reference(q, k, v, block_size=block_size, causal=causal,
                                    extra_blocks=extra_blocks, scale=scale)
    check_qkv(q, k, v, block_size)
    B, T, H, D = q.shape
    NB = (T + block_size - 1) // block_size
    extra = sanitize_extra_blocks(extra_blocks, batch=B, heads=H, num_blocks=NB, causal=causal,
                                  device=q.device)
    scale = D ** -0.5 if scale is None else float(scale)
    if not math.isfinite(scale):
        raise InputError(f"scale must be a finite number, got {scale}")
    need_grad = torch.is_grad_enabled() and any(t.requires_grad for t in (q, k, v))
    return LocalAttnFunction.apply(q.contiguous(), k.contiguous(), v.contiguous(), extra,
                                   block_size, causal, scale, need_grad)
