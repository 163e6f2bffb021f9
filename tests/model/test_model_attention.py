"""Attention: the kernel references against naive O(n²) forms, the fast path against the
references, the dynamic top-k selection against a naive loop, and causality of the model."""

import pytest
import torch

from genoctx.kernels.block_score.reference import block_topk_reference, pool_blocks
from genoctx.kernels.hybrid.reference import hybrid_attn_reference
from genoctx.kernels.linear_attn.reference import linear_attn_reference, naive_linear_attn
from genoctx.kernels.local_attn.reference import local_attn_reference, naive_local_attn
from genoctx.model.attention import (
    attention_ops,
    block_mean,
    hybrid_attn_blocked,
    linear_attn_chunked,
    local_attn_blocked,
    select_extra_blocks,
)
from genoctx.model.model import GenoCtxModel

from model_testutil import random_tokens, small_config

ATOL = 1e-5


def _qkv(B, T, H, D, seed=0):
    g = torch.Generator().manual_seed(seed)
    return [torch.randn(B, T, H, D, generator=g) for _ in range(3)]


def _random_extra(B, H, NB, K, seed=0):
    """Distinct entries per row in [-1, NB]: empty, out of range, local, future and far blocks."""
    g = torch.Generator().manual_seed(seed)
    rows = [torch.randperm(NB + 2, generator=g)[:K] - 1 for _ in range(B * H * NB)]
    return torch.stack(rows).view(B, H, NB, K)


# ---- the references against their naive forms -----------------------------------------------

@pytest.mark.parametrize("causal", [True, False])
def test_local_reference_matches_naive(causal):
    q, k, v = _qkv(2, 100, 2, 8)
    BS = 16
    idx, _ = block_topk_reference(q, k, block_size=BS, top_k=2, causal=causal, window_blocks=3)
    for extra in (None, idx, _random_extra(2, 2, 7, 3)):
        got = local_attn_reference(q, k, v, block_size=BS, causal=causal, extra_blocks=extra)
        want = naive_local_attn(q, k, v, block_size=BS, causal=causal, extra_blocks=extra)
        torch.testing.assert_close(got, want, atol=ATOL, rtol=0)


@pytest.mark.parametrize("causal", [True, False])
def test_linear_reference_matches_quadratic_form(causal):
    q, k, v = _qkv(2, 150, 3, 8, seed=1)
    got, _ = linear_attn_reference(q, k, v, causal=causal)
    torch.testing.assert_close(got, naive_linear_attn(q, k, v, causal=causal), atol=ATOL, rtol=0)


def test_linear_reference_state_continues_a_sequence():
    q, k, v = _qkv(1, 200, 2, 8, seed=2)
    whole, _ = linear_attn_reference(q, k, v)
    a, state = linear_attn_reference(q[:, :90], k[:, :90], v[:, :90], output_final_state=True)
    b, _ = linear_attn_reference(q[:, 90:], k[:, 90:], v[:, 90:], initial_state=state)
    torch.testing.assert_close(torch.cat([a, b], 1), whole, atol=ATOL, rtol=0)


# ---- the fast path against the references ---------------------------------------------------

@pytest.mark.parametrize("causal", [True, False])
@pytest.mark.parametrize("T, BS, K", [(1, 16, 2), (100, 16, 3), (128, 32, 2), (300, 32, 0),
                                      (257, 64, 4), (600, 8, 2)])  # last: groups > CPU_ROWS_PER_CALL
