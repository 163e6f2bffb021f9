"""Hybrid local + linear attention: fused Triton kernel (:func:`hybrid_attn`) and reference."""

from genoctx.kernels.hybrid.hybrid import hybrid_attn

__all__ = ["hybrid_attn"]
