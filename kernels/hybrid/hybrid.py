"""Triton fused hybrid attention: gate * block-local softmax + (1 - gate) * elu+1 linear attention.

Legend: B batch, T tokens, H heads, D head dim, NB blocks, BS block size (= the linear
attention's chunk), BH = B * H, S / z the linear state ``[D, D]`` / normaliser ``[D]``.
Semantics: :mod:`genoctx.kernels.hybrid.reference`.

What is fused. The linear branch is chunked with chunk = block size, so its intra-chunk part
(``phi(q_t) . phi(k_s)`` for ``s <= t`` in the query's own block) needs exactly the keys that
the local branch's causal loop already loads for the own block. So:

* pre-pass ``hybrid_chunk_state_kernel`` (one program per block and head): ``phi(K_c)^T V_c``
  and ``sum phi(K_c)`` per chunk, then an in-place ``cumsum`` over chunks on the host gives each
  block's incoming state (initial state included) and the final state;
* ``hybrid_fwd_kernel``: one program per query tile reads q once and each K/V tile once, runs the
  online softmax over the halo and extra blocks, adds the linear intra-chunk terms on the own
  block's tiles, the inter-chunk term ``phi(q) S`` from the pre-pass, and writes the gated mix.

The backward mirrors this: ``hybrid_bwd_state_kernel`` computes the per-row terms (gate gradient,
softmax delta, normaliser gradient) and per-chunk ``phi(Q_c)^T dN_c``, whose reverse cumsum is the
state gradient each chunk receives from later ones; then one dq kernel (per query tile) and one
dk/dv kernel (per key tile, extra blocks through the reverse index of :mod:`local_attn`) each do
the local and linear gradients in one pass over the same tiles. Rows save ``o_loc - o_lin``
instead of both branch outputs: with ``o`` it recovers every dot product the backward needs,
without dividing by ``gate`` or ``1 - gate``.
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
    env_choice,
    first_order_only,
    interpreting,
    new_output,
    next_pow2,
    reverse_block_index,
    sanitize_extra_blocks,
    tile_config,
)
from genoctx.kernels.hybrid.reference import hybrid_attn_reference
from genoctx.kernels.local_attn.local_attn import (
    LOG2E,
    _extra_span,
    _load_tile,
    _local_window,
    _store_tile,
    _tile_span,
)

from genoctx.errors import InputError

EPS = 1e-6  # the linear branch's normaliser floor, as in linear_attn_reference
# How the causal forward and dk/dv kernels walk their tiles. "one": one loop over the window,
# the own block's tiles adding the linear intra-chunk terms beside the softmax ones. "two": the
# intra-chunk terms in a loop of their own over the own block, then the softmax loop as
# local_attn runs it, so that the two never hold their temporaries at once. Compiled for sm_90
# (Triton 3.7.1, B1 H16 D64 bf16, block 512; benchmarks/kernel_resources.py, docs/benchmarks.md):
# "one" sits at the 255-register cap with spills in both kernels; "two" spills less (none in the
# forward) at its tiles. Which is faster on a GPU has not been measured yet;
# benchmarks/gpu_suite.py times both. $GENOCTX_HYBRID_LOOPS overrides the default.
LOOPS = ("one", "two")
LOOPS_DEFAULT = "one"


def loops() -> str:
    """The causal kernels' tile walk (:data:`LOOPS`): ``$GENOCTX_HYBRID_LOOPS``, else
    :data:`LOOPS_DEFAULT`."""
    return env_choice("GENOCTX_HYBRID_LOOPS", LOOPS, LOOPS_DEFAULT)


@triton.jit
def _phi(x, offs_d, HEAD_D: tl.constexpr, BLOCK_D: tl.constexpr):
    """elu(x) + 1 in fp32, zero in padded head-dim columns (phi(0) = 1 would leak into dots)."""
    xf = x.to(tl.float32)
    y = tl.where(xf > 0.0, xf + 1.0, tl.exp(xf))
    if BLOCK_D != HEAD_D:
        y = tl.where(offs_d[None, :] < HEAD_D, y, 0.0)
    return y


@triton.jit
def _phi_t(base, start, offs_t, offs_d, stride_t, row_hi, HEAD_D: tl.constexpr):
    """``phi`` of rows ``start + offs_t`` loaded transposed, ``[D, rows]``, zero outside.

    Loading the transpose from memory keeps a register transpose out of the state dots."""
    pos = start + offs_t
    ok = (pos[None, :] < row_hi) & (offs_d[:, None] < HEAD_D)
    ptrs = base + tl.cast(start, tl.int64) * stride_t + offs_t[None, :] * stride_t + offs_d[:, None]
    x = tl.load(ptrs, mask=ok, other=0.0).to(tl.float32)
    return tl.where(ok, tl.where(x > 0.0, x + 1.0, tl.exp(x)), 0.0)


@triton.jit
def _load_state(S_PTR, Z_PTR, offs_d, HEAD_D: tl.constexpr, TRANS: tl.constexpr):
    """One ``[D, D]`` fp32 state (transposed when TRANS) and its ``[D]`` normaliser."""
    dm = offs_d < HEAD_D
    if TRANS:
        ptrs = S_PTR + offs_d[None, :] * HEAD_D + offs_d[:, None]
    else:
        ptrs = S_PTR + offs_d[:, None] * HEAD_D + offs_d[None, :]
    s = tl.load(ptrs, mask=dm[:, None] & dm[None, :], other=0.0)
    z = tl.load(Z_PTR + offs_d, mask=dm, other=0.0)
    return s, z


@triton.jit
def hybrid_chunk_state_kernel(K, V, S_BUF, Z_BUF, T, H, NB, BS, SLOT0, SLOT_STEP,
                              HEAD_D: tl.constexpr, BLOCK_D: tl.constexpr,
                              BLOCK_T: tl.constexpr, PREC: tl.constexpr):
    """``S_c = phi(K_c)^T V_c`` and ``z_c = sum phi(K_c)`` of block c, stored at slot
    ``SLOT0 + SLOT_STEP * c`` of the ``[BH, NB + 1, ...]`` buffers."""
    blk = tl.program_id(0)
    bh = tl.program_id(1)
    stride_t = H * HEAD_D
    base = (bh // H).to(tl.int64) * T * stride_t + (bh % H) * HEAD_D
    offs_t = tl.arange(0, BLOCK_T)
    offs_d = tl.arange(0, BLOCK_D)
    end = tl.minimum(blk * BS + BS, T)
    s = tl.zeros([BLOCK_D, BLOCK_D], dtype=tl.float32)
    z = tl.zeros([BLOCK_D], dtype=tl.float32)
    for t in range(blk * BS, end, BLOCK_T):
        v = _load_tile(V + base, t, offs_t, offs_d, stride_t, end, HEAD_D, BLOCK_D, True)
        phi_k_t = _phi_t(K + base, t, offs_t, offs_d, stride_t, end, HEAD_D)
        s = tl.dot(phi_k_t.to(v.dtype), v, s, input_precision=PREC)
        z += tl.sum(phi_k_t, 1)
    slot = (bh.to(tl.int64) * (NB + 1) + SLOT0 + SLOT_STEP * blk)
    dm = offs_d < HEAD_D
    tl.store(S_BUF + slot * HEAD_D * HEAD_D + offs_d[:, None] * HEAD_D + offs_d[None, :], s,
             mask=dm[:, None] & dm[None, :])
    tl.store(Z_BUF + slot * HEAD_D + offs_d, z, mask=dm)


@triton.jit
def _linear_intra_tile(num, den, phi_q, k, v, q_pos, k_pos, hi, offs_d, HEAD_D: tl.constexpr,
                       BLOCK_D: tl.constexpr, MASK: tl.constexpr, PREC: tl.constexpr):
    """One key tile's linear intra-chunk terms (own block, causal: keys >= hi or after the row
    masked when MASK): ``den += rowsum(A)``, ``num += A v`` with ``A = phi(q) phi(k)^T``."""
    phi_k = _phi(k, offs_d, HEAD_D, BLOCK_D).to(k.dtype)
    a = tl.dot(phi_q, tl.trans(phi_k), input_precision=PREC)
    if MASK:
        a = tl.where((k_pos[None, :] < hi) & (k_pos[None, :] <= q_pos[:, None]), a, 0.0)
    den += tl.sum(a, 1)
    num = tl.dot(a.to(v.dtype), v, num, input_precision=PREC)
    return num, den


@triton.jit
def _hybrid_fwd_inner(acc, l_i, m_i, num, den, q, phi_q, k_base, v_base, q_pos, start, end, hi,
                      stride_t, qk_scale, offs_n, offs_d, HEAD_D: tl.constexpr,
                      BLOCK_D: tl.constexpr, BLOCK_N: tl.constexpr, MASK: tl.constexpr,
                      CAUSAL: tl.constexpr, LINEAR: tl.constexpr, PREC: tl.constexpr):
    """Online softmax over key tiles ``[start, end)``, plus the linear intra-chunk terms when
    LINEAR (the tiles of the query's own block)."""
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
        if LINEAR:  # (always causal: the own block of a causal query tile)
            num, den = _linear_intra_tile(num, den, phi_q, k, v, q_pos, n + offs_n, hi, offs_d,
                                          HEAD_D, BLOCK_D, MASK, PREC)
    return acc, l_i, m_i, num, den


@triton.jit
def _linear_intra_inner(num, den, phi_q, k_base, v_base, q_pos, start, end, hi, stride_t,
                        offs_n, offs_d, HEAD_D: tl.constexpr, BLOCK_D: tl.constexpr,
                        BLOCK_N: tl.constexpr, MASK: tl.constexpr, PREC: tl.constexpr):
    """The linear branch's intra-chunk terms over key tiles ``[start, end)`` of the query's own
    block (causal; keys >= hi or after the row masked when MASK), on their own: the
    two-loop forward's first loop (:data:`LOOPS`)."""
    for n in range(start, end, BLOCK_N):
        k = _load_tile(k_base, n, offs_n, offs_d, stride_t, hi, HEAD_D, BLOCK_D, MASK)
        v = _load_tile(v_base, n, offs_n, offs_d, stride_t, hi, HEAD_D, BLOCK_D, MASK)
        num, den = _linear_intra_tile(num, den, phi_q, k, v, q_pos, n + offs_n, hi, offs_d,
                                      HEAD_D, BLOCK_D, MASK, PREC)
    return num, den


@triton.jit
def _causal_window(blk, q_start, q_end, BS, BLOCK_N: tl.constexpr):
    """Causal key ranges of a query tile: previous block (mask-free part, then the rest) and
    own block (mask-free below the tile's first row, then the diagonal)."""
    live = q_start < q_end
    lo = tl.maximum(blk - 1, 0) * BS
    own = tl.where(live, blk * BS, lo)
    prev_full = lo + ((own - lo) // BLOCK_N) * BLOCK_N
    own_full = tl.where(live, own + ((q_start - own) // BLOCK_N) * BLOCK_N, lo)
    hi = tl.where(live, q_end, lo)
    return lo, prev_full, own, own_full, hi


@triton.jit
def hybrid_fwd_kernel(Q, K, V, GATE, O, ODIFF, LSE, DEN, S_BUF, Z_BUF, EXTRA, qk_scale, eps,
                      T, H, NB, NX, BS, TILES, STATE_STEP, HEAD_D: tl.constexpr,
                      BLOCK_D: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                      CAUSAL: tl.constexpr, HAS_EXTRA: tl.constexpr, STORE_AUX: tl.constexpr,
                      PREC: tl.constexpr, STATE_PREC: tl.constexpr,
                      TWO_LOOPS: tl.constexpr = False):
    pid = tl.program_id(0)
    bh = tl.program_id(1)
    blk, q_start, q_end = _tile_span(pid, TILES, BS, T, BLOCK_M)
    stride_t = H * HEAD_D
    base = (bh // H).to(tl.int64) * T * stride_t + (bh % H) * HEAD_D
    offs_m = tl.arange(0, BLOCK_M)
    offs_n = tl.arange(0, BLOCK_N)
    offs_d = tl.arange(0, BLOCK_D)
    q = _load_tile(Q + base, q_start, offs_m, offs_d, stride_t, q_end, HEAD_D, BLOCK_D, True)
    phi_q = _phi(q, offs_d, HEAD_D, BLOCK_D)
    phi_q_lp = phi_q.to(q.dtype)
    q_pos = q_start + offs_m
    m_i = tl.full([BLOCK_M], -1.0e30, dtype=tl.float32)
    l_i = tl.zeros([BLOCK_M], dtype=tl.float32)
    acc = tl.zeros([BLOCK_M, BLOCK_D], dtype=tl.float32)
    num = tl.zeros([BLOCK_M, BLOCK_D], dtype=tl.float32)
    den = tl.zeros([BLOCK_M], dtype=tl.float32)
    kb = K + base
    vb = V + base
    if CAUSAL and TWO_LOOPS:
        # the linear intra-chunk terms first, in a loop of their own over the own block's
        # tiles (their K/V come again from L2 in the softmax loop): the two loops never hold
        # both branches' temporaries at once (see LOOPS)
        _, _, own, own_full, hi = _causal_window(blk, q_start, q_end, BS, BLOCK_N)
        num, den = _linear_intra_inner(num, den, phi_q_lp, kb, vb, q_pos, own, own_full, hi,
                                       stride_t, offs_n, offs_d, HEAD_D, BLOCK_D, BLOCK_N,
                                       False, PREC)
        num, den = _linear_intra_inner(num, den, phi_q_lp, kb, vb, q_pos, own_full, hi, hi,
                                       stride_t, offs_n, offs_d, HEAD_D, BLOCK_D, BLOCK_N,
                                       True, PREC)
    if CAUSAL and not TWO_LOOPS:
        lo, prev_full, own, own_full, hi = _causal_window(blk, q_start, q_end, BS, BLOCK_N)
        acc, l_i, m_i, num, den = _hybrid_fwd_inner(
            acc, l_i, m_i, num, den, q, phi_q_lp, kb, vb, q_pos, lo, prev_full, own, stride_t,
            qk_scale, offs_n, offs_d, HEAD_D, BLOCK_D, BLOCK_N, False, True, False, PREC)
        acc, l_i, m_i, num, den = _hybrid_fwd_inner(
            acc, l_i, m_i, num, den, q, phi_q_lp, kb, vb, q_pos, prev_full, own, own, stride_t,
            qk_scale, offs_n, offs_d, HEAD_D, BLOCK_D, BLOCK_N, True, True, False, PREC)
        acc, l_i, m_i, num, den = _hybrid_fwd_inner(
            acc, l_i, m_i, num, den, q, phi_q_lp, kb, vb, q_pos, own, own_full, hi, stride_t,
            qk_scale, offs_n, offs_d, HEAD_D, BLOCK_D, BLOCK_N, False, True, True, PREC)
        acc, l_i, m_i, num, den = _hybrid_fwd_inner(
            acc, l_i, m_i, num, den, q, phi_q_lp, kb, vb, q_pos, own_full, hi, hi, stride_t,
            qk_scale, offs_n, offs_d, HEAD_D, BLOCK_D, BLOCK_N, True, True, True, PREC)
    else:
        # the softmax over the window as local_attn runs it (bidirectional: no intra-chunk
        # terms; causal two-loop: after their own loop above)
        lo, full_end, hi = _local_window(blk, q_start, q_end, BS, T, CAUSAL, BLOCK_N)
        acc, l_i, m_i, num, den = _hybrid_fwd_inner(
            acc, l_i, m_i, num, den, q, phi_q_lp, kb, vb, q_pos, lo, full_end, hi, stride_t,
            qk_scale, offs_n, offs_d, HEAD_D, BLOCK_D, BLOCK_N, False, CAUSAL, False, PREC)
        acc, l_i, m_i, num, den = _hybrid_fwd_inner(
            acc, l_i, m_i, num, den, q, phi_q_lp, kb, vb, q_pos, full_end, hi, hi, stride_t,
            qk_scale, offs_n, offs_d, HEAD_D, BLOCK_D, BLOCK_N, True, CAUSAL, False, PREC)
    if HAS_EXTRA:
        row = (bh * NB + blk) * NX
        for x in range(tl.where(q_start < q_end, NX, 0)):
            e_lo, e_hi = _extra_span(EXTRA, row, x, BS, T)
            acc, l_i, m_i, num, den = _hybrid_fwd_inner(
                acc, l_i, m_i, num, den, q, phi_q_lp, kb, vb, q_pos, e_lo, e_hi, e_hi, stride_t,
                qk_scale, offs_n, offs_d, HEAD_D, BLOCK_D, BLOCK_N, True, False, False, PREC)
    # Inter-chunk linear term: state accumulated before this block (or the total, bidirectional).
    slot = bh.to(tl.int64) * (NB + 1) + STATE_STEP * blk
    s_in, z_in = _load_state(S_BUF + slot * HEAD_D * HEAD_D, Z_BUF + slot * HEAD_D, offs_d,
                             HEAD_D, False)
    num = tl.dot(phi_q, s_in, num, input_precision=STATE_PREC)
    den += tl.sum(phi_q * z_in[None, :], 1) + eps
    seen = l_i > 0.0
    o_loc = acc / tl.where(seen, l_i, 1.0)[:, None]
    o_lin = num / den[:, None]
    rows = q_pos < q_end
    g = tl.load(GATE + (bh // H).to(tl.int64) * T * H + q_pos * H + bh % H, mask=rows,
                other=0.0).to(tl.float32)
    o = g[:, None] * o_loc + (1.0 - g[:, None]) * o_lin
    _store_tile(O + base, q_start, offs_m, offs_d, stride_t, q_end, o, HEAD_D)
    if STORE_AUX:
        _store_tile(ODIFF + base, q_start, offs_m, offs_d, stride_t, q_end, o_loc - o_lin, HEAD_D)
        row_ptr = bh.to(tl.int64) * T + q_pos
        lse = tl.where(seen, m_i + tl.math.log2(tl.where(seen, l_i, 1.0)), float("inf"))
        tl.store(LSE + row_ptr, lse, mask=rows)
        tl.store(DEN + row_ptr, den, mask=rows)


@triton.jit
def hybrid_bwd_state_kernel(Q, O, ODIFF, DO, GATE, DEN, DGATE, DELTA, DDEN, CN, GT, DS_BUF,
                            DZ_BUF, T, H, NB, BS, SLOT0, SLOT_STEP, HEAD_D: tl.constexpr,
                            BLOCK_D: tl.constexpr, BLOCK_T: tl.constexpr, PREC: tl.constexpr):
    """Per-row backward terms of block c and its state gradient ``phi(Q_c)^T dN_c``.

    With ``o = g o_loc + (1 - g) o_lin`` and the saved ``o_diff = o_loc - o_lin``:
    ``dgate = do . o_diff``; the softmax delta of ``do_loc = g do`` is ``g (do . o_loc)``;
    the linear branch sees ``dN = c do`` with ``c = (1 - g) / den`` and its normaliser gets
    ``dden = -(1 - g) (do . o_lin) / den``.
    """
    blk = tl.program_id(0)
    bh = tl.program_id(1)
    stride_t = H * HEAD_D
    base = (bh // H).to(tl.int64) * T * stride_t + (bh % H) * HEAD_D
    gate_base = (bh // H).to(tl.int64) * T * H + bh % H
    offs_t = tl.arange(0, BLOCK_T)
    offs_d = tl.arange(0, BLOCK_D)
    end = tl.minimum(blk * BS + BS, T)
    ds = tl.zeros([BLOCK_D, BLOCK_D], dtype=tl.float32)
    dz = tl.zeros([BLOCK_D], dtype=tl.float32)
    for t in range(blk * BS, end, BLOCK_T):
        pos = t + offs_t
        rows = pos < end
        row_ptr = bh.to(tl.int64) * T + pos
        o = _load_tile(O + base, t, offs_t, offs_d, stride_t, end, HEAD_D, BLOCK_D, True)
        odiff = _load_tile(ODIFF + base, t, offs_t, offs_d, stride_t, end, HEAD_D, BLOCK_D, True)
        do = _load_tile(DO + base, t, offs_t, offs_d, stride_t, end, HEAD_D, BLOCK_D, True)
        g = tl.load(GATE + gate_base + pos * H, mask=rows, other=0.0).to(tl.float32)
        den = tl.load(DEN + row_ptr, mask=rows, other=1.0)
        do_f = do.to(tl.float32)
        dgate = tl.sum(do_f * odiff.to(tl.float32), 1)
        do_o = tl.sum(do_f * o.to(tl.float32), 1)
        c = tl.where(rows, (1.0 - g) / den, 0.0)
        dden = -c * (do_o - g * dgate)
        tl.store(DGATE + gate_base + pos * H, dgate.to(DGATE.dtype.element_ty), mask=rows)
        tl.store(DELTA + row_ptr, g * (do_o + (1.0 - g) * dgate), mask=rows)
        tl.store(DDEN + row_ptr, dden, mask=rows)
        tl.store(CN + row_ptr, c, mask=rows)
        tl.store(GT + row_ptr, g, mask=rows)
        phi_q_t = _phi_t(Q + base, t, offs_t, offs_d, stride_t, end, HEAD_D)
        ds = tl.dot(phi_q_t.to(do.dtype), (do_f * c[:, None]).to(do.dtype), ds,
                    input_precision=PREC)
        dz += tl.sum(phi_q_t * dden[None, :], 1)
    slot = bh.to(tl.int64) * (NB + 1) + SLOT0 + SLOT_STEP * blk
    dm = offs_d < HEAD_D
    tl.store(DS_BUF + slot * HEAD_D * HEAD_D + offs_d[:, None] * HEAD_D + offs_d[None, :], ds,
             mask=dm[:, None] & dm[None, :])
    tl.store(DZ_BUF + slot * HEAD_D + offs_d, dz, mask=dm)


@triton.jit
def _hybrid_dq_inner(dq, dphi, q, do, lse, delta, g, c, dden, k_base, v_base, q_pos, start, end,
                     hi, stride_t, qk_scale, offs_n, offs_d, HEAD_D: tl.constexpr,
                     BLOCK_D: tl.constexpr, BLOCK_N: tl.constexpr, MASK: tl.constexpr,
                     CAUSAL: tl.constexpr, LINEAR: tl.constexpr, PREC: tl.constexpr):
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
        # do @ v^T serves both branches: the local one sees g * do, the linear one c * do.
        dov = tl.dot(do, tl.trans(v), input_precision=PREC)
        ds = p * (dov * g[:, None] - delta[:, None])
        dq = tl.dot(ds.to(k.dtype), k, dq, input_precision=PREC)
        if LINEAR:
            w = dov * c[:, None] + dden[:, None]
            if MASK:
                w = tl.where(ok, w, 0.0)
            phi_k = _phi(k, offs_d, HEAD_D, BLOCK_D).to(k.dtype)
            dphi = tl.dot(w.to(k.dtype), phi_k, dphi, input_precision=PREC)
    return dq, dphi


@triton.jit
def hybrid_bwd_kernel_dq(Q, K, V, DO, DQ, LSE, DELTA, DDEN, CN, GT, S_BUF, Z_BUF, EXTRA, sm_scale,
                         qk_scale, T, H, NB, NX, BS, TILES, STATE_STEP, HEAD_D: tl.constexpr,
                         BLOCK_D: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                         CAUSAL: tl.constexpr, HAS_EXTRA: tl.constexpr, PREC: tl.constexpr,
                         STATE_PREC: tl.constexpr):
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
    rows = q_pos < q_end
    row_ptr = bh.to(tl.int64) * T + q_pos
    lse = tl.load(LSE + row_ptr, mask=rows, other=float("inf"))
    delta = tl.load(DELTA + row_ptr, mask=rows, other=0.0)
    dden = tl.load(DDEN + row_ptr, mask=rows, other=0.0)
    c = tl.load(CN + row_ptr, mask=rows, other=0.0)
    g = tl.load(GT + row_ptr, mask=rows, other=0.0)
    dq = tl.zeros([BLOCK_M, BLOCK_D], dtype=tl.float32)
    dphi = tl.zeros([BLOCK_M, BLOCK_D], dtype=tl.float32)
    kb = K + base
    vb = V + base
    if CAUSAL:
        lo, prev_full, own, own_full, hi = _causal_window(blk, q_start, q_end, BS, BLOCK_N)
        dq, dphi = _hybrid_dq_inner(dq, dphi, q, do, lse, delta, g, c, dden, kb, vb, q_pos, lo,
                                    prev_full, own, stride_t, qk_scale, offs_n, offs_d, HEAD_D,
                                    BLOCK_D, BLOCK_N, False, True, False, PREC)
        dq, dphi = _hybrid_dq_inner(dq, dphi, q, do, lse, delta, g, c, dden, kb, vb, q_pos,
                                    prev_full, own, own, stride_t, qk_scale, offs_n, offs_d,
                                    HEAD_D, BLOCK_D, BLOCK_N, True, True, False, PREC)
        dq, dphi = _hybrid_dq_inner(dq, dphi, q, do, lse, delta, g, c, dden, kb, vb, q_pos, own,
                                    own_full, hi, stride_t, qk_scale, offs_n, offs_d, HEAD_D,
                                    BLOCK_D, BLOCK_N, False, True, True, PREC)
        dq, dphi = _hybrid_dq_inner(dq, dphi, q, do, lse, delta, g, c, dden, kb, vb, q_pos,
                                    own_full, hi, hi, stride_t, qk_scale, offs_n, offs_d, HEAD_D,
                                    BLOCK_D, BLOCK_N, True, True, True, PREC)
    else:
        lo, full_end, hi = _local_window(blk, q_start, q_end, BS, T, False, BLOCK_N)
        dq, dphi = _hybrid_dq_inner(dq, dphi, q, do, lse, delta, g, c, dden, kb, vb, q_pos, lo,
                                    full_end, hi, stride_t, qk_scale, offs_n, offs_d, HEAD_D,
                                    BLOCK_D, BLOCK_N, False, False, False, PREC)
        dq, dphi = _hybrid_dq_inner(dq, dphi, q, do, lse, delta, g, c, dden, kb, vb, q_pos,
                                    full_end, hi, hi, stride_t, qk_scale, offs_n, offs_d, HEAD_D,
                                    BLOCK_D, BLOCK_N, True, False, False, PREC)
    if HAS_EXTRA:
        row = (bh * NB + blk) * NX
        for x in range(tl.where(q_start < q_end, NX, 0)):
            e_lo, e_hi = _extra_span(EXTRA, row, x, BS, T)
            dq, dphi = _hybrid_dq_inner(dq, dphi, q, do, lse, delta, g, c, dden, kb, vb, q_pos,
                                        e_lo, e_hi, e_hi, stride_t, qk_scale, offs_n, offs_d,
                                        HEAD_D, BLOCK_D, BLOCK_N, True, False, False, PREC)
    # Inter-chunk term: d phi(q_t) = S_in dN_t + z_in dden_t.
    slot = bh.to(tl.int64) * (NB + 1) + STATE_STEP * blk
    s_in_t, z_in = _load_state(S_BUF + slot * HEAD_D * HEAD_D, Z_BUF + slot * HEAD_D, offs_d,
                               HEAD_D, True)
    dn = do.to(tl.float32) * c[:, None]
    dphi = tl.dot(dn, s_in_t, dphi, input_precision=STATE_PREC) + dden[:, None] * z_in[None, :]
    qf = q.to(tl.float32)
    dq = dq * sm_scale + dphi * tl.where(qf > 0.0, 1.0, tl.exp(qf))
    _store_tile(DQ + base, q_start, offs_m, offs_d, stride_t, q_end, dq, HEAD_D)


@triton.jit
def _linear_dkdv_weights(dov_t, phi_k, q, c, dden, rows, q_pos, k_pos, offs_d,
                         HEAD_D: tl.constexpr, BLOCK_D: tl.constexpr, MASK: tl.constexpr,
                         PREC: tl.constexpr):
    """One query tile's linear intra-chunk weights for a key tile (own block, causal):
    ``(c A^T, w_k, phi(q))`` with ``A^T = phi(k) phi(q)^T``: ``dv += (c A^T) do`` and
    ``d phi(k) += w_k phi(q)``; rows past hi or before the key masked when MASK."""
    phi_q = _phi(q, offs_d, HEAD_D, BLOCK_D).to(q.dtype)
    a_t = tl.dot(phi_k, tl.trans(phi_q), input_precision=PREC)
    w_k = dov_t * c[None, :] + dden[None, :]
    if MASK:
        ok = rows[None, :] & (q_pos[None, :] >= k_pos[:, None])
        a_t = tl.where(ok, a_t, 0.0)
        w_k = tl.where(ok, w_k, 0.0)
    return a_t * c[None, :], w_k, phi_q


@triton.jit
def _hybrid_dkdv_inner(dk, dv, dphi, k, v, phi_k, k_pos, q_base, do_base, row_base, LSE, DELTA,
                       DDEN, CN, GT, start, end, hi, stride_t, qk_scale, offs_m, offs_d,
                       HEAD_D: tl.constexpr, BLOCK_D: tl.constexpr, BLOCK_M: tl.constexpr,
                       MASK: tl.constexpr, CAUSAL: tl.constexpr, LINEAR: tl.constexpr,
                       PREC: tl.constexpr):
    """dk (unscaled), dv and d phi(k) of one key tile over query tiles ``[start, end)``."""
    for m in range(start, end, BLOCK_M):
        q = _load_tile(q_base, m, offs_m, offs_d, stride_t, hi, HEAD_D, BLOCK_D, MASK)
        do = _load_tile(do_base, m, offs_m, offs_d, stride_t, hi, HEAD_D, BLOCK_D, MASK)
        q_pos = m + offs_m
        rows = q_pos < hi
        lse = tl.load(LSE + row_base + q_pos, mask=rows, other=float("inf"))
        delta = tl.load(DELTA + row_base + q_pos, mask=rows, other=0.0)
        g = tl.load(GT + row_base + q_pos, mask=rows, other=0.0)
        s_t = tl.dot(k, tl.trans(q), input_precision=PREC) * qk_scale
        if MASK:
            ok = rows[None, :]
            if CAUSAL:
                ok = ok & (q_pos[None, :] >= k_pos[:, None])
            s_t = tl.where(ok, s_t, float("-inf"))
        p_t = tl.math.exp2(s_t - lse[None, :])
        dov_t = tl.dot(v, tl.trans(do), input_precision=PREC)
        ds_t = p_t * (dov_t * g[None, :] - delta[None, :])
        dk = tl.dot(ds_t.to(q.dtype), q, dk, input_precision=PREC)
        # dv = (g P + c A)^T do: both branches' value gradients in one dot.
        w_v = p_t * g[None, :]
        if LINEAR:  # (always causal: the own block of a causal key tile)
            c = tl.load(CN + row_base + q_pos, mask=rows, other=0.0)
            dden = tl.load(DDEN + row_base + q_pos, mask=rows, other=0.0)
            w_lin, w_k, phi_q = _linear_dkdv_weights(dov_t, phi_k, q, c, dden, rows, q_pos,
                                                     k_pos, offs_d, HEAD_D, BLOCK_D, MASK, PREC)
            w_v += w_lin
            dphi = tl.dot(w_k.to(q.dtype), phi_q, dphi, input_precision=PREC)
        dv = tl.dot(w_v.to(do.dtype), do, dv, input_precision=PREC)
    return dk, dv, dphi


@triton.jit
def _linear_dkdv_inner(dv, dphi, v, phi_k, k_pos, q_base, do_base, row_base, DDEN, CN, start,
                       end, hi, stride_t, offs_m, offs_d, HEAD_D: tl.constexpr,
                       BLOCK_D: tl.constexpr, BLOCK_M: tl.constexpr, MASK: tl.constexpr,
                       PREC: tl.constexpr):
    """The linear intra-chunk part of dv and d phi(k) over query tiles ``[start, end)`` of the
    key tile's own block (causal): the two-loop dk/dv kernel's first loop (:data:`LOOPS`)."""
    for m in range(start, end, BLOCK_M):
        q = _load_tile(q_base, m, offs_m, offs_d, stride_t, hi, HEAD_D, BLOCK_D, MASK)
        do = _load_tile(do_base, m, offs_m, offs_d, stride_t, hi, HEAD_D, BLOCK_D, MASK)
        q_pos = m + offs_m
        rows = q_pos < hi
        c = tl.load(CN + row_base + q_pos, mask=rows, other=0.0)
        dden = tl.load(DDEN + row_base + q_pos, mask=rows, other=0.0)
        dov_t = tl.dot(v, tl.trans(do), input_precision=PREC)
        w_lin, w_k, phi_q = _linear_dkdv_weights(dov_t, phi_k, q, c, dden, rows, q_pos, k_pos,
                                                 offs_d, HEAD_D, BLOCK_D, MASK, PREC)
        dv = tl.dot(w_lin.to(do.dtype), do, dv, input_precision=PREC)
        dphi = tl.dot(w_k.to(q.dtype), phi_q, dphi, input_precision=PREC)
    return dv, dphi


@triton.jit
def _causal_query_window(blk, k_start, k_end, BS, T, BLOCK_M: tl.constexpr,
                         BLOCK_N: tl.constexpr):
    """Causal query ranges seeing a key tile: own block (diagonal, mask-free, tail) then next."""
    live = k_start < k_end
    own_end = tl.where(live, tl.minimum(blk * BS + BS, T), k_start)
    next_end = tl.where(live, tl.minimum(blk * BS + 2 * BS, T), k_start)
    head_end = tl.minimum(k_start + ((BLOCK_N + BLOCK_M - 1) // BLOCK_M) * BLOCK_M, own_end)
    own_full = head_end + ((own_end - head_end) // BLOCK_M) * BLOCK_M
    next_full = own_end + ((next_end - own_end) // BLOCK_M) * BLOCK_M
    return head_end, own_full, own_end, next_full, next_end


@triton.jit
def hybrid_bwd_kernel_dkdv(Q, K, V, DO, DK, DV, LSE, DELTA, DDEN, CN, GT, DS_BUF, DZ_BUF,
                           REV_OFF, REV_IDX, sm_scale, qk_scale, T, H, NB, BS, TILES, DSLOT0,
                           DSLOT_STEP, HEAD_D: tl.constexpr, BLOCK_D: tl.constexpr,
                           BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, CAUSAL: tl.constexpr,
                           HAS_EXTRA: tl.constexpr, PREC: tl.constexpr,
                           STATE_PREC: tl.constexpr, TWO_LOOPS: tl.constexpr = False):
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
    phi_k = _phi(k, offs_d, HEAD_D, BLOCK_D)
    phi_k_lp = phi_k.to(k.dtype)
    k_pos = k_start + offs_n
    row_base = bh.to(tl.int64) * T
    dk = tl.zeros([BLOCK_N, BLOCK_D], dtype=tl.float32)
    dv = tl.zeros([BLOCK_N, BLOCK_D], dtype=tl.float32)
    dphi = tl.zeros([BLOCK_N, BLOCK_D], dtype=tl.float32)
    qb = Q + base
    dob = DO + base
    if CAUSAL:
        head_end, own_full, own_end, next_full, next_end = _causal_query_window(
            blk, k_start, k_end, BS, T, BLOCK_M, BLOCK_N)
        if TWO_LOOPS:  # the linear intra-chunk part first, in a loop of its own (see LOOPS)
            dv, dphi = _linear_dkdv_inner(dv, dphi, v, phi_k_lp, k_pos, qb, dob, row_base, DDEN,
                                          CN, k_start, head_end, own_end, stride_t, offs_m,
                                          offs_d, HEAD_D, BLOCK_D, BLOCK_M, True, PREC)
            dv, dphi = _linear_dkdv_inner(dv, dphi, v, phi_k_lp, k_pos, qb, dob, row_base, DDEN,
                                          CN, head_end, own_full, own_end, stride_t, offs_m,
                                          offs_d, HEAD_D, BLOCK_D, BLOCK_M, False, PREC)
            dv, dphi = _linear_dkdv_inner(dv, dphi, v, phi_k_lp, k_pos, qb, dob, row_base, DDEN,
                                          CN, own_full, own_end, own_end, stride_t, offs_m,
                                          offs_d, HEAD_D, BLOCK_D, BLOCK_M, True, PREC)
        dk, dv, dphi = _hybrid_dkdv_inner(
            dk, dv, dphi, k, v, phi_k_lp, k_pos, qb, dob, row_base, LSE, DELTA, DDEN, CN, GT,
            k_start, head_end, own_end, stride_t, qk_scale, offs_m, offs_d, HEAD_D, BLOCK_D,
            BLOCK_M, True, True, not TWO_LOOPS, PREC)
        dk, dv, dphi = _hybrid_dkdv_inner(
            dk, dv, dphi, k, v, phi_k_lp, k_pos, qb, dob, row_base, LSE, DELTA, DDEN, CN, GT,
            head_end, own_full, own_end, stride_t, qk_scale, offs_m, offs_d, HEAD_D, BLOCK_D,
            BLOCK_M, False, True, not TWO_LOOPS, PREC)
        dk, dv, dphi = _hybrid_dkdv_inner(
            dk, dv, dphi, k, v, phi_k_lp, k_pos, qb, dob, row_base, LSE, DELTA, DDEN, CN, GT,
            own_full, own_end, own_end, stride_t, qk_scale, offs_m, offs_d, HEAD_D, BLOCK_D,
            BLOCK_M, True, True, not TWO_LOOPS, PREC)
        dk, dv, dphi = _hybrid_dkdv_inner(
            dk, dv, dphi, k, v, phi_k_lp, k_pos, qb, dob, row_base, LSE, DELTA, DDEN, CN, GT,
            own_end, next_full, next_end, stride_t, qk_scale, offs_m, offs_d, HEAD_D, BLOCK_D,
            BLOCK_M, False, True, False, PREC)
        dk, dv, dphi = _hybrid_dkdv_inner(
            dk, dv, dphi, k, v, phi_k_lp, k_pos, qb, dob, row_base, LSE, DELTA, DDEN, CN, GT,
            next_full, next_end, next_end, stride_t, qk_scale, offs_m, offs_d, HEAD_D, BLOCK_D,
            BLOCK_M, True, True, False, PREC)
    else:
        lo = tl.maximum(blk - 1, 0) * BS
        hi = tl.where(k_start < k_end, tl.minimum(blk * BS + 2 * BS, T), lo)
        full_end = lo + ((hi - lo) // BLOCK_M) * BLOCK_M
        dk, dv, dphi = _hybrid_dkdv_inner(
            dk, dv, dphi, k, v, phi_k_lp, k_pos, qb, dob, row_base, LSE, DELTA, DDEN, CN, GT,
            lo, full_end, hi, stride_t, qk_scale, offs_m, offs_d, HEAD_D, BLOCK_D, BLOCK_M,
            False, False, False, PREC)
        dk, dv, dphi = _hybrid_dkdv_inner(
            dk, dv, dphi, k, v, phi_k_lp, k_pos, qb, dob, row_base, LSE, DELTA, DDEN, CN, GT,
            full_end, hi, hi, stride_t, qk_scale, offs_m, offs_d, HEAD_D, BLOCK_D, BLOCK_M,
            True, False, False, PREC)
    if HAS_EXTRA:
        r_lo = tl.load(REV_OFF + bh * NB + blk)
        r_hi = tl.where(k_start < k_end, tl.load(REV_OFF + bh * NB + blk + 1), r_lo)
        for r in range(r_lo, r_hi):
            e_lo = tl.load(REV_IDX + r) * BS
            e_hi = tl.minimum(e_lo + BS, T)
            dk, dv, dphi = _hybrid_dkdv_inner(
                dk, dv, dphi, k, v, phi_k_lp, k_pos, qb, dob, row_base, LSE, DELTA, DDEN, CN,
                GT, e_lo, e_hi, e_hi, stride_t, qk_scale, offs_m, offs_d, HEAD_D, BLOCK_D,
                BLOCK_M, True, False, False, PREC)
    # Inter-chunk terms from the state gradient of later chunks (or the total, bidirectional).
    slot = bh.to(tl.int64) * (NB + 1) + DSLOT0 + DSLOT_STEP * blk
    ds_t, dz = _load_state(DS_BUF + slot * HEAD_D * HEAD_D, DZ_BUF + slot * HEAD_D, offs_d,
                           HEAD_D, True)
    ds, _ = _load_state(DS_BUF + slot * HEAD_D * HEAD_D, DZ_BUF + slot * HEAD_D, offs_d, HEAD_D,
                        False)
    dphi = tl.dot(v.to(tl.float32), ds_t, dphi, input_precision=STATE_PREC) + dz[None, :]
    dv = tl.dot(phi_k, ds, dv, input_precision=STATE_PREC)
    kf = k.to(tl.float32)
    dk = dk * sm_scale + dphi * tl.where(kf > 0.0, 1.0, tl.exp(kf))
    _store_tile(DK + base, k_start, offs_n, offs_d, stride_t, k_end, dk, HEAD_D)
    _store_tile(DV + base, k_start, offs_n, offs_d, stride_t, k_end, dv, HEAD_D)


def _state_precision(dtype: torch.dtype) -> str:
    """Precision of the small state dots: the state stays fp32, so keep its mantissa."""
    return {torch.float32: "ieee", torch.float16: "tf32x3"}.get(dtype, "tf32")


def _chunk_states(k, v, s0, z0, *, block_size: int, causal: bool):
    """Per-block incoming linear state ``[BH, NB + 1, D, D]`` (+ normaliser), fp32.

    Causal: slot ``c`` holds ``S0 + sum_{c' < c} phi(K_c')^T V_c'`` and slot NB the final state.
    Bidirectional: slot 0 holds the total, which every block uses.
    """
    B, T, H, D = k.shape
    NB = triton.cdiv(T, block_size)
    ts = tile_config("hybrid_state", block_size=block_size, head_dim=D,
                     arch=cuda_arch(k.device))
    s_buf = torch.empty(B * H, NB + 1, D, D, dtype=torch.float32, device=k.device)
    z_buf = torch.empty(B * H, NB + 1, D, dtype=torch.float32, device=k.device)
    s_buf[:, 0] = 0.0 if s0 is None else s0.reshape(B * H, D, D)
    z_buf[:, 0] = 0.0 if z0 is None else z0.reshape(B * H, D)
    hybrid_chunk_state_kernel[(NB, B * H)](
        k, v, s_buf, z_buf, T, H, NB, block_size, 1, 1, HEAD_D=D, BLOCK_D=next_pow2(D),
        BLOCK_T=ts.block_m, PREC=dot_precision(k.dtype), num_warps=ts.num_warps,
        num_stages=ts.num_stages)
    if causal:
        s_buf.cumsum_(1)
        z_buf.cumsum_(1)
        return s_buf, z_buf, s_buf[:, NB], z_buf[:, NB]
    s_buf[:, 0] = s_buf.sum(1)
    z_buf[:, 0] = z_buf.sum(1)
    return s_buf, z_buf, s_buf[:, 0], z_buf[:, 0]


def hybrid_fwd(q, k, v, gate, s0, z0, extra, *, block_size: int, causal: bool, scale: float,
               need_aux: bool):
    """Launch the pre-pass and the fused forward.

    Returns ``(o, aux, (S_final, z_final))``; ``aux = (o_diff, lse, den, s_buf, z_buf)`` for the
    backward when ``need_aux``, else None.
    """
    B, T, H, D = q.shape
    NB = triton.cdiv(T, block_size)
    two_loops = causal and loops() == "two"
    tiles = tile_config("hybrid_fwd2" if two_loops else "hybrid_fwd", block_size=block_size,
                        head_dim=D, arch=cuda_arch(q.device))
    s_buf, z_buf, s_fin, z_fin = _chunk_states(k, v, s0, z0, block_size=block_size,
                                               causal=causal)
    o = new_output(q.shape, dtype=q.dtype, device=q.device)
    o_diff = new_output(q.shape, dtype=q.dtype, device=q.device) if need_aux else o
    lse, den = ([new_output((B * H, T), dtype=torch.float32, device=q.device) for _ in range(2)]
                if need_aux else (o, o))
    per_block = triton.cdiv(block_size, tiles.block_m)
    hybrid_fwd_kernel[(NB * per_block, B * H)](
        q, k, v, gate, o, o_diff, lse, den, s_buf, z_buf,
        extra if extra is not None else s_buf, scale * LOG2E, EPS, T, H, NB,
        extra.shape[-1] if extra is not None else 0, block_size, per_block, 1 if causal else 0,
        HEAD_D=D, BLOCK_D=next_pow2(D), BLOCK_M=tiles.block_m, BLOCK_N=tiles.block_n,
        CAUSAL=causal, HAS_EXTRA=extra is not None, STORE_AUX=need_aux,
        PREC=dot_precision(q.dtype), STATE_PREC=_state_precision(q.dtype), TWO_LOOPS=two_loops,
        num_warps=tiles.num_warps, num_stages=tiles.num_stages)
    aux = (o_diff, lse, den, s_buf, z_buf) if need_aux else None
    return o, aux, (s_fin.reshape(B, H, D, D).clone(), z_fin.reshape(B, H, D).clone())


def _state_grads(q, o, o_diff, do, gate, den, ds_fin, dz_fin, *, block_size: int,
                 causal: bool):
    """Row terms of the backward and the state gradient each block receives.

    Returns ``(dgate, rows, ds_buf, dz_buf, dslot0, dslot_step, (dS0, dz0))`` where ``rows =
    (delta, dden, c, g)`` (each ``[BH, T]`` fp32).
    """
    B, T, H, D = q.shape
    NB = triton.cdiv(T, block_size)
    ts = tile_config("hybrid_state", block_size=block_size, head_dim=D,
                     arch=cuda_arch(q.device))
    dgate = new_output(gate.shape, dtype=gate.dtype, device=q.device)
    rows = tuple(new_output((B * H, T), dtype=torch.float32, device=q.device) for _ in range(4))
    ds_buf = torch.empty(B * H, NB + 1, D, D, dtype=torch.float32, device=q.device)
    dz_buf = torch.empty(B * H, NB + 1, D, dtype=torch.float32, device=q.device)
    ds_buf[:, 0] = 0.0 if ds_fin is None else ds_fin.reshape(B * H, D, D)
    dz_buf[:, 0] = 0.0 if dz_fin is None else dz_fin.reshape(B * H, D)
    # Causal: block c's gradient goes to slot NB - c, so an in-place prefix sum over slots is
    # the reverse (suffix) sum over blocks: slot NB - 1 - c then holds what block c receives.
    slot0, step = (NB, -1) if causal else (1, 1)
    hybrid_bwd_state_kernel[(NB, B * H)](
        q, o, o_diff, do, gate, den, dgate, *rows, ds_buf, dz_buf, T, H, NB, block_size, slot0,
        step, HEAD_D=D, BLOCK_D=next_pow2(D), BLOCK_T=ts.block_m, PREC=dot_precision(q.dtype),
        num_warps=ts.num_warps, num_stages=ts.num_stages)
    if causal:
        ds_buf.cumsum_(1)
        dz_buf.cumsum_(1)
        init = (ds_buf[:, NB], dz_buf[:, NB])
        return dgate, rows, ds_buf, dz_buf, NB - 1, -1, init
    ds_buf[:, 0] = ds_buf.sum(1)
    dz_buf[:, 0] = dz_buf.sum(1)
    return dgate, rows, ds_buf, dz_buf, 0, 0, (ds_buf[:, 0], dz_buf[:, 0])


def _launch_bwd_dq(q, k, v, do, lse, rows, s_buf, z_buf, extra, *, block_size, causal, scale):
    B, T, H, D = q.shape
    NB = triton.cdiv(T, block_size)
    tq = tile_config("hybrid_bwd_dq", block_size=block_size, head_dim=D,
                     arch=cuda_arch(q.device))
    dq = new_output(q.shape, dtype=q.dtype, device=q.device)
    per_q = triton.cdiv(block_size, tq.block_m)
    hybrid_bwd_kernel_dq[(NB * per_q, B * H)](
        q, k, v, do, dq, lse, *rows, s_buf, z_buf, extra if extra is not None else lse, scale,
        scale * LOG2E, T, H, NB, extra.shape[-1] if extra is not None else 0, block_size, per_q,
        1 if causal else 0, HEAD_D=D, BLOCK_D=next_pow2(D), BLOCK_M=tq.block_m,
        BLOCK_N=tq.block_n, CAUSAL=causal, HAS_EXTRA=extra is not None,
        PREC=dot_precision(q.dtype), STATE_PREC=_state_precision(q.dtype),
        num_warps=tq.num_warps, num_stages=tq.num_stages)
    return dq


def _launch_bwd_dkdv(q, k, v, do, lse, rows, ds_buf, dz_buf, dslots, extra, *, block_size,
                     causal, scale):
    B, T, H, D = q.shape
    NB = triton.cdiv(T, block_size)
    two_loops = causal and loops() == "two"
    tk = tile_config("hybrid_bwd_dkdv2" if two_loops else "hybrid_bwd_dkdv",
                     block_size=block_size, head_dim=D, arch=cuda_arch(q.device))
    dk, dv = (new_output(q.shape, dtype=q.dtype, device=q.device) for _ in range(2))
    rev_off, rev_idx = reverse_block_index(extra, NB) if extra is not None else (lse, lse)
    per_k = triton.cdiv(block_size, tk.block_n)
    hybrid_bwd_kernel_dkdv[(NB * per_k, B * H)](
        q, k, v, do, dk, dv, lse, *rows, ds_buf, dz_buf, rev_off, rev_idx, scale, scale * LOG2E,
        T, H, NB, block_size, per_k, *dslots, HEAD_D=D, BLOCK_D=next_pow2(D),
        BLOCK_M=tk.block_m, BLOCK_N=tk.block_n, CAUSAL=causal, HAS_EXTRA=extra is not None,
        PREC=dot_precision(q.dtype), STATE_PREC=_state_precision(q.dtype), TWO_LOOPS=two_loops,
        num_warps=tk.num_warps, num_stages=tk.num_stages)
    return dk, dv


def hybrid_bwd(q, k, v, gate, o, aux, do, extra, ds_fin, dz_fin, *, block_size: int,
               causal: bool, scale: float):
    """Launch the backward; returns ``(dq, dk, dv, dgate, dS0 [BH, D, D], dz0 [BH, D])``."""
    o_diff, lse, den, s_buf, z_buf = aux
    dgate, rows, ds_buf, dz_buf, dslot0, dstep, init = _state_grads(
        q, o, o_diff, do, gate, den, ds_fin, dz_fin, block_size=block_size, causal=causal)
    kw = {"block_size": block_size, "causal": causal, "scale": scale}
    dq = _launch_bwd_dq(q, k, v, do, lse, rows, s_buf, z_buf, extra, **kw)
    dk, dv = _launch_bwd_dkdv(q, k, v, do, lse, rows, ds_buf, dz_buf, (dslot0, dstep), extra,
                              **kw)
    return dq, dk, dv, dgate, init[0], init[1]


class HybridAttnFunction(torch.autograd.Function):
    """Autograd wrapper: outputs ``(o, S_final, z_final)``; the indices get no gradient."""

    @staticmethod
    def forward(ctx, q, k, v, gate, s0, z0, extra, block_size, causal, scale, need_grad):
        o, aux, (s_fin, z_fin) = hybrid_fwd(q, k, v, gate, s0, z0, extra, block_size=block_size,
                                            causal=causal, scale=scale, need_aux=need_grad)
        if need_grad:
            ctx.save_for_backward(q, k, v, gate, o, extra, *aux)
        ctx.args = (block_size, causal, scale, s0 is not None, z0 is not None)
        ctx.init_dtypes = (None if s0 is None else s0.dtype, None if z0 is None else z0.dtype)
        return o, s_fin, z_fin

    @staticmethod
    @first_order_only
    def backward(ctx, do, ds_fin, dz_fin):
        q, k, v, gate, o, extra, *aux = ctx.saved_tensors
        block_size, causal, scale, has_s0, has_z0 = ctx.args
        dq, dk, dv, dgate, ds0, dz0 = hybrid_bwd(
            q, k, v, gate, o, aux, do.contiguous(), extra, ds_fin, dz_fin,
            block_size=block_size, causal=causal, scale=scale)
        B, _T, H, D = q.shape
        ds0 = ds0.reshape(B, H, D, D).to(ctx.init_dtypes[0]) if has_s0 else None
        dz0 = dz0.reshape(B, H, D).to(ctx.init_dtypes[1]) if has_z0 else None
        return dq, dk, dv, dgate, ds0, dz0, None, None, None, None, None


def _check_hybrid_inputs(q, gate, initial_state):
    B, T, H, D = q.shape
    if gate.shape != (B, T, H) or not gate.dtype.is_floating_point:
        raise InputError(f"gate must be a float tensor of shape [B, T, H] = [{B}, {T}, {H}]; "
                         f"got {tuple(gate.shape)} {gate.dtype}")
    if initial_state is None:
        return None, None
    s0, z0 = initial_state
    if tuple(s0.shape) != (B, H, D, D) or tuple(z0.shape) != (B, H, D):
        raise InputError(f"initial_state must be (S [B, H, D, D], z [B, H, D]) = ([{B}, {H}, "
                         f"{D}, {D}], [{B}, {H}, {D}]); got {tuple(s0.shape)}, "
                         f"{tuple(z0.shape)}")
    if not (s0.dtype.is_floating_point and z0.dtype.is_floating_point):
        raise InputError(f"initial_state must be floating point; got {s0.dtype}, {z0.dtype}")
    return s0.contiguous(), z0.contiguous()


def hybrid_attn(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    gate: torch.Tensor,
    *,
    block_size: int,
    causal: bool = True,
    extra_blocks: torch.Tensor | None = None,
    initial_state: tuple[torch.Tensor, torch.Tensor] | None = None,
    output_final_state: bool = False,
    scale: float | None = None,
) -> tuple[torch.Tensor, tuple[torch.Tensor, torch.Tensor] | None]:
    """Fused ``gate * local_attn + (1 - gate) * linear_attn`` (Triton, forward and backward).

    Same contract as :func:`genoctx.kernels.hybrid.reference.hybrid_attn_reference`; the linear
    branch's chunk is the block size (the result does not depend on it). Besides the outputs
    it keeps one fp32 state per block, ``B * H * (T / block_size) * D * D * 4`` bytes (512 MiB
    at T = 2**20, H = 16, D = 64, block 512; twice that while training), so very small blocks
    at megabase lengths cost memory.

    Args:
        q, k, v: ``[B, T, H, D]``, one dtype among fp32/fp16/bf16, D in {32, 48, 64, 128}.
        gate: ``[B, T, H]`` mixing weight of the local branch, usually a sigmoid output.
        block_size: tokens per local block and per linear chunk.
        causal: causal local mask and causal (prefix-state) linear attention.
        extra_blocks: ``[B, H, NB, K]`` extra key blocks for the local branch (see local_attn).
        initial_state: linear state ``(S [B, H, D, D], z [B, H, D])`` carried in (fp32).
        output_final_state: also return the state after the last token.
        scale: local score scale, default ``D ** -0.5``.

    Returns:
        ``(o [B, T, H, D] in q.dtype, (S, z) fp32 or None)``. Differentiable in q, k, v, gate
        and the initial state (and through the returned final state).

    Example:
        >>> q = k = v = torch.randn(1, 8192, 8, 64, device="cuda", dtype=torch.bfloat16)
        >>> gate = torch.sigmoid(torch.randn(1, 8192, 8, device="cuda"))
        >>> o, (S, z) = hybrid_attn(q, k, v, gate, block_size=512, output_final_state=True)

    On CPU tensors it runs the reference, unless ``TRITON_INTERPRET=1``.
    """
    if q.device.type == "cpu" and not interpreting():
        return hybrid_attn_reference(q, k, v, gate, block_size=block_size, causal=causal,
                                     extra_blocks=extra_blocks, initial_state=initial_state,
                                     output_final_state=output_final_state, scale=scale)
    check_qkv(q, k, v, block_size)
    B, T, H, D = q.shape
    s0, z0 = _check_hybrid_inputs(q, gate, initial_state)
    NB = triton.cdiv(T, block_size)
    extra = sanitize_extra_blocks(extra_blocks, batch=B, heads=H, num_blocks=NB, causal=causal,
                                  device=q.device)
    scale = D ** -0.5 if scale is None else float(scale)
    if not math.isfinite(scale):
        raise InputError(f"scale must be a finite number, got {scale}")
    inputs = (q, k, v, gate) + (() if s0 is None else (s0, z0))
    need_grad = torch.is_grad_enabled() and any(t.requires_grad for t in inputs)
    o, s_fin, z_fin = HybridAttnFunction.apply(
        q.contiguous(), k.contiguous(), v.contiguous(), gate.contiguous(), s0, z0, extra,
        block_size, causal, scale, need_grad)
    return o, ((s_fin, z_fin) if output_final_state else None)
