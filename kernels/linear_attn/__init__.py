"""Chunked linear attention (elu+1 feature map): Triton kernel and its PyTorch reference."""

from genoctx.kernels.linear_attn.linear_attn import linear_attn

__all__ = ["linear_attn"]
