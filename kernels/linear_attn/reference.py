"""Reference chunked linear attention with the elu+1 feature map (pure PyTorch, fp32).

Legend: B batch, T tokens, H heads, D key dim, E value dim, C chunk size.

What is computed, exactly. With the positive feature map ``phi(x) = elu(x) + 1`` applied to
queries and keys,

    S_t = S_0 + sum_{s <= t} phi(k_s) v_s^T        (state, [D, E])
    z_t = z_0 + sum_{s <= t} phi(k_s)              (normaliser, [D])
    o_t = phi(q_t)^T S_t / (phi(q_t)^T z_t + eps)

for ``causal=True``; for ``causal=False`` every position uses the totals ``S_T, z_T``. The state
``(S, z)`` can be passed in (``initial_state``) and returned (``output_final_state``), which is how
segmented inference and context parallelism carry the global context. The chunked form below is
O(T · C · D) time and O(T · D + D · E) memory; :func:`naive_linear_attn` is the quadratic form.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

State = tuple[torch.Tensor, torch.Tensor]  # (S [B, H, D, E], z [B, H, D]), fp32


def feature_map(x: torch.Tensor) -> torch.Tensor:
    """elu(x) + 1: positive, smooth, identity-like for x > 0."""
    return F.elu(x) + 1.0


def linear_attn_reference(
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
    """``q, k: [B, T, H, D]``, ``v: [B, T, H, E]`` -> ``(o [B, T, H, E], final_state | None)``."""
    B, T, H, D = q.shape
    E = v.shape[-1]
    fq, fk, vf = feature_map(q.float()), feature_map(k.float()), v.float()
    if initial_state is None:
        S = q.new_zeros(B, H, D, E, dtype=torch.float32)
        z = q.new_zeros(B, H, D, dtype=torch.float32)
    else:
        S, z = (t.float() for t in initial_state)

    if not causal:
        S = S + torch.einsum("bthd,bthe->bhde", fk, vf)
        z = z + fk.sum(1)
        num = torch.einsum("bthd,bhde->bthe", fq, S)
        den = torch.einsum("bthd,bhd->bth", fq, z)[..., None] + eps
        return (num / den).to(v.dtype), ((S, z) if output_final_state else None)

    out = []
    for c0 in range(0, T, chunk_size):
        qc, kc, vc = fq[:, c0:c0 + chunk_size], fk[:, c0:c0 + chunk_size], vf[:, c0:c0 + chunk_size]
        n = qc.shape[1]
        mask = torch.ones(n, n, dtype=torch.bool, device=q.device).tril()
        a = torch.einsum("bqhd,bkhd->bhqk", qc, kc).masked_fill(~mask, 0.0)  # intra-chunk
        num = torch.einsum("bqhd,bhde->bqhe", qc, S) + torch.einsum("bhqk,bkhe->bqhe", a, vc)
        den = torch.einsum("bqhd,bhd->bqh", qc, z) + a.sum(-1).transpose(1, 2)
        out.append(num / (den[..., None] + eps))
        S = S + torch.einsum("bkhd,bkhe->bhde", kc, vc)
        z = z + kc.sum(1)
    o = torch.cat(out, 1).to(v.dtype)
    return o, ((S, z) if output_final_state else None)


def naive_linear_attn(q, k, v, *, causal=True, eps=1e-6):
    """Quadratic form ``A = phi(q) phi(k)^T`` (masked), ``o = A v / (A 1 + eps)``; for tests."""
    fq, fk = feature_map(q.float()), feature_map(k.float())
    a = torch.einsum("bqhd,bkhd->bhqk", fq, fk)
    if causal:
        T = q.shape[1]
        a = a * torch.ones(T, T, device=q.device).tril()
    num = torch.einsum("bhqk,bkhe->bqhe", a, v.float())
    den = a.sum(-1).transpose(1, 2)[..., None] + eps
    return (num / den).to(v.dtype)
