"""Rotary position embedding on absolute positions (segments pass their start offset).

Legend: B batch, T tokens, H heads, hd head dim.

Channel pairs ``(x[2i], x[2i+1])`` of each head are rotated by the angle ``pos · θ^(-2i/hd)``,
i.e. multiplied as complex numbers by ``exp(i · angle)`` (the interleaved layout, one complex
multiply per element). Angles are computed in float64: at position ~10^6 a float32 product
``pos · freq`` is off by up to ~0.06 rad, which would blur exactly the fine frequencies that
megabase contexts need.
"""

from __future__ import annotations

import torch


def rope_freqs(start: int, length: int, head_dim: int, theta: float,
               device: torch.device | str | None = None) -> torch.Tensor:
    """``exp(i · pos · θ^(-2i/hd))`` as complex64 ``[length, head_dim // 2]`` for ``start ..``."""
    # float64 is slow or missing on some accelerators; the table is small, so build it on the CPU.
    pos = torch.arange(start, start + length, dtype=torch.float64)
    inv_freq = theta ** (-torch.arange(0, head_dim, 2, dtype=torch.float64) / head_dim)
    ang = pos[:, None] * inv_freq[None, :]
    return torch.polar(torch.ones_like(ang), ang).to(torch.complex64).to(device)


def apply_rope(x_BTHd: torch.Tensor, freqs: torch.Tensor) -> torch.Tensor:
    """Rotate ``x: [B, T, H, hd]`` by ``freqs: [T, hd/2]``; same layout and dtype as ``x``."""
    xc = torch.view_as_complex(x_BTHd.float().reshape(*x_BTHd.shape[:-1], -1, 2))
    return torch.view_as_real(xc * freqs[None, :, None, :]).flatten(-2).to(x_BTHd.dtype)


def rope_heads_first(x_BTHd: torch.Tensor, freqs: torch.Tensor) -> torch.Tensor:
    """:func:`apply_rope`, written straight into a heads-first ``[B, H, T, hd]`` tensor.

    Fusing the rotation with the transpose saves a full pass over q and k per layer.
    """
    B, T, H, hd = x_BTHd.shape
    if x_BTHd.dtype != torch.float32 or (x_BTHd.requires_grad and torch.is_grad_enabled()):
        return apply_rope(x_BTHd, freqs).transpose(1, 2).contiguous()  # out= has no autograd
    xc = torch.view_as_complex(x_BTHd.reshape(B, T, H, hd // 2, 2))
    out = torch.empty(B, H, T, hd // 2, dtype=torch.complex64, device=x_BTHd.device)
    torch.mul(xc, freqs[None, :, None, :], out=out.transpose(1, 2))
    return torch.view_as_real(out).flatten(-2)
