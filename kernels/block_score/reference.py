"""Reference pooled-key block scores and top-k key-block selection (pure PyTorch, fp32).

Legend: B batch, T tokens, H heads, D head dim, NB blocks, W window (candidate blocks), K top-k.

What is computed, exactly. Queries and keys are mean-pooled over the valid positions of each
block: ``qbar_i, kbar_j: [D]``. The score of key block ``j`` for query block ``i`` is
``scale * qbar_i · kbar_j`` (``scale = D ** -0.5``). Candidates exclude the local window used by
:mod:`local_attn` (blocks ``i-1, i`` causal; ``i-1, i, i+1`` bidirectional), exclude future
blocks when causal, and, with ``window_blocks = W``, are limited to the ``W`` nearest blocks
beyond that window on each allowed side (``i-1-W <= j <= i-2``, and ``i+2 <= j <= i+1+W`` when
bidirectional). The top ``K`` candidates by score are returned in descending order; slots
without a candidate, and slots ``>= num_selected[b, h, i]`` when given, hold ``-1``. This is the
cheap score (O(NB · W · D)) that the dynamic gate uses to pick which far blocks get exact
softmax attention.
"""

from __future__ import annotations

import torch


def pool_blocks(x: torch.Tensor, block_size: int) -> torch.Tensor:
    """Mean over the valid positions of each block: ``[B, T, H, D] -> [B, H, NB, D]`` (fp32)."""
    B, T, H, D = x.shape
    NB = (T + block_size - 1) // block_size
    pad = NB * block_size - T
    xs = torch.nn.functional.pad(x.float(), (0, 0, 0, 0, 0, pad)).view(B, NB, block_size, H, D)
    counts = torch.full((NB,), float(block_size), device=x.device)
    if NB:  # T = 0 has no block
        counts[-1] = block_size - pad
    return (xs.sum(2) / counts[None, :, None, None]).permute(0, 2, 1, 3)


def candidate_blocks(num_blocks: int, causal: bool, window_blocks: int | None, device=None):
    """``(cand [NB, W'], valid [NB, W'])``: candidate key blocks of each query block."""
    i = torch.arange(num_blocks, device=device)[:, None]
    W = num_blocks if window_blocks is None else window_blocks
    back = i - 2 - torch.arange(W, device=device)[None, :]  # i-2, i-3, ..., i-1-W
    cand, valid = [back], [back >= 0]
    if not causal:
        fwd = i + 2 + torch.arange(W, device=device)[None, :]
        cand.append(fwd)
        valid.append(fwd < num_blocks)
    cand, valid = torch.cat(cand, 1), torch.cat(valid, 1)
    return cand.clamp(0, num_blocks - 1), valid


def block_topk_reference(
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
    """``q, k: [B, T, H, D]`` -> ``(indices [B, H, NB, K] int64, scores [B, H, NB, K] fp32)``.

    ``num_selected: [B, H, NB]`` (int) caps how many of the K slots each query block keeps.
    Scores of empty slots are ``-inf``.
    """
    B, T, H, D = q.shape
    scale = D ** -0.5 if scale is None else scale
    qbar, kbar = pool_blocks(q, block_size), pool_blocks(k, block_size)  # [B, H, NB, D]
    NB = qbar.shape[2]
    cand, valid = candidate_blocks(NB, causal, window_blocks, q.device)  # [NB, W']
    k_c = kbar[:, :, cand]  # [B, H, NB, W', D]
    s = torch.einsum("bhnd,bhnwd->bhnw", qbar, k_c) * scale
    s = s.masked_fill(~valid, float("-inf"))
    kk = min(top_k, s.shape[-1])
    top_s, top_i = torch.topk(s, kk, dim=-1)  # ties broken by torch; inputs are continuous
    idx = torch.gather(cand.expand(B, H, NB, -1), 3, top_i)
    idx = torch.where(torch.isinf(top_s), torch.full_like(idx, -1), idx)
    if kk < top_k:
        fill = top_k - kk
        idx = torch.cat([idx, idx.new_full((B, H, NB, fill), -1)], -1)
        top_s = torch.cat([top_s, top_s.new_full((B, H, NB, fill), float("-inf"))], -1)
    if num_selected is not None:
        slot = torch.arange(top_k, device=q.device)
        drop = slot >= num_selected.to(q.device)[..., None]
        idx = idx.masked_fill(drop, -1)
        top_s = top_s.masked_fill(drop, float("-inf"))
    return idx, top_s
