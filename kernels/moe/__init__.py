"""MoE dispatch (permute, grouped matmul, un-permute): Triton kernels and the PyTorch reference."""

from genoctx.kernels.moe.moe import grouped_mm, moe_permute, moe_unpermute

__all__ = ["grouped_mm", "moe_permute", "moe_unpermute"]
