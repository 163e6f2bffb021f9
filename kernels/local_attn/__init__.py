"""Block-local softmax attention: Triton kernel (:func:`local_attn`) and PyTorch reference."""

from genoctx.kernels.local_attn.local_attn import local_attn

__all__ = ["local_attn"]
