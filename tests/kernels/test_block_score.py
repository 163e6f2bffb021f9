"""Triton block pooling / banded scores / top-k (interpreter) against the PyTorch reference:
indices must be identical on random continuous inputs, scores and means equal to fp32 rounding."""

import pytest
import torch

from genoctx.errors import InputError
from genoctx.kernels.block_score import block_topk, pool_blocks
from genoctx.kernels.block_score import reference as ref
from genoctx.kernels.block_score.block_score import banded_scores


def rand(*shape, seed, dtype=torch.float32):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed)).to(dtype)


@pytest.mark.parametrize("T,block_size,D,dtype", [(333, 16, 32, torch.float32),
                                                  (511, 100, 48, torch.float16),
                                                  (64, 64, 16, torch.float32),
                                                  (130, 1000, 64, torch.float32)])
def test_pool_blocks_matches_reference(T, block_size, D, dtype):
    x = rand(2, T, 3, D, seed=T, dtype=dtype)
    out = pool_blocks(x, block_size)
    expected = ref.pool_blocks(x, block_size)
    assert out.shape == expected.shape and out.dtype == torch.float32
    torch.testing.assert_close(out, expected, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("NB,W,causal", [(40, 40, True), (40, 40, False), (70, 5, True),
                                         (70, 5, False), (3, 8, False), (1, 1, True)])
def test_banded_scores_match_gathered_scores(NB, W, causal):
    qbar, kbar = rand(1, 2, NB, 32, seed=NB), rand(1, 2, NB, 32, seed=NB + 1)
    s = banded_scores(qbar, kbar, W, causal, 0.25)
    cand, valid = ref.candidate_blocks(NB, causal, W)
    expected = torch.einsum("bhnd,bhnwd->bhnw", qbar, kbar[:, :, cand]) * 0.25
    expected = expected.masked_fill(~valid, float("-inf"))
    assert torch.equal(torch.isinf(s), torch.isinf(expected))
    torch.testing.assert_close(s[~torch.isinf(s)], expected[~torch.isinf(expected)])


CASES = [  # B, T, H, D, block_size, top_k, causal, window_blocks, with_num_selected
    (1, 333, 2, 32, 16, 4, True, None, False),
    (2, 500, 1, 48, 20, 3, False, 5, True),
    (1, 511, 2, 64, 8, 8, False, None, True),
    (1, 300, 1, 32, 10, 40, True, 3, False),  # top_k > candidates: padded with -1 / -inf
    (1, 50, 1, 16, 64, 2, True, None, False),  # one block: no candidate at all
    (1, 480, 3, 32, 32, 5, True, 100, True),   # window wider than the sequence
]


@pytest.mark.parametrize("B,T,H,D,bs,K,causal,W,with_nsel", CASES)
@pytest.mark.parametrize("dtype", [torch.float32, torch.float16])
def test_block_topk_matches_reference(B, T, H, D, bs, K, causal, W, with_nsel, dtype):
    q, k = rand(B, T, H, D, seed=T, dtype=dtype), rand(B, T, H, D, seed=T + 1, dtype=dtype)
    NB = (T + bs - 1) // bs
    nsel = torch.randint(0, K + 1, (B, H, NB), generator=torch.Generator().manual_seed(1))
    kw = dict(block_size=bs, top_k=K, causal=causal, window_blocks=W,
              num_selected=nsel if with_nsel else None)
    idx, s = block_topk(q, k, **kw)
    idx_ref, s_ref = ref.block_topk_reference(q, k, **kw)
    assert idx.dtype == torch.int64 and idx.shape == (B, H, NB, K)
    assert torch.equal(idx, idx_ref)
    assert torch.equal(torch.isinf(s), torch.isinf(s_ref))
    torch.testing.assert_close(s[torch.isfinite(s)], s_ref[torch.isfinite(s_ref)])


def test_custom_scale_keeps_order_and_scales_scores():
    q, k = rand(1, 256, 1, 32, seed=2), rand(1, 256, 1, 32, seed=3)
    i1, s1 = block_topk(q, k, block_size=16, top_k=4)
    i2, s2 = block_topk(q, k, block_size=16, top_k=4, scale=1.0)
    assert torch.equal(i1, i2)
    fin = torch.isfinite(s1)
    torch.testing.assert_close(s2[fin] * 32 ** -0.5, s1[fin])


def test_no_gradient_through_selection():
    q = rand(1, 128, 1, 16, seed=4).requires_grad_()
    idx, s = block_topk(q, q, block_size=16, top_k=2)
    assert not s.requires_grad and not idx.requires_grad


def test_user_errors():
    q = torch.randn(1, 32, 1, 16)
    with pytest.raises(InputError, match="one shape"):
        block_topk(q, torch.randn(1, 33, 1, 16), block_size=8, top_k=2)
    with pytest.raises(InputError, match="block_size"):
        block_topk(q, q, block_size=0, top_k=2)
