"""Reference block-local softmax attention with a neighbour-block halo (pure PyTorch, fp32).

Legend: B batch, T tokens, H heads, D head dim, NB number of blocks, BS block size,
S key blocks per query block, K extra (top-k) key blocks.

What is computed, exactly. Positions are cut into blocks of ``block_size`` (the last block may be
short). A query in block ``i`` attends, with one softmax, to the keys of

* its own block and the block before it (``causal=True``; keys after the query are masked), or
  the block before, its own and the block after (``causal=False``), so no position is blind at a
  block edge; and
* the extra key blocks listed in ``extra_blocks[b, h, i, :]`` (from :mod:`block_score`). An entry
  is ignored when it is ``-1``, out of range, inside the local window above, or (causal) later
  than block ``i``. Valid entries of one row must be distinct.

Scores are ``scale * q·k`` with ``scale = D ** -0.5`` unless given. A query that sees no key
(impossible with the halo, kept for safety) gets a zero output.
"""

from __future__ import annotations

import torch


def local_window_blocks(num_blocks: int, causal: bool, device=None) -> torch.Tensor:
    """Key-block index of each local slot per query block: ``[NB, S_local]`` (may be out of range)."""
    i = torch.arange(num_blocks, device=device)[:, None]
    offsets = torch.tensor([-1, 0] if causal else [-1, 0, 1], device=device)[None, :]
    return i + offsets


def local_attn_reference(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    *,
    block_size: int,
    causal: bool = True,
    extra_blocks: torch.Tensor | None = None,
    scale: float | None = None,
) -> torch.Tensor:
    """Block-local attention. ``q, k, v: [B, T, H, D]``, ``extra_blocks: [B, H, NB, K]`` (int).

    Returns ``o: [B, T, H, D]`` in ``q.dtype`` (computed in fp32). Memory is O(T · S · BS),
    never T × T.
    """
    B, T, H, D = q.shape
    BS = block_size
    NB = (T + BS - 1) // BS
    scale = D ** -0.5 if scale is None else scale
    dev = q.device
    pad = NB * BS - T

    def blocks(x):  # [B, T, H, D] -> [B, H, NB, BS, D]
        x = torch.nn.functional.pad(x.float(), (0, 0, 0, 0, 0, pad))
        return x.view(B, NB, BS, H, -1).permute(0, 3, 1, 2, 4)

    q_b, k_b, v_b = blocks(q), blocks(k), blocks(v)

    local = local_window_blocks(NB, causal, dev).expand(B, H, NB, -1)  # [B, H, NB, S_local]
    if extra_blocks is not None and extra_blocks.shape[-1] > 0:
        extra = extra_blocks.to(dev).long()
        i = torch.arange(NB, device=dev)[None, None, :, None]
        in_local = (extra >= i - 1) & (extra <= (i if causal else i + 1))
        bad = (extra < 0) | (extra >= NB) | in_local
        if causal:
            bad |= extra > i
        extra = torch.where(bad, torch.full_like(extra, -1), extra)
        key_blocks = torch.cat([local, extra], dim=-1)  # [B, H, NB, S]
    else:
        key_blocks = local
    S = key_blocks.shape[-1]
    block_ok = (key_blocks >= 0) & (key_blocks < NB)
    idx = key_blocks.clamp(0, NB - 1)

    k_g = _gather_blocks(k_b, idx)  # [B, H, NB, S*BS, D]
    v_g = _gather_blocks(v_b, idx)

    q_pos = torch.arange(NB * BS, device=dev).view(NB, BS)  # [NB, BS]
    k_pos = (idx[..., None] * BS + torch.arange(BS, device=dev)).reshape(B, H, NB, S * BS)
    mask = block_ok[..., None].expand(B, H, NB, S, BS).reshape(B, H, NB, S * BS)
    mask = mask & (k_pos < T)
    mask = mask[..., None, :] & torch.ones(BS, 1, dtype=torch.bool, device=dev)  # [B,H,NB,BS,S*BS]
    if causal:
        mask = mask & (k_pos[..., None, :] <= q_pos[None, None, :, :, None])

    scores = torch.einsum("bhnqd,bhnkd->bhnqk", q_b, k_g) * scale
    scores = scores.masked_fill(~mask, float("-inf"))
    p = torch.softmax(scores, dim=-1).nan_to_num(0.0)  # rows with no key -> 0
    o = torch.einsum("bhnqk,bhnkd->bhnqd", p, v_g)
    o = o.permute(0, 2, 3, 1, 4).reshape(B, NB * BS, H, -1)[:, :T]
    return o.to(q.dtype)


def _gather_blocks(x_b: torch.Tensor, idx: torch.Tensor) -> torch.Tensor:
    """``x_b: [B, H, NB, BS, D]``, ``idx: [B, H, NB, S]`` -> ``[B, H, NB, S*BS, D]``."""
    B, H, NB, BS, D = x_b.shape
    S = idx.shape[-1]
    flat = x_b.reshape(B, H, NB, BS * D)
    g = torch.gather(flat, 2, idx.reshape(B, H, NB * S, 1).expand(B, H, NB * S, BS * D))
    return g.view(B, H, NB, S * BS, D)


def naive_local_attn(q, k, v, *, block_size, causal=True, extra_blocks=None, scale=None):
    """O(T²) masked dense attention with the same mask; for tests only."""
    B, T, H, D = q.shape
    scale = D ** -0.5 if scale is None else scale
    qb = torch.arange(T) // block_size
    allowed = (qb[:, None] - qb[None, :]).abs() <= 1
    allowed = allowed[None, None].expand(B, H, T, T).clone()
    if extra_blocks is not None:
        for b in range(B):
            for h in range(H):
                for i in range(extra_blocks.shape[2]):
                    for j in extra_blocks[b, h, i].tolist():
                        if j < 0:
                            continue
                        allowed[b, h, qb == i, :] |= (qb == j)[None, :]
    if causal:
        allowed &= torch.ones(T, T, dtype=torch.bool).tril()
    s = torch.einsum("bqhd,bkhd->bhqk", q.float(), k.float()) * scale
    s = s.masked_fill(~allowed, float("-inf"))
    p = torch.softmax(s, -1).nan_to_num(0.0)
    return torch.einsum("bhqk,bkhd->bqhd", p, v.float()).to(q.dtype)
