"""Pooled block scores and top-k key-block selection: Triton kernels and the PyTorch reference."""

from genoctx.kernels.block_score.block_score import block_topk, pool_blocks

__all__ = ["block_topk", "pool_blocks"]
