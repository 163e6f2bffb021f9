"""Chunked linear attention (elu+1 feature map, normalised) in Triton: forward and backward.

Legend: B batch, T tokens, H heads, D key dim, E value dim, C chunk size, NSEG segments.

Semantics are those of :func:`genoctx.kernels.linear_attn.reference.linear_attn_reference`.

How the work is split. The sequence is cut into chunks of ``C`` tokens and consecutive chunks
are grouped into ``NSEG`` segments per (batch, head). A first pass sums each segment's state
increment ``sum phi(k) v^T`` (and ``sum phi(k)``); a cumulative sum over the few segments (in
PyTorch, fp32) gives the state at each segment start; a second pass walks each segment chunk by
chunk with the running state in registers, so the per-chunk states are never written to memory
(O(T) memory, the only extra buffers are the [B, H, NSEG, D, E] segment states). The backward
mirrors this: the dq pass runs forward from the saved segment-start states and also sums each
segment's ``phi(q) g^T``; the dk/dv pass runs backward from reverse segment states.

The forward also writes 1/den per token; the backward reads it and ``o`` instead of recomputing
the forward.

Precision: products of inputs (``phi(q) phi(k)^T``, ``A v``, ``phi(k)^T v``) take the input
dtype on the tensor cores with fp32 accumulation; products with the fp32 state or with the
1/den-scaled gradients take bf16 operands for bf16 inputs (fp32's exponent range, tensor-core
rate) and fp32 operands otherwise (tf32 for fp16, IEEE for fp32), which keeps fp16's narrow
exponent range out of sums over a megabase. Accumulators and states are always fp32.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

from genoctx.errors import InputError
from genoctx.kernels._triton_utils import (dot_precision, first_order_only, interpreting,
                                          new_output, next_pow2)
from genoctx.kernels.linear_attn.reference import State, linear_attn_reference


@triton.jit
def _phi(x):
    return tl.where(x > 0, x + 1.0, tl.exp(x))


@triton.jit
def _load_tile(base, t, mask_t, offs, n, stride_t):
    """Load a [C, BN] tile of rows ``t`` (int64) and columns ``offs`` < n; zeros outside."""
    mask = mask_t[:, None] & (offs[None, :] < n)
    return tl.load(base + t[:, None] * stride_t + offs[None, :], mask=mask, other=0.0)


@triton.jit
def linear_attn_fwd_kernel_segsum(
    k, v, seg_S, seg_z, T, H, D, E, NSEG, CPS,
    C: tl.constexpr, BD: tl.constexpr, BE: tl.constexpr, PREC: tl.constexpr,
):
    """Per-segment sums of ``phi(k)^T v`` and ``phi(k)``: grid (B*H, NSEG)."""
    i_bh, i_s = tl.program_id(0), tl.program_id(1)
    b, h = i_bh // H, i_bh % H
    k_base = k + (b.to(tl.int64) * T * H + h) * D
    v_base = v + (b.to(tl.int64) * T * H + h) * E
    offs_c, offs_d, offs_e = tl.arange(0, C), tl.arange(0, BD), tl.arange(0, BE)
    S = tl.zeros([BD, BE], dtype=tl.float32)
    z = tl.zeros([BD], dtype=tl.float32)
    t0 = i_s * CPS * C
    n = tl.minimum(CPS, tl.cdiv(T - t0, C))
    for i in range(0, n):
        t = (t0 + i * C + offs_c).to(tl.int64)
        mt = t < T
        kk = _load_tile(k_base, t, mt, offs_d, D, H * D)
        fk = tl.where(mt[:, None] & (offs_d[None, :] < D), _phi(kk.to(tl.float32)), 0.0)
        vv = _load_tile(v_base, t, mt, offs_e, E, H * E)
        S += tl.dot(tl.trans(fk.to(vv.dtype)), vv, input_precision=PREC)
        z += tl.sum(fk, 0)
    out = (i_bh * NSEG + i_s).to(tl.int64)
    md, me = offs_d < D, offs_e < E
    tl.store(seg_S + out * D * E + offs_d[:, None] * E + offs_e[None, :], S,
             mask=md[:, None] & me[None, :])
    tl.store(seg_z + out * D + offs_d, z, mask=md)


@triton.jit
def _op(x, like, LOWP: tl.constexpr):
    """Operand for a product with the state or the 1/den-scaled gradients: the input dtype on the
    LOWP path (bf16, tensor-core rate), else fp32 (tf32/IEEE; fp16's range is too narrow)."""
    if LOWP:
        return x.to(like.dtype)
    else:
        return x.to(tl.float32)


@triton.jit
def linear_attn_fwd_kernel(
    q, k, v, o, rden, S_start, z_start, sb_S, ss_S, sb_z, ss_z, T, H, D, E, NSEG, CPS, eps,
    C: tl.constexpr, BD: tl.constexpr, BE: tl.constexpr, CAUSAL: tl.constexpr,
    PREC: tl.constexpr, LOWP: tl.constexpr,
):
    """Outputs (and 1/den) of one segment from its start state: grid (B*H, NSEG)."""
    i_bh, i_s = tl.program_id(0), tl.program_id(1)
    b, h = i_bh // H, i_bh % H
    qk_off = (b.to(tl.int64) * T * H + h) * D
    ve_off = (b.to(tl.int64) * T * H + h) * E
    offs_c, offs_d, offs_e = tl.arange(0, C), tl.arange(0, BD), tl.arange(0, BE)
    md, me = offs_d < D, offs_e < E
    st = i_bh.to(tl.int64) * sb_S + i_s.to(tl.int64) * ss_S
    S = tl.load(S_start + st + offs_d[:, None] * E + offs_e[None, :],
                mask=md[:, None] & me[None, :], other=0.0)
    z = tl.load(z_start + i_bh.to(tl.int64) * sb_z + i_s.to(tl.int64) * ss_z + offs_d, mask=md,
                other=0.0)
    causal_mask = offs_c[:, None] >= offs_c[None, :]
    t0 = i_s * CPS * C
    n = tl.minimum(CPS, tl.cdiv(T - t0, C))
    for i in range(0, n):
        t = (t0 + i * C + offs_c).to(tl.int64)
        mt = t < T
        mtd = mt[:, None] & md[None, :]
        qq = _load_tile(q + qk_off, t, mt, offs_d, D, H * D)
        fq = tl.where(mtd, _phi(qq.to(tl.float32)), 0.0)
        vv = _load_tile(v + ve_off, t, mt, offs_e, E, H * E)
        num = tl.dot(_op(fq, vv, LOWP), _op(S, vv, LOWP), input_precision=PREC)
        den = tl.sum(fq * z[None, :], 1) + eps
        if CAUSAL:
            kk = _load_tile(k + qk_off, t, mt, offs_d, D, H * D)
            fk = tl.where(mtd, _phi(kk.to(tl.float32)), 0.0).to(vv.dtype)
            a = tl.dot(fq.to(vv.dtype), tl.trans(fk), input_precision=PREC)
            a = tl.where(causal_mask, a, 0.0)
            num += tl.dot(a.to(vv.dtype), vv, input_precision=PREC)
            den += tl.sum(a, 1)
            S += tl.dot(tl.trans(fk), vv, input_precision=PREC)
            z += tl.sum(fk.to(tl.float32), 0)
        rd = 1.0 / den
        tl.store(rden + i_bh.to(tl.int64) * T + t, rd, mask=mt)
        tl.store(o + ve_off + t[:, None] * (H * E) + offs_e[None, :],
                 (num * rd[:, None]).to(o.dtype.element_ty), mask=mt[:, None] & me[None, :])


@triton.jit
def linear_attn_bwd_kernel_dq(
    q, k, v, o, do, dq, rden, gden, S_start, z_start, sb_S, ss_S, sb_z, ss_z, dseg_S, dseg_z,
    T, H, D, E, NSEG, CPS,
    C: tl.constexpr, BD: tl.constexpr, BE: tl.constexpr, CAUSAL: tl.constexpr,
    PREC: tl.constexpr, LOWP: tl.constexpr,
):
    """dq, d(den) per token, and per-segment sums of ``phi(q)^T g``: grid (B*H, NSEG).

    With ``g = do / den`` and ``d(den) = -(do . o) / den`` (o and 1/den saved by the forward),
    ``d phi(q) = g S^T + d(den) z^T + tril(g v^T + d(den)) phi(k)``.
    """
    i_bh, i_s = tl.program_id(0), tl.program_id(1)
    b, h = i_bh // H, i_bh % H
    qk_off = (b.to(tl.int64) * T * H + h) * D
    ve_off = (b.to(tl.int64) * T * H + h) * E
    offs_c, offs_d, offs_e = tl.arange(0, C), tl.arange(0, BD), tl.arange(0, BE)
    md, me = offs_d < D, offs_e < E
    st = i_bh.to(tl.int64) * sb_S + i_s.to(tl.int64) * ss_S
    S = tl.load(S_start + st + offs_d[:, None] * E + offs_e[None, :],
                mask=md[:, None] & me[None, :], other=0.0)
    z = tl.load(z_start + i_bh.to(tl.int64) * sb_z + i_s.to(tl.int64) * ss_z + offs_d, mask=md,
                other=0.0)
    dS = tl.zeros([BD, BE], dtype=tl.float32)
    dz = tl.zeros([BD], dtype=tl.float32)
    causal_mask = offs_c[:, None] >= offs_c[None, :]
    t0 = i_s * CPS * C
    n = tl.minimum(CPS, tl.cdiv(T - t0, C))
    for i in range(0, n):
        t = (t0 + i * C + offs_c).to(tl.int64)
        mt = t < T
        mtd = mt[:, None] & md[None, :]
        qq = _load_tile(q + qk_off, t, mt, offs_d, D, H * D).to(tl.float32)
        fq = tl.where(mtd, _phi(qq), 0.0)
        vv = _load_tile(v + ve_off, t, mt, offs_e, E, H * E)
        dov = _load_tile(do + ve_off, t, mt, offs_e, E, H * E).to(tl.float32)
        oo = _load_tile(o + ve_off, t, mt, offs_e, E, H * E).to(tl.float32)
        rd = tl.load(rden + i_bh.to(tl.int64) * T + t, mask=mt, other=0.0)
        g = dov * rd[:, None]
        gd = -tl.sum(dov * oo, 1) * rd
        tl.store(gden + i_bh.to(tl.int64) * T + t, gd, mask=mt)
        g_op = _op(g, vv, LOWP)
        dfq = tl.dot(g_op, tl.trans(_op(S, vv, LOWP)), input_precision=PREC)
        dfq += gd[:, None] * z[None, :]
        if CAUSAL:
            kk = _load_tile(k + qk_off, t, mt, offs_d, D, H * D)
            fk = tl.where(mtd, _phi(kk.to(tl.float32)), 0.0).to(vv.dtype)
            m = tl.dot(g_op, tl.trans(_op(vv, vv, LOWP)), input_precision=PREC) + gd[:, None]
            m = tl.where(causal_mask, m, 0.0)
            dfq += tl.dot(_op(m, vv, LOWP), _op(fk, vv, LOWP), input_precision=PREC)
            S += tl.dot(tl.trans(fk), vv, input_precision=PREC)
            z += tl.sum(fk.to(tl.float32), 0)
        dS += tl.dot(tl.trans(_op(fq, vv, LOWP)), g_op, input_precision=PREC)
        dz += tl.sum(fq * gd[:, None], 0)
        dqq = dfq * tl.where(qq > 0, 1.0, tl.exp(qq))
        tl.store(dq + qk_off + t[:, None] * (H * D) + offs_d[None, :], dqq.to(dq.dtype.element_ty),
                 mask=mtd)
    out = (i_bh * NSEG + i_s).to(tl.int64)
    tl.store(dseg_S + out * D * E + offs_d[:, None] * E + offs_e[None, :], dS,
             mask=md[:, None] & me[None, :])
    tl.store(dseg_z + out * D + offs_d, dz, mask=md)


@triton.jit
def linear_attn_bwd_kernel_dkdv(
    q, k, v, do, dk, dv, rden, gden, dS_end, dz_end, sb_S, ss_S, sb_z, ss_z,
    T, H, D, E, NSEG, CPS,
    C: tl.constexpr, BD: tl.constexpr, BE: tl.constexpr, CAUSAL: tl.constexpr,
    PREC: tl.constexpr, LOWP: tl.constexpr,
):
    """dk and dv, walking each segment backwards from its reverse state: grid (B*H, NSEG)."""
    i_bh, i_s = tl.program_id(0), tl.program_id(1)
    b, h = i_bh // H, i_bh % H
    qk_off = (b.to(tl.int64) * T * H + h) * D
    ve_off = (b.to(tl.int64) * T * H + h) * E
    offs_c, offs_d, offs_e = tl.arange(0, C), tl.arange(0, BD), tl.arange(0, BE)
    md, me = offs_d < D, offs_e < E
    st = i_bh.to(tl.int64) * sb_S + i_s.to(tl.int64) * ss_S
    dS = tl.load(dS_end + st + offs_d[:, None] * E + offs_e[None, :],
                 mask=md[:, None] & me[None, :], other=0.0)
    dz = tl.load(dz_end + i_bh.to(tl.int64) * sb_z + i_s.to(tl.int64) * ss_z + offs_d, mask=md,
                 other=0.0)
    causal_mask = offs_c[:, None] >= offs_c[None, :]
    t0 = i_s * CPS * C
    n = tl.minimum(CPS, tl.cdiv(T - t0, C))
    for i in range(0, n):
        t = (t0 + (n - 1 - i) * C + offs_c).to(tl.int64)
        mt = t < T
        mtd = mt[:, None] & md[None, :]
        kk = _load_tile(k + qk_off, t, mt, offs_d, D, H * D).to(tl.float32)
        fk = tl.where(mtd, _phi(kk), 0.0)
        vv = _load_tile(v + ve_off, t, mt, offs_e, E, H * E)
        dS_op = _op(dS, vv, LOWP)
        dfk = tl.dot(_op(vv, vv, LOWP), tl.trans(dS_op), input_precision=PREC) + dz[None, :]
        dvv = tl.dot(_op(fk, vv, LOWP), dS_op, input_precision=PREC)
        if CAUSAL:
            qq = _load_tile(q + qk_off, t, mt, offs_d, D, H * D)
            fq = tl.where(mtd, _phi(qq.to(tl.float32)), 0.0)
            dov = _load_tile(do + ve_off, t, mt, offs_e, E, H * E).to(tl.float32)
            rd = tl.load(rden + i_bh.to(tl.int64) * T + t, mask=mt, other=0.0)
            gd = tl.load(gden + i_bh.to(tl.int64) * T + t, mask=mt, other=0.0)
            g_op = _op(dov * rd[:, None], vv, LOWP)
            fq_op = _op(fq, vv, LOWP)
            a = tl.dot(fq.to(vv.dtype), tl.trans(fk.to(vv.dtype)), input_precision=PREC)
            a = tl.where(causal_mask, a, 0.0)
            m = tl.dot(g_op, tl.trans(_op(vv, vv, LOWP)), input_precision=PREC) + gd[:, None]
            m = tl.where(causal_mask, m, 0.0)
            dfk += tl.dot(tl.trans(_op(m, vv, LOWP)), fq_op, input_precision=PREC)
            dvv += tl.dot(tl.trans(_op(a, vv, LOWP)), g_op, input_precision=PREC)
            dS += tl.dot(tl.trans(fq_op), g_op, input_precision=PREC)
            dz += tl.sum(fq * gd[:, None], 0)
        dkk = dfk * tl.where(kk > 0, 1.0, tl.exp(kk))
        tl.store(dk + qk_off + t[:, None] * (H * D) + offs_d[None, :], dkk.to(dk.dtype.element_ty),
                 mask=mtd)
        tl.store(dv + ve_off + t[:, None] * (H * E) + offs_e[None, :], dvv.to(dv.dtype.element_ty),
                 mask=mt[:, None] & me[None, :])


# ---------------------------------------------------------------------------------------------
# host wrappers
# ---------------------------------------------------------------------------------------------

# Launch overrides for benchmarks/gpu_suite.py's sweep: "programs_per_sm", "lowp_fp16" (tests:
# the bf16 operand path on fp16, which the interpreter can run), and per pass ("fwd", "bwd")
# {"num_warps": .., "num_stages": ..}.
TUNE: dict = {}
# From the H200 sweep of the first revision (docs/benchmarks.md, B1 H16 D64 bf16, T = 1M):
# forward num_stages 3 beat 2, backward 2 beat 3; re-check with gpu_suite.py --sweep.
_DEFAULTS = {"fwd": dict(num_warps=4, num_stages=3), "bwd": dict(num_warps=4, num_stages=2)}


def _num_segments(B: int, H: int, T: int, C: int, device: torch.device) -> tuple[int, int]:
    """``(chunks per segment, segments)``: enough programs to fill the GPU a few times over."""
    num_chunks = triton.cdiv(T, C)
    if device.type == "cuda":
        sms = torch.cuda.get_device_properties(device).multi_processor_count
        target = TUNE.get("programs_per_sm", 8) * sms
    else:
        target = 8  # interpreter: a few segments so that chaining is exercised
    cps = max(1, triton.cdiv(num_chunks * B * H, target))
    return cps, triton.cdiv(num_chunks, cps)


def _launch_cfg(D: int, E: int, C: int, dtype: torch.dtype, kind: str) -> dict:
    BD, BE = max(16, next_pow2(D)), max(16, next_pow2(E))
    cfg = dict(_DEFAULTS[kind])
    if BD * BE > 64 * 64 or C > 64:
        cfg["num_warps"] = 8
    lowp = dtype == torch.bfloat16 or (dtype == torch.float16 and TUNE.get("lowp_fp16", False))
    return {**cfg, **TUNE.get(kind, {}), "C": C, "BD": BD, "BE": BE, "LOWP": lowp,
            "PREC": dot_precision(dtype)}


def _segment_starts(seg_S, seg_z, S0, z0, causal):
    """Exclusive prefix (causal) or total (bidirectional) of segment sums, plus the final state."""
    total_S, total_z = S0 + seg_S.sum(2), z0 + seg_z.sum(2)
    if not causal:
        return total_S[:, :, None].contiguous(), total_z[:, :, None].contiguous(), total_S, total_z
    S_start = torch.cat([S0[:, :, None], S0[:, :, None] + seg_S.cumsum(2)[:, :, :-1]], 2)
    z_start = torch.cat([z0[:, :, None], z0[:, :, None] + seg_z.cumsum(2)[:, :, :-1]], 2)
    return S_start.contiguous(), z_start.contiguous(), total_S, total_z


def _segment_ends(dseg_S, dseg_z, dS_f, dz_f, causal):
    """Reverse state each segment starts its backward walk from (what later tokens send back)."""
    dS0, dz0 = dS_f + dseg_S.sum(2), dz_f + dseg_z.sum(2)
    if not causal:
        return dS0[:, :, None].contiguous(), dz0[:, :, None].contiguous(), dS0, dz0
    after_S = dseg_S.flip(2).cumsum(2).flip(2)[:, :, 1:]
    after_z = dseg_z.flip(2).cumsum(2).flip(2)[:, :, 1:]
    dS_end = torch.cat([dS_f[:, :, None] + after_S, dS_f[:, :, None]], 2).contiguous()
    dz_end = torch.cat([dz_f[:, :, None] + after_z, dz_f[:, :, None]], 2).contiguous()
    return dS_end, dz_end, dS0, dz0


def _seg_strides(S: torch.Tensor, z: torch.Tensor) -> tuple[int, int, int, int]:
    """(batch*head, segment) strides of ``S [B, H, N, D, E]`` and ``z [B, H, N, D]``.

    The segment stride is 0 when one state (N == 1, the bidirectional total) serves every segment.
    """
    return (S.stride(1), S.stride(2) if S.shape[2] > 1 else 0,
            z.stride(1), z.stride(2) if z.shape[2] > 1 else 0)


def _linear_attn_fwd(q, k, v, S0, z0, causal, C, eps):
    """Returns ``(o, S_final, z_final, rden [B, H, T], S_start, z_start)``."""
    B, T, H, D = q.shape
    E = v.shape[-1]
    cps, NSEG = _num_segments(B, H, T, C, q.device)
    cfg = _launch_cfg(D, E, C, q.dtype, "fwd")
    f32 = dict(dtype=torch.float32, device=q.device)
    seg_S, seg_z = new_output((B, H, NSEG, D, E), **f32), new_output((B, H, NSEG, D), **f32)
    grid = (B * H, NSEG)
    linear_attn_fwd_kernel_segsum[grid](k, v, seg_S, seg_z, T, H, D, E, NSEG, cps, C=C,
                                        BD=cfg["BD"], BE=cfg["BE"], PREC=cfg["PREC"],
                                        num_warps=cfg["num_warps"], num_stages=cfg["num_stages"])
    S_start, z_start, S_f, z_f = _segment_starts(seg_S, seg_z, S0, z0, causal)
    o = new_output(v.shape, dtype=v.dtype, device=v.device)
    rden = new_output((B, H, T), **f32)
    linear_attn_fwd_kernel[grid](q, k, v, o, rden, S_start, z_start,
                                 *_seg_strides(S_start, z_start), T, H, D, E, NSEG, cps, eps,
                                 CAUSAL=causal, **cfg)
    return o, S_f, z_f, rden, S_start, z_start


def _linear_attn_bwd(q, k, v, o, do, rden, S_start, z_start, dS_f, dz_f, causal, C):
    """Returns ``(dq, dk, dv, dS0, dz0)``."""
    B, T, H, D = q.shape
    E = v.shape[-1]
    cps, NSEG = _num_segments(B, H, T, C, q.device)
    cfg = _launch_cfg(D, E, C, q.dtype, "bwd")
    f32 = dict(dtype=torch.float32, device=q.device)
    dq, dk, dv = (new_output(x.shape, dtype=x.dtype, device=x.device) for x in (q, k, v))
    gden = new_output((B, H, T), **f32)
    dseg_S, dseg_z = new_output((B, H, NSEG, D, E), **f32), new_output((B, H, NSEG, D), **f32)
    grid = (B * H, NSEG)
    linear_attn_bwd_kernel_dq[grid](q, k, v, o, do, dq, rden, gden, S_start, z_start,
                                    *_seg_strides(S_start, z_start), dseg_S, dseg_z,
                                    T, H, D, E, NSEG, cps, CAUSAL=causal, **cfg)
    dS_end, dz_end, dS0, dz0 = _segment_ends(dseg_S, dseg_z, dS_f, dz_f, causal)
    linear_attn_bwd_kernel_dkdv[grid](q, k, v, do, dk, dv, rden, gden, dS_end, dz_end,
                                      *_seg_strides(dS_end, dz_end), T, H, D, E, NSEG, cps,
                                      CAUSAL=causal, **cfg)
    return dq, dk, dv, dS0, dz0


class LinearAttnFunction(torch.autograd.Function):
    """Autograd glue: saves q, k, v, o, 1/den and the segment-start states; the per-chunk
    states are recomputed in the backward."""

    @staticmethod
    def forward(ctx, q, k, v, S0, z0, causal: bool, chunk_size: int, eps: float):
        o, S_f, z_f, rden, S_start, z_start = _linear_attn_fwd(q, k, v, S0, z0, causal,
                                                               chunk_size, eps)
        ctx.save_for_backward(q, k, v, o, rden, S_start, z_start)
        ctx.causal, ctx.chunk_size = causal, chunk_size
        ctx.set_materialize_grads(False)
        return o, S_f, z_f

    @staticmethod
    @first_order_only
    def backward(ctx, do, dS_f, dz_f):
        q, k, v, o, rden, S_start, z_start = ctx.saved_tensors
        B, T, H, D = q.shape
        E = v.shape[-1]
        do = torch.zeros_like(v) if do is None else do.contiguous()
        dS_f = q.new_zeros(B, H, D, E, dtype=torch.float32) if dS_f is None else dS_f.float()
        dz_f = q.new_zeros(B, H, D, dtype=torch.float32) if dz_f is None else dz_f.float()
        dq, dk, dv, dS0, dz0 = _linear_attn_bwd(q, k, v, o, do, rden, S_start, z_start, dS_f,
                                                dz_f, ctx.causal, ctx.chunk_size)
        return dq, dk, dv, dS0, dz0, None, None, None


def _check_inputs(q, k, v, initial_state, chunk_size):
    if q.dim() != 4 or k.shape != q.shape or v.dim() != 4 or v.shape[:3] != q.shape[:3]:
        raise InputError(f"linear_attn wants q, k [B, T, H, D] and v [B, T, H, E]; got q "
                         f"{tuple(q.shape)}, k {tuple(k.shape)}, v {tuple(v.shape)}")
    if not (q.dtype == k.dtype == v.dtype) or q.dtype not in (torch.float16, torch.bfloat16,
                                                              torch.float32):
        raise InputError(f"q, k, v must share one of fp16/bf16/fp32; got {q.dtype}, {k.dtype}, "
                         f"{v.dtype}")
    if chunk_size not in (16, 32, 64, 128):
        raise InputError(f"chunk_size must be 16, 32, 64 or 128, got {chunk_size}")
    if q.shape[-1] > 128 or v.shape[-1] > 128:
        raise InputError(f"the Triton kernel holds the [D, E] state in registers and supports "
                         f"D, E <= 128 (got D={q.shape[-1]}, E={v.shape[-1]}); use "
                         f"linear_attn_reference for wider heads")
    if initial_state is not None:
        B, _, H, D = q.shape
        S0, z0 = initial_state
        if S0.shape != (B, H, D, v.shape[-1]) or z0.shape != (B, H, D):
            raise InputError(f"initial_state must be (S [B, H, D, E], z [B, H, D]) = "
                             f"({(B, H, D, v.shape[-1])}, {(B, H, D)}); got "
                             f"({tuple(S0.shape)}, {tuple(z0.shape)})")


def linear_attn(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    *,
    causal: bool = True,
    initial_state: State | None = None,
    output_final_state: bool = False,
    chunk_size: int = 64,
    eps: float = 1e-6,
) -> tuple[torch.Tensor, State | None]:
    """Linear attention with the elu+1 feature map, normalised by ``phi(q) . z``.

    Same function as :func:`~genoctx.kernels.linear_attn.reference.linear_attn_reference`, with
    gradients for ``q``, ``k``, ``v`` and the initial state. Memory is O(T): no per-chunk state
    is stored. CPU tensors run the reference unless ``TRITON_INTERPRET=1``.

    Args:
        q: Queries ``[B, T, H, D]`` (fp16, bf16 or fp32; D <= 128).
        k: Keys ``[B, T, H, D]``.
        v: Values ``[B, T, H, E]`` (E <= 128).
        causal: Position t sees keys s <= t; otherwise every position sees all keys.
        initial_state: ``(S [B, H, D, E], z [B, H, D])`` fp32, the state before position 0.
        output_final_state: Also return the state after the last position.
        chunk_size: Tokens per chunk (16, 32, 64 or 128); a speed knob, not a semantic one.
        eps: Added to the normaliser.

    Returns:
        ``(o [B, T, H, E] in v.dtype, (S, z) fp32 or None)``.

    Example:
        >>> q, k, v = (torch.randn(1, 4096, 16, 64, device="cuda", dtype=torch.bfloat16)
        ...            for _ in range(3))
        >>> o, (S, z) = linear_attn(q, k, v, output_final_state=True)
        >>> o2, _ = linear_attn(q, k, v, initial_state=(S, z))  # continue after the segment
    """
    _check_inputs(q, k, v, initial_state, chunk_size)
    if not q.is_cuda and not interpreting():
        return linear_attn_reference(q, k, v, causal=causal, initial_state=initial_state,
                                     output_final_state=output_final_state,
                                     chunk_size=chunk_size, eps=eps)
    B, T, H, D = q.shape
    E = v.shape[-1]
    if initial_state is None:
        S0 = q.new_zeros(B, H, D, E, dtype=torch.float32)
        z0 = q.new_zeros(B, H, D, dtype=torch.float32)
    else:
        S0, z0 = (s.float().contiguous() for s in initial_state)
    o, S_f, z_f = LinearAttnFunction.apply(q.contiguous(), k.contiguous(), v.contiguous(), S0, z0,
                                           causal, chunk_size, eps)
    return o, ((S_f, z_f) if output_final_state else None)
