"""MoE dispatch in Triton: permute by expert, grouped matmul, weighted un-permute; with autograd.

Legend: N tokens, K experts per token, E experts, D input dim, F output dim, M = N * K routed
rows, BM/BN/BK tile sizes.

Semantics are those of :mod:`genoctx.kernels.moe.reference`. Routed row ``r = n * K + j`` is
token ``n``'s ``j``-th choice; ``order`` sorts rows by expert (stable) and ``inv`` is its inverse
(``inv[order[i]] = i``).

What is Triton and what is not:

* ``moe_permute``: the sort, the counts and the forward row gather are PyTorch (a stable sort and
  an index copy are what PyTorch already does best). Its backward is the Triton gather-combine
  kernel (each token sums its K rows; no atomics, deterministic) in place of an atomic
  ``index_add``.
* ``grouped_mm``: ``torch._grouped_mm`` (CUTLASS) on CUDA bf16/fp16 where it exists (compute
  capability >= 9.0), else a Triton grouped GEMM whose programs map to (expert, row tile)
  through a tile table built on the device (no host sync); weight gradients by a per-expert
  reduction kernel.
* ``moe_unpermute``: forward is the Triton gather-combine kernel (weighted sum of K gathered rows,
  fp32 accumulation); backward is one Triton kernel that writes ``dy_perm`` and ``d topk_weight``
  in one pass over the rows.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

from genoctx.errors import InputError
from genoctx.kernels._triton_utils import (dot_precision, first_order_only, interpreting,
                                          new_output, next_pow2)
from genoctx.kernels.moe import reference as ref


@triton.jit
def moe_combine_kernel(
    y_perm, inv, weight, out, K, F,
    HAS_WEIGHT: tl.constexpr, BF: tl.constexpr,
):
    """``out[n] = sum_j weight[n, j] * y_perm[inv[n*K + j]]`` in fp32; grid (N, F/BF)."""
    n, i_f = tl.program_id(0).to(tl.int64), tl.program_id(1)
    offs_f = i_f * BF + tl.arange(0, BF)
    mf = offs_f < F
    acc = tl.zeros([BF], dtype=tl.float32)
    for j in range(0, K):
        r = n * K + j
        row = tl.load(inv + r).to(tl.int64)
        y = tl.load(y_perm + row * F + offs_f, mask=mf, other=0.0).to(tl.float32)
        if HAS_WEIGHT:
            y = y * tl.load(weight + r).to(tl.float32)
        acc += y
    tl.store(out + n * F + offs_f, acc.to(out.dtype.element_ty), mask=mf)


@triton.jit
def moe_unpermute_bwd_kernel(
    dy, y_perm, order, weight, dy_perm, dweight, K, F,
    BF: tl.constexpr,
):
    """Per sorted row i (routed row r = order[i]): ``dy_perm[i] = w[r] dy[r // K]``,
    ``dw[r] = dy[r // K] . y_perm[i]``: grid (M,)."""
    i = tl.program_id(0).to(tl.int64)
    r = tl.load(order + i).to(tl.int64)
    n = r // K
    w = tl.load(weight + r).to(tl.float32)
    dot = tl.zeros([BF], dtype=tl.float32)
    for f0 in range(0, F, BF):
        offs_f = f0 + tl.arange(0, BF)
        mf = offs_f < F
        g = tl.load(dy + n * F + offs_f, mask=mf, other=0.0).to(tl.float32)
        y = tl.load(y_perm + i * F + offs_f, mask=mf, other=0.0).to(tl.float32)
        tl.store(dy_perm + i * F + offs_f, (w * g).to(dy_perm.dtype.element_ty), mask=mf)
        dot += g * y
    tl.store(dweight + r, tl.sum(dot, 0).to(dweight.dtype.element_ty))


@triton.jit
def grouped_mm_kernel(
    x, w, y, tile_expert, tile_row0, row_end, D, F,
    s_we, s_wd, s_wf,
    BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr, PREC: tl.constexpr,
):
    """``y[rows of e] = x[rows of e] @ w[e]`` for one (row tile, column tile): grid (tiles, F/BN).

    ``tile_expert[t] < 0`` marks a spare program (the grid is sized without a host sync).
    """
    t, i_n = tl.program_id(0), tl.program_id(1)
    e = tl.load(tile_expert + t)
    if e >= 0:
        r0 = tl.load(tile_row0 + t).to(tl.int64)
        r_end = tl.load(row_end + e).to(tl.int64)
        rows = r0 + tl.arange(0, BM)
        cols = i_n * BN + tl.arange(0, BN)
        offs_k = tl.arange(0, BK)
        mr, mc = rows < r_end, cols < F
        w_base = w + e.to(tl.int64) * s_we
        acc = tl.zeros([BM, BN], dtype=tl.float32)
        for k0 in range(0, D, BK):
            kk = k0 + offs_k
            a = tl.load(x + rows[:, None] * D + kk[None, :], mask=mr[:, None] & (kk < D)[None, :],
                        other=0.0)
            b = tl.load(w_base + kk[:, None] * s_wd + cols[None, :] * s_wf,
                        mask=(kk < D)[:, None] & mc[None, :], other=0.0)
            acc = tl.dot(a, b, acc, input_precision=PREC)
        tl.store(y + rows[:, None] * F + cols[None, :], acc.to(y.dtype.element_ty),
                 mask=mr[:, None] & mc[None, :])


@triton.jit
def grouped_mm_dw_kernel(
    x, dy, dw, offs, D, F,
    BD: tl.constexpr, BF: tl.constexpr, BK: tl.constexpr, PREC: tl.constexpr,
):
    """``dw[e] = x[rows of e]^T @ dy[rows of e]``: grid (E, D/BD, F/BF); empty experts get zeros."""
    e, i_d, i_f = tl.program_id(0), tl.program_id(1), tl.program_id(2)
    r_start = tl.load(offs + e).to(tl.int64)
    r_end = tl.load(offs + e + 1).to(tl.int64)
    cd = i_d * BD + tl.arange(0, BD)
    cf = i_f * BF + tl.arange(0, BF)
    offs_k = tl.arange(0, BK)
    md, mf = cd < D, cf < F
    acc = tl.zeros([BD, BF], dtype=tl.float32)
    for i in range(0, tl.cdiv(r_end - r_start, BK)):
        rows = r_start + i * BK + offs_k
        mr = rows < r_end
        a = tl.load(x + rows[:, None] * D + cd[None, :], mask=mr[:, None] & md[None, :], other=0.0)
        b = tl.load(dy + rows[:, None] * F + cf[None, :], mask=mr[:, None] & mf[None, :], other=0.0)
        acc = tl.dot(tl.trans(a), b, acc, input_precision=PREC)
    tl.store(dw + e.to(tl.int64) * D * F + cd[:, None] * F + cf[None, :],
             acc.to(dw.dtype.element_ty), mask=md[:, None] & mf[None, :])


# ---------------------------------------------------------------------------------------------
# host wrappers
# ---------------------------------------------------------------------------------------------

def _inverse(order: torch.Tensor) -> torch.Tensor:
    inv = torch.empty_like(order)
    inv[order] = torch.arange(order.numel(), device=order.device, dtype=order.dtype)
    return inv


def combine_rows(y_perm: torch.Tensor, inv: torch.Tensor, weight: torch.Tensor | None,
                 num_tokens: int, out_dtype: torch.dtype) -> torch.Tensor:
    """``[M, F]`` sorted rows -> ``[N, F]``: each token's K rows (optionally weighted) summed."""
    M, F = y_perm.shape
    K = M // num_tokens if num_tokens else 0
    out = new_output((num_tokens, F), dtype=out_dtype, device=y_perm.device)
    if num_tokens == 0 or F == 0:
        return out.zero_()
    BF = min(1024, max(16, next_pow2(F)))
    w = weight.contiguous() if weight is not None else inv  # unused when HAS_WEIGHT is False
    moe_combine_kernel[(num_tokens, triton.cdiv(F, BF))](
        y_perm.contiguous(), inv, w, out, K, F, HAS_WEIGHT=weight is not None, BF=BF, num_warps=4)
    return out


def _tile_table(counts: torch.Tensor, BM: int, M: int):
    """Device-side map from program to (expert, first row): no host sync, spare programs get -1."""
    E = counts.numel()
    offs = torch.zeros(E + 1, dtype=torch.int64, device=counts.device)
    offs[1:] = counts.cumsum(0)
    tiles = (counts + BM - 1) // BM
    cum = tiles.cumsum(0)
    num_programs = triton.cdiv(M, BM) + E  # upper bound on sum(tiles)
    t = torch.arange(num_programs, device=counts.device)
    e = torch.searchsorted(cum, t, right=True)
    ec = e.clamp(max=E - 1)
    row0 = offs[ec] + (t - (cum[ec] - tiles[ec])) * BM
    tile_expert = torch.where(e < E, ec, torch.full_like(ec, -1)).to(torch.int32)
    return tile_expert, row0, offs


def _gmm_cfg(dtype: torch.dtype) -> dict:
    if interpreting():
        return dict(BM=16, BN=32, BK=32, num_warps=4, num_stages=1)
    if dtype == torch.float32:
        return dict(BM=64, BN=64, BK=32, num_warps=4, num_stages=3)
    return dict(BM=128, BN=128, BK=64, num_warps=8, num_stages=3)


def _grouped_mm_triton(x: torch.Tensor, w: torch.Tensor, counts: torch.Tensor) -> torch.Tensor:
    """``x [M, D]`` @ per-expert ``w [E, D, F]`` (any strides) -> ``[M, F]`` in x.dtype."""
    M, D = x.shape
    F = w.shape[-1]
    y = new_output((M, F), dtype=x.dtype, device=x.device)
    if M == 0:
        return y
    cfg = _gmm_cfg(x.dtype)
    tile_expert, row0, offs = _tile_table(counts, cfg["BM"], M)
    grid = (tile_expert.numel(), triton.cdiv(F, cfg["BN"]))
    grouped_mm_kernel[grid](x.contiguous(), w, y, tile_expert, row0, offs[1:], D, F,
                            w.stride(0), w.stride(1), w.stride(2), PREC=dot_precision(x.dtype),
                            **cfg)
    return y


def _grouped_mm_dw_triton(x: torch.Tensor, dy: torch.Tensor, counts: torch.Tensor) -> torch.Tensor:
    """Per-expert ``x_e^T dy_e`` -> ``[E, D, F]`` fp32."""
    D, F, E = x.shape[1], dy.shape[-1], counts.numel()
    dw = new_output((E, D, F), dtype=torch.float32, device=x.device)
    offs = torch.zeros(E + 1, dtype=torch.int64, device=x.device)
    offs[1:] = counts.cumsum(0)
    BD, BF, BK = (32, 32, 16) if interpreting() else (64, 64, 64)
    grid = (E, triton.cdiv(D, BD), triton.cdiv(F, BF))
    grouped_mm_dw_kernel[grid](x.contiguous(), dy.contiguous(), dw, offs, D, F, BD=BD, BF=BF, BK=BK,
                               PREC=dot_precision(x.dtype), num_warps=4)
    return dw


def _torch_grouped_mm_ok(x: torch.Tensor, w: torch.Tensor) -> bool:
    """Whether ``torch._grouped_mm`` takes these operands (CUTLASS path: Hopper+, half, aligned)."""
    return (hasattr(torch, "_grouped_mm") and x.is_cuda and x.dtype == torch.bfloat16
            and w.dtype == x.dtype and torch.cuda.get_device_capability(x.device) >= (9, 0)
            and (x.shape[1] * x.element_size()) % 16 == 0
            and (w.shape[-1] * w.element_size()) % 16 == 0)


class _PermuteFunction(torch.autograd.Function):
    """Row gather forward; the backward sums each token's K rows (no atomic scatter)."""

    @staticmethod
    def forward(ctx, x, order, K):
        ctx.save_for_backward(order)
        ctx.num_tokens, ctx.dtype = x.shape[0], x.dtype
        return x[order // K]

    @staticmethod
    @first_order_only
    def backward(ctx, dx_perm):
        (order,) = ctx.saved_tensors
        dx = combine_rows(dx_perm.contiguous(), _inverse(order), None, ctx.num_tokens, ctx.dtype)
        return dx, None, None


class _GroupedMMFunction(torch.autograd.Function):
    """Triton grouped GEMM; ``dx`` reuses it on ``w^T``, ``dw`` is a per-expert reduction."""

    @staticmethod
    def forward(ctx, x, w, counts):
        ctx.save_for_backward(x, w, counts)
        return _grouped_mm_triton(x, w, counts)

    @staticmethod
    @first_order_only
    def backward(ctx, dy):
        x, w, counts = ctx.saved_tensors
        dy = dy.contiguous()
        dx = _grouped_mm_triton(dy, w.transpose(1, 2), counts) if ctx.needs_input_grad[0] else None
        dw = _grouped_mm_dw_triton(x, dy, counts).to(w.dtype) if ctx.needs_input_grad[1] else None
        return dx, dw, None


class MoEUnpermuteFunction(torch.autograd.Function):
    """Weighted gather-combine forward; one Triton pass for ``dy_perm`` and ``d topk_weight``."""

    @staticmethod
    def forward(ctx, y_perm, order, topk_weight):
        inv = _inverse(order)
        ctx.save_for_backward(y_perm, order, topk_weight)
        N, K = topk_weight.shape
        return combine_rows(y_perm, inv, topk_weight.reshape(-1), N, y_perm.dtype)

    @staticmethod
    @first_order_only
    def backward(ctx, dy):
        y_perm, order, topk_weight = ctx.saved_tensors
        N, K = topk_weight.shape
        M, F = y_perm.shape
        dy_perm = new_output(y_perm.shape, dtype=y_perm.dtype, device=y_perm.device)
        dw = new_output((M,), dtype=topk_weight.dtype, device=y_perm.device)
        if M:
            BF = min(1024, max(16, next_pow2(F)))
            moe_unpermute_bwd_kernel[(M,)](dy.contiguous(), y_perm.contiguous(), order,
                                           topk_weight.contiguous(), dy_perm, dw, K, F, BF=BF,
                                           num_warps=4)
        return dy_perm, None, dw.view(N, K)


def _check_routing(topk_idx: torch.Tensor, num_experts: int) -> None:
    if topk_idx.dim() != 2 or topk_idx.dtype.is_floating_point:
        raise InputError(f"topk_idx must be an integer tensor [N, K], got {topk_idx.dtype} "
                         f"{tuple(topk_idx.shape)}")
    # the range check would cost a host sync on CUDA; there the scatter below asserts instead
    if not topk_idx.is_cuda and topk_idx.numel() and (
            int(topk_idx.min()) < 0 or int(topk_idx.max()) >= num_experts):
        raise InputError(f"topk_idx holds experts outside [0, {num_experts}); check num_experts")


def moe_permute(x: torch.Tensor, topk_idx: torch.Tensor, num_experts: int):
    """Sort routed rows by expert (stable).

    Args:
        x: Tokens ``[N, D]``.
        topk_idx: Chosen experts ``[N, K]`` (integers in ``[0, num_experts)``).
        num_experts: ``E``.

    Returns:
        ``(x_perm [M, D], order [M] int64, counts [E] int64)`` with ``M = N * K``;
        ``order[i]`` is the routed row ``n * K + j`` at sorted position ``i``. ``x`` gets a
        gradient (each token sums its K rows' gradients, in Triton).

    Example:
        >>> x_perm, order, counts = moe_permute(x, topk_idx, 64)
        >>> y = moe_unpermute(grouped_mm(x_perm, w, counts), order, topk_weight)
    """
    _check_routing(topk_idx, num_experts)
    N, K = topk_idx.shape
    if x.dim() != 2 or x.shape[0] != N:
        raise InputError(f"moe_permute wants x [N, D] with one row per row of topk_idx [N, K]; "
                         f"got x {tuple(x.shape)} and topk_idx {tuple(topk_idx.shape)}")
    flat = topk_idx.reshape(-1)
    order = torch.argsort(flat, stable=True)
    # scatter_add rather than bincount: bincount syncs with the host to size its output
    counts = torch.zeros(num_experts, dtype=torch.int64, device=flat.device)
    counts.scatter_add_(0, flat.long(), torch.ones_like(flat, dtype=torch.int64))
    if not x.is_cuda and not interpreting():
        return x[order // K], order, counts
    return _PermuteFunction.apply(x, order, K), order, counts


def grouped_mm(x_perm: torch.Tensor, w: torch.Tensor, counts: torch.Tensor, *,
               impl: str = "auto") -> torch.Tensor:
    """Per-expert matmul of rows grouped by expert.

    Args:
        x_perm: ``[M, D]`` rows sorted by expert (``counts[e]`` rows of expert ``e`` in turn).
        w: Expert weights ``[E, D, F]``.
        counts: Rows per expert ``[E]`` (sum == M).
        impl: ``"auto"`` (``torch._grouped_mm`` on CUDA bf16 with compute capability >= 9.0,
            else Triton), ``"triton"`` or ``"torch"``.

    Returns:
        ``[M, F]`` in ``x_perm.dtype``; gradients flow to ``x_perm`` and ``w``.

    Example:
        >>> y_perm = grouped_mm(x_perm, w, counts)  # [M, D] x [E, D, F] -> [M, F]
    """
    if x_perm.dim() != 2 or w.dim() != 3 or w.shape[1] != x_perm.shape[1]:
        raise InputError(f"grouped_mm wants x_perm [M, D] and w [E, D, F]; got "
                         f"{tuple(x_perm.shape)} and {tuple(w.shape)}")
    if counts.numel() != w.shape[0]:
        raise InputError(f"counts has {counts.numel()} experts but w has {w.shape[0]}")
    if x_perm.dtype != w.dtype:
        raise InputError(f"x_perm and w must share a dtype; got {x_perm.dtype} and {w.dtype}")
    # rows past sum(counts) would be left unwritten, and counts past M read out of bounds
    if counts.is_cuda:  # no host sync: a device-side assert
        torch._assert_async(counts.sum() == x_perm.shape[0])
    elif int(counts.sum()) != x_perm.shape[0] or (counts.numel() and int(counts.min()) < 0):
        raise InputError(f"counts must be non-negative and sum to the {x_perm.shape[0]} rows of "
                         f"x_perm; they sum to {int(counts.sum())}")
    if impl not in ("auto", "triton", "torch"):
        raise InputError(f"impl must be 'auto', 'triton' or 'torch', got {impl!r}")
    use_torch = impl == "torch" or (impl == "auto" and _torch_grouped_mm_ok(x_perm, w))
    if use_torch:
        offs = counts.cumsum(0).to(torch.int32)
        return torch._grouped_mm(x_perm, w, offs=offs)
    if not x_perm.is_cuda and not interpreting():
        return ref.grouped_mm_reference(x_perm, w, counts)
    return _GroupedMMFunction.apply(x_perm, w, counts)


def moe_unpermute(y_perm: torch.Tensor, order: torch.Tensor,
                  topk_weight: torch.Tensor) -> torch.Tensor:
    """Scatter sorted rows back to tokens and combine them with the routing weights.

    Args:
        y_perm: ``[M, F]`` expert outputs in sorted order.
        order: ``[M]`` from :func:`moe_permute`.
        topk_weight: ``[N, K]`` routing weights.

    Returns:
        ``y [N, F]`` in ``y_perm.dtype`` (fp32 accumulation); gradients flow to ``y_perm`` and
        ``topk_weight``.

    Example:
        >>> y = moe_unpermute(y_perm, order, topk_weight)  # [N*K, F] -> [N, F]
    """
    if topk_weight.dim() != 2:
        raise InputError(f"topk_weight must be [N, K]; got {tuple(topk_weight.shape)}")
    N, K = topk_weight.shape
    order = order.contiguous()  # the backward kernel reads it with stride 1
    if y_perm.dim() != 2 or y_perm.shape[0] != N * K or order.numel() != N * K:
        raise InputError(f"moe_unpermute wants y_perm [N*K, F] and order [N*K] for topk_weight "
                         f"{tuple(topk_weight.shape)}; got {tuple(y_perm.shape)}, "
                         f"{tuple(order.shape)}")
    if not y_perm.is_cuda and not interpreting():
        return ref.moe_unpermute(y_perm, order, topk_weight)
    return MoEUnpermuteFunction.apply(y_perm, order, topk_weight)
