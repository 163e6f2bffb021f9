"""Reference hybrid attention: gated mix of block-local softmax and global linear attention.

Legend: B batch, T tokens, H heads, D head dim.

What is computed, exactly::

    o = gate * local_attn(q, k, v) + (1 - gate) * linear_attn(q, k, v)

with ``gate: [B, T, H]`` in (0, 1) (the model's sigmoid gate), the local part as in
:mod:`local_attn` (including any ``extra_blocks`` chosen by :mod:`block_score`), and the linear
part as in :mod:`linear_attn` (elu+1 feature map; ``initial_state`` / ``output_final_state``
carry its state). Both branches read the same (rotary-encoded) ``q`` and ``k``.
"""

from __future__ import annotations

import torch

from genoctx.kernels.linear_attn.reference import State, linear_attn_reference
from genoctx.kernels.local_attn.reference import local_attn_reference


def hybrid_attn_reference(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    gate: torch.Tensor,
    *,
    block_size: int,
    causal: bool = True,
    extra_blocks: torch.Tensor | None = None,
    initial_state: State | None = None,
    output_final_state: bool = False,
    scale: float | None = None,
) -> tuple[torch.Tensor, State | None]:
    """``q, k, v: [B, T, H, D]``, ``gate: [B, T, H]`` -> ``(o [B, T, H, D], state | None)``."""
    o_local = local_attn_reference(q, k, v, block_size=block_size, causal=causal,
                                   extra_blocks=extra_blocks, scale=scale).float()
    o_lin, state = linear_attn_reference(q, k, v, causal=causal, initial_state=initial_state,
                                         output_final_state=output_final_state)
    g = gate.float()[..., None]
    return (g * o_local + (1 - g) * o_lin.float()).to(q.dtype), state
