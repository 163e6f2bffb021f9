"""Reference MoE dispatch: permute tokens by expert, grouped matmul, un-permute and combine.

Legend: N tokens, K experts per token (top-k), E experts, D input dim, F output dim,
M = N * K routed rows.

Routed row ``r = n * K + j`` is token ``n``'s ``j``-th choice. :func:`moe_permute` sorts the rows
by expert (stable, so rows of one expert keep token order) and returns the permutation; each
expert's rows are then contiguous, ``counts[e]`` of them, which is what a grouped matmul needs.
"""

from __future__ import annotations

import torch


def moe_permute(x: torch.Tensor, topk_idx: torch.Tensor, num_experts: int):
    """``x: [N, D]``, ``topk_idx: [N, K]`` -> ``(x_perm [M, D], order [M], counts [E])``.

    ``order[i]`` is the routed row (``n * K + j``) placed at sorted position ``i``.
    """
    N, K = topk_idx.shape
    flat = topk_idx.reshape(-1)
    order = torch.argsort(flat, stable=True)
    counts = torch.bincount(flat, minlength=num_experts)
    return x[order // K], order, counts


def grouped_mm_reference(x_perm: torch.Tensor, w: torch.Tensor, counts: torch.Tensor) -> torch.Tensor:
    """``x_perm: [M, D]`` grouped by expert, ``w: [E, D, F]`` -> ``[M, F]`` (a loop over experts)."""
    out = x_perm.new_empty(x_perm.shape[0], w.shape[-1])
    start = 0
    for e, c in enumerate(counts.tolist()):
        if c:
            out[start:start + c] = x_perm[start:start + c] @ w[e]
        start += c
    return out


def moe_unpermute(y_perm: torch.Tensor, order: torch.Tensor, topk_weight: torch.Tensor) -> torch.Tensor:
    """``y_perm: [M, F]`` in sorted order -> ``[N, F]``: each token's rows weighted and summed."""
    N, K = topk_weight.shape
    y = torch.empty_like(y_perm)
    y[order] = y_perm
    return (y.view(N, K, -1) * topk_weight[..., None].to(y.dtype)).sum(1)
