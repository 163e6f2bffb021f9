"""Mixture-of-experts feed-forward: fp32 softmax router, top-k, dropless grouped SwiGLU experts.

Legend: N tokens (B·T flattened), D d_model, E experts, K experts per token, F expert hidden
size, M = N·K routed rows.

Routing: ``p = softmax(x W_r)`` in fp32 over all E experts; each token keeps its top K and their
probabilities renormalised to sum to 1. Dispatch is dropless: every routed row is computed.
Rows are sorted by expert (``moe_permute``), each expert's contiguous rows go through one
grouped matmul (``torch._grouped_mm`` where the device and dtype support it, else the loop of
``grouped_mm_reference``), and ``moe_unpermute`` weights and sums them back per token.

Losses (set on the module after each forward): the Switch load-balancing loss
``E · Σ_e f_e · P_e`` (``f_e`` fraction of routed rows sent to e, ``P_e`` mean router probability)
and the router z-loss ``mean(logsumexp(x W_r)²)``.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass

import torch
import torch.nn as nn
import torch.nn.functional as F

from genoctx.kernels.moe.reference import grouped_mm_reference, moe_permute, moe_unpermute
from genoctx.model.attention import check_backend, triton_op
from genoctx.model.config import ModelConfig

CPU_CHUNK_BYTES = 16 << 20  # largest routed-row temporary in CPU inference (gate ‖ up rows)


@functools.lru_cache(maxsize=64)
def _torch_grouped_mm_works(device_type: str, dtype: torch.dtype, d_in: int, d_out: int) -> bool:
    """Probe ``torch._grouped_mm`` once per device type, dtype and shape class."""
    if not hasattr(torch, "_grouped_mm"):
        return False
    try:
        dev = torch.device(device_type)
        x = torch.randn(8, d_in, device=dev).to(dtype)
        w = torch.randn(2, d_in, d_out, device=dev).to(dtype)
        counts = torch.tensor([3, 5], device=dev)
        got = torch._grouped_mm(x, w, offs=counts.cumsum(0).to(torch.int32))
        want = grouped_mm_reference(x, w, counts)
        return bool(torch.allclose(got.float(), want.float(), rtol=2e-2, atol=2e-2))
    except (RuntimeError, NotImplementedError, TypeError, ValueError):
        return False


def grouped_mm_torch(x_perm: torch.Tensor, w: torch.Tensor, counts: torch.Tensor) -> torch.Tensor:
    """``grouped_mm_reference`` semantics, through ``torch._grouped_mm`` when it works here.
    Under ``torch.compile`` on the CPU the reference runs: the op's compile-time check takes
    bf16 alone there, though it runs fp32 eagerly."""
    compiling_cpu = x_perm.device.type == "cpu" and torch.compiler.is_compiling()
    if not compiling_cpu and _torch_grouped_mm_works(x_perm.device.type, x_perm.dtype,
                                                     w.shape[1], w.shape[2]):
        offs = counts.cumsum(0).to(torch.int32)
        return torch._grouped_mm(x_perm.contiguous(), w, offs=offs)
    return grouped_mm_reference(x_perm, w, counts)


def moe_permute_fast(x: torch.Tensor, topk_idx: torch.Tensor, num_experts: int):
    """``moe_permute`` (same outputs), gathering rows with ``index_select``."""
    K = topk_idx.shape[1]
    flat = topk_idx.reshape(-1)
    order = torch.argsort(flat, stable=True)
    counts = torch.bincount(flat, minlength=num_experts)
    return x.index_select(0, order // K), order, counts


def moe_unpermute_fast(y_perm: torch.Tensor, order: torch.Tensor,
                       topk_weight: torch.Tensor) -> torch.Tensor:
    """``moe_unpermute``: rows weighted in sorted order, then added onto their tokens.

    Equal to the reference for top-2 (``0 + a + b == a + b``); for larger K the per-token sum
    runs in expert order, a last-bit difference.
    """
    N, K = topk_weight.shape
    w_perm = topk_weight.reshape(-1).index_select(0, order).to(y_perm.dtype)
    out = y_perm.new_zeros(N, y_perm.shape[1])
    return out.index_add_(0, order // K, y_perm * w_perm[:, None])


@dataclass(frozen=True)
class MoEOps:
    permute: Callable
    grouped_mm: Callable
    unpermute: Callable


def moe_ops(backend: str, device: torch.device) -> MoEOps:
    """``reference``: the reference dispatch; ``torch``: the same with gathers instead of
    scatters; both use :func:`grouped_mm_torch`. ``triton``: ``genoctx.kernels.moe``;
    ``auto``: per op, triton on CUDA when it imports, else ``torch``."""
    check_backend(backend)
    if backend == "reference":
        return MoEOps(moe_permute, grouped_mm_torch, moe_unpermute)
    ops = {"permute": moe_permute_fast, "grouped_mm": grouped_mm_torch,
           "unpermute": moe_unpermute_fast}
    if backend == "torch":
        return MoEOps(**ops)
    for op, name in (("permute", "moe_permute"), ("grouped_mm", "grouped_mm"),
                     ("unpermute", "moe_unpermute")):
        fn = triton_op("moe", name)
        if backend == "triton" and fn is None:
            raise ValueError(f"backend 'triton' needs genoctx.kernels.moe.{name}, which is not "
                             f"available here; use backend 'auto' or 'torch'")
        if fn is not None and (backend == "triton" or torch.device(device).type == "cuda"):
            ops[op] = fn
    return MoEOps(**ops)


class SwiGLU(nn.Module):
    """Dense SwiGLU feed-forward ``x -> W_down(silu(x W_gate) * x W_up)`` (the shared expert)."""

    def __init__(self, d_model: int, hidden: int):
        super().__init__()
        self.w_gate_up = nn.Linear(d_model, 2 * hidden, bias=False)
        self.w_down = nn.Linear(hidden, d_model, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        gate, up = self.w_gate_up(x).chunk(2, dim=-1)
        return self.w_down(F.silu(gate) * up)


class MoE(nn.Module):
    """``x_BTD -> y_BTD``. After each forward: ``aux_loss``, ``z_loss`` and :attr:`stats`."""

    def __init__(self, cfg: ModelConfig):
        super().__init__()
        self.cfg = cfg
        D, E, Fh = cfg.d_model, cfg.num_experts, cfg.expert_dim
        self.router = nn.Linear(D, E, bias=False)
        self.w_gate_up = nn.Parameter(torch.empty(E, D, 2 * Fh))  # [E, D, 2F]: gate ‖ up
        self.w_down = nn.Parameter(torch.empty(E, Fh, D))
        self.shared = SwiGLU(D, cfg.shared_expert_dim) if cfg.shared_expert_dim else None
        self._aux_loss = torch.zeros((), device="cpu")  # explicit: modules may be built on meta
        self._z_loss = torch.zeros((), device="cpu")
        self._counts: torch.Tensor | None = None
        self._logits: torch.Tensor | None = None  # of a no-grad forward, until its losses are read
        self._entropy: torch.Tensor | None = None

    def route(self, x_ND: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """``(logits_NE fp32, weights_NK, experts_NK)``: renormalised top-k of the softmax."""
        logits = F.linear(x_ND.float(), self.router.weight.float())
        probs = logits.softmax(-1)
        w_NK, idx_NK = probs.topk(self.cfg.top_k, dim=-1)
        return logits, w_NK / w_NK.sum(-1, keepdim=True), idx_NK

    def forward(self, x_BTD: torch.Tensor, *, ops: MoEOps) -> torch.Tensor:
        B, T, D = x_BTD.shape
        x_ND = x_BTD.reshape(B * T, D)
        logits, w_NK, idx_NK = self.route(x_ND)
        N, step = B * T, B * T
        if x_ND.device.type == "cpu" and not torch.is_grad_enabled():
            # glibc maps blocks over 32 MB afresh on every allocation and each first touch of a
            # page faults; chunks keep the routed-row temporaries under that size (rows are
            # independent, so the result is the same).
            step = max(1, CPU_CHUNK_BYTES // (4 * self.cfg.top_k * 2 * self.cfg.expert_dim))
        y = torch.cat([self._experts(x_ND[i:i + step], w_NK[i:i + step], idx_NK[i:i + step], ops)
                       for i in range(0, N, step)])
        if self.shared is not None:
            y = y + self.shared(x_ND)
        if not x_ND.is_meta:  # the counts depend on the values
            self._losses(logits, torch.bincount(idx_NK.flatten(),
                                                minlength=self.cfg.num_experts))
        return y.view(B, T, D).to(x_BTD.dtype)

    def _experts(self, x_ND, w_NK, idx_NK, ops: MoEOps) -> torch.Tensor:
        """Dropless dispatch of ``x_ND`` to its routed experts and back: ``[N, D] -> [N, D]``.

        On the meta device (shapes only: the full-size configs) every routed row goes through
        one expert's weights, which has the dispatch's shapes and FLOPs (top_k expert passes
        per token) without the value-dependent grouping."""
        if x_ND.is_meta:
            K = idx_NK.shape[1]
            gate, up = (x_ND.repeat_interleave(K, 0) @ self.w_gate_up[0]).chunk(2, dim=-1)
            y_perm = (F.silu(gate) * up) @ self.w_down[0]
            return (y_perm.view(-1, K, y_perm.shape[-1]) * w_NK[..., None]).sum(1)
        x_perm, order, counts = ops.permute(x_ND, idx_NK, self.cfg.num_experts)
        gate, up = ops.grouped_mm(x_perm, self.w_gate_up, counts).chunk(2, dim=-1)
        y_perm = ops.grouped_mm(F.silu(gate).mul_(up), self.w_down, counts)
        return ops.unpermute(y_perm, order, w_NK.to(y_perm.dtype))

    def _losses(self, logits: torch.Tensor, counts: torch.Tensor) -> None:
        self._counts = counts.detach()
        self._logits = logits
        if torch.is_grad_enabled():
            self._set_losses()
        # else (inference, which never reads them): computed on first use, 1–2% of the
        # embedded model's CPU time saved

    def _set_losses(self) -> None:
        logits, self._logits = self._logits, None
        if logits is None:
            return
        N, E = logits.shape
        logp = logits.log_softmax(-1)
        probs = logp.exp()
        frac = self._counts.float() / max(1, N * self.cfg.top_k)
        self._aux_loss = E * (frac * probs.mean(0)).sum()
        self._z_loss = torch.logsumexp(logits, -1).square().mean()
        self._entropy = -(probs * logp).sum(-1).mean().detach()

    @property
    def aux_loss(self) -> torch.Tensor:
        """The Switch load-balancing loss of the last forward."""
        self._set_losses()
        return self._aux_loss

    @property
    def z_loss(self) -> torch.Tensor:
        """The router z-loss of the last forward."""
        self._set_losses()
        return self._z_loss

    @property
    def stats(self) -> dict:
        """Routing of the last forward: tokens per expert, mean router entropy (nats), dropped."""
        if self._counts is None:
            return {}
        self._set_losses()
        counts = self._counts.cpu().tolist()
        return {"tokens_per_expert": counts, "entropy": float(self._entropy),
                "max_entropy": float(torch.log(torch.tensor(float(len(counts))))),
                "dropped": 0}
