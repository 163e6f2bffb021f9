"""Helpers for the model tests: small configurations (block size 128 is the smallest allowed)."""

import torch

from genoctx.model.config import ModelConfig


def small_config(**overrides) -> ModelConfig:
    """Two layers, grouped kv heads, a shared expert and top-k far blocks: every code path."""
    base = dict(name="test", d_model=32, num_layers=2, num_heads=4, num_kv_heads=2, head_dim=8,
                block_size=128, top_k_blocks=2, topk_window_blocks=3, num_experts=4, top_k=2,
                expert_dim=16, shared_expert_dim=8)
    return ModelConfig(**(base | overrides))


def random_tokens(B: int, T: int, seed: int = 0) -> torch.Tensor:
    """Bases A, C, G, T, N (ids 4..8)."""
    g = torch.Generator().manual_seed(seed)
    return torch.randint(4, 9, (B, T), generator=g)