def test_local_blocked_matches_reference(causal, T, BS, K):
    q, k, v = _qkv(2, T, 3, 8, seed=T)
    NB = -(-T // BS)
    extra = _random_extra(2, 3, NB, K, seed=K) if K else None
    want = local_attn_reference(q, k, v, block_size=BS, causal=causal, extra_blocks=extra)
    got = local_attn_blocked(q, k, v, block_size=BS, causal=causal, extra_blocks=extra)
    torch.testing.assert_close(got, want, atol=ATOL, rtol=0)
    # The model passes transposed views of heads-first memory; same numbers.
    heads_first = [t.transpose(1, 2).contiguous().transpose(1, 2) for t in (q, k, v)]
    got_view = local_attn_blocked(*heads_first, block_size=BS, causal=causal, extra_blocks=extra)
    torch.testing.assert_close(got_view, want, atol=ATOL, rtol=0)


@pytest.mark.parametrize("T", [1, 64, 200])
def test_linear_chunked_matches_reference(T):
    q, k, v = _qkv(2, T, 2, 8, seed=T)
    g = torch.Generator().manual_seed(5)
    state = (torch.rand(2, 2, 8, 8, generator=g), torch.rand(2, 2, 8, generator=g))
    for causal in (True, False):
        for init in (None, state):
            want, ws = linear_attn_reference(q, k, v, causal=causal, initial_state=init,
                                             output_final_state=True)
            got, gs = linear_attn_chunked(q, k, v, causal=causal, initial_state=init,
                                          output_final_state=True)
            torch.testing.assert_close(got, want, atol=ATOL, rtol=0)
            for a, b in zip(gs, ws, strict=True):
                torch.testing.assert_close(a, b, atol=1e-4, rtol=1e-5)


def test_hybrid_blocked_matches_reference():
    q, k, v = _qkv(1, 300, 2, 8, seed=3)
    gate = torch.rand(1, 300, 2, generator=torch.Generator().manual_seed(4))
    extra = _random_extra(1, 2, 10, 2)
    for causal in (True, False):
        want, _ = hybrid_attn_reference(q, k, v, gate, block_size=32, causal=causal,
                                        extra_blocks=extra)
        got, _ = hybrid_attn_blocked(q, k, v, gate, block_size=32, causal=causal,
                                     extra_blocks=extra)
        torch.testing.assert_close(got, want, atol=ATOL, rtol=0)


def test_block_mean_matches_pool_blocks():
    x = torch.randn(2, 300, 3, 4)
    torch.testing.assert_close(block_mean(x.transpose(1, 2), 64), pool_blocks(x, 64))


def test_backends_are_validated():
    with pytest.raises(ValueError, match="backend must be one of"):
        attention_ops("cuda", torch.device("cpu"))
    ops = attention_ops("auto", torch.device("cpu"))
    assert ops.local_attn is local_attn_blocked  # no CUDA here: the fast PyTorch path


def test_auto_runs_an_op_in_pytorch_where_its_kernel_does_not_take_the_head_dim():
    """A config's head_dim need only be even; the softmax kernels take 32/48/64/128 and linear
    attention up to 128. On CUDA (only the device's type is read here) ``auto`` keeps each op
    whose kernel takes the size; ``triton`` refuses before any work."""
    from genoctx.kernels.hybrid import hybrid_attn
    from genoctx.kernels.linear_attn import linear_attn
    from genoctx.kernels.local_attn import local_attn

    cuda = torch.device("cuda")
    ops = attention_ops("auto", cuda, 64)
    assert (ops.local_attn, ops.linear_attn, ops.hybrid_attn) == (local_attn, linear_attn,
                                                                  hybrid_attn)
    ops = attention_ops("auto", cuda, 96)
    assert ops.local_attn is local_attn_blocked and ops.hybrid_attn is not hybrid_attn
    assert ops.linear_attn is linear_attn
    ops = attention_ops("auto", cuda, 256)
    assert ops.linear_attn is not linear_attn and ops.local_attn is local_attn_blocked
    with pytest.raises(ValueError, match="does not take head_dim 96"):
        attention_ops("triton", cuda, 96)
    cfg = small_config(head_dim=48)
    model = GenoCtxModel(cfg, backend="auto")
    assert model._ops()[0].local_attn is local_attn_blocked  # CPU tensors: PyTorch whatever


# ---- dynamic top-k selection ----------------------------------------------------------------

def _naive_selection(q, k, g, BS, top_k, window, causal):
    """``{(b, h, i): set of far blocks}`` by the documented rule, one block at a time."""
    B, H, T, D = q.shape
    NB = -(-T // BS)
    out = {}
    for b in range(B):
        for h in range(H):
            kbar = [k[b, j * BS:(j + 1) * BS, h].mean(0) for j in range(NB)]
            for i in range(NB):
                src = i - 1 if causal else i
                if src < 0:
                    out[b, h, i] = set()
                    continue
                qbar = q[b, h, src * BS:(src + 1) * BS].mean(0)
                n = int(torch.round(top_k * g[b, h, src * BS:(src + 1) * BS].mean()))
                cands = [j for j in range(i - 1 - window, i - 1) if j >= 0]
                if not causal:
                    cands += [j for j in range(i + 2, i + 2 + window) if j < NB]
                cands.sort(key=lambda j: -float(qbar @ kbar[j]))
                out[b, h, i] = set(cands[:n])
    return out


@pytest.mark.parametrize("causal", [True, False])
def test_selection_matches_naive_rule(causal):
    B, H, T, D, BS = 2, 3, 16 * 9, 4, 16
    gen = torch.Generator().manual_seed(7)
    q = torch.randn(B, H, T, D, generator=gen)
    k = torch.randn(B, T, H, D, generator=gen)
    g = torch.rand(B, H, T, generator=gen)
    idx = select_extra_blocks(q, k, g, block_size=BS, top_k_blocks=3, window_blocks=4,
                              causal=causal, block_topk=block_topk_reference)
    want = _naive_selection(q, k, g, BS, 3, 4, causal)
    assert idx is not None
    for (b, h, i), blocks in want.items():
        assert {int(j) for j in idx[b, h, i] if j >= 0} == blocks, (b, h, i)


def test_causal_selection_ignores_the_future():
    B, H, T, D, BS = 1, 2, 16 * 10, 4, 16
    gen = torch.Generator().manual_seed(8)
    q, k, g = (torch.randn(B, H, T, D, generator=gen), torch.randn(B, T, H, D, generator=gen),
               torch.rand(B, H, T, generator=gen))
    kw = dict(block_size=BS, top_k_blocks=2, window_blocks=5, causal=True,
              block_topk=block_topk_reference)
    base = select_extra_blocks(q, k, g, **kw)
    cut = 6 * BS  # perturb blocks 6.. : the selection of blocks 0..6 must not move
    q2, k2, g2 = q.clone(), k.clone(), g.clone()
    q2[:, :, cut:] += 5
    k2[:, cut:] *= -3
    g2[:, :, cut:] = 1 - g2[:, :, cut:]
    other = select_extra_blocks(q2, k2, g2, **kw)

    def chosen(idx, i):  # trailing empty slots may be trimmed differently: compare sets
        return [{int(j) for j in idx[0, h, i] if j >= 0} for h in range(H)]

    assert any(chosen(base, i) != chosen(other, i) for i in range(7, 10))
    for i in range(7):
        assert chosen(base, i) == chosen(other, i), i


@pytest.mark.parametrize("backend", ["torch", "reference"])
def test_model_is_causal(backend):
    torch.manual_seed(0)
    model = GenoCtxModel(small_config(), backend=backend).eval()
    x = random_tokens(1, 640)
    y = x.clone()
    y[0, 400:] = torch.where(y[0, 400:] == 4, 5, 4)
    with torch.no_grad():
        a, b = model(x), model(y)
    torch.testing.assert_close(a[:, :400], b[:, :400], atol=ATOL, rtol=0)
    assert (a[:, 400:] - b[:, 400:]).abs().max() > 1e-3
