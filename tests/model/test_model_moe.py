"""MoE: dropless dispatch/combine against a per-token loop, losses, statistics, fast ops."""

import math

import pytest
import torch
import torch.nn.functional as F

from genoctx.kernels.moe.reference import grouped_mm_reference, moe_permute, moe_unpermute
from genoctx.model.moe import MoE, grouped_mm_torch, moe_ops, moe_permute_fast, moe_unpermute_fast

from model_testutil import small_config


def _moe(**overrides) -> MoE:
    torch.manual_seed(0)
    m = MoE(small_config(**overrides))
    for p in m.parameters():
        torch.nn.init.normal_(p, std=0.3)
    return m


def _per_token(m: MoE, x_ND: torch.Tensor) -> torch.Tensor:
    """Each token through its top-k experts, one at a time, weights renormalised."""
    K, Fh = m.cfg.top_k, m.cfg.expert_dim
    probs = F.softmax(x_ND.double() @ m.router.weight.double().T, -1)
    out = []
    for n in range(x_ND.shape[0]):
        w, idx = probs[n].topk(K)
        w = w / w.sum()
        y = torch.zeros(x_ND.shape[1], dtype=torch.float64)
        for wj, e in zip(w, idx, strict=True):
            h = x_ND[n].double() @ m.w_gate_up[e].double()
            y += wj * ((F.silu(h[:Fh]) * h[Fh:]) @ m.w_down[e].double())
        if m.shared is not None:
            y += m.shared.double()(x_ND[n].double()[None])[0]
        out.append(y)
    return torch.stack(out)


@pytest.mark.parametrize("backend", ["torch", "reference"])
@pytest.mark.parametrize("shared", [0, 8])
def test_dispatch_matches_per_token_loop(backend, shared):
    m = _moe(shared_expert_dim=shared)
    x = torch.randn(2, 37, 32)
    with torch.no_grad():
        got = m(x, ops=moe_ops(backend, x.device))
    want = _per_token(m, x.reshape(-1, 32)).view(2, 37, 32)
    torch.testing.assert_close(got.double(), want, atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("grad", [True, False])
def test_losses_and_statistics(grad):
    """With grad the losses are set by the forward; without (inference), on first read:
    the same values either way, and the latest forward's."""
    m = _moe().requires_grad_(False)
    x = torch.randn(3, 50, 32)
    with torch.set_grad_enabled(grad):
        m(torch.randn(1, 9, 32), ops=moe_ops("torch", x.device))  # an earlier forward
        m(x, ops=moe_ops("torch", x.device))
    N, E, K = 150, m.cfg.num_experts, m.cfg.top_k
    logits = x.reshape(N, -1) @ m.router.weight.T
    probs = logits.softmax(-1)
    counts = torch.bincount(probs.topk(K).indices.flatten(), minlength=E)
    aux = E * (counts.float() / (N * K) * probs.mean(0)).sum()
    torch.testing.assert_close(m.aux_loss, aux, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(m.z_loss, torch.logsumexp(logits, -1).square().mean(),
                               atol=1e-4, rtol=1e-5)
    stats = m.stats
    assert stats["tokens_per_expert"] == counts.tolist()
    assert sum(stats["tokens_per_expert"]) == N * K and stats["dropped"] == 0
    entropy = -(probs * probs.log()).sum(-1).mean()
    assert stats["entropy"] == pytest.approx(float(entropy), abs=1e-5)
    assert 0 < stats["entropy"] <= math.log(E) == pytest.approx(stats["max_entropy"])


def test_fast_permute_and_unpermute_equal_the_reference():
    gen = torch.Generator().manual_seed(1)
    x = torch.randn(40, 6, generator=gen)
    idx = torch.randint(0, 5, (40, 3), generator=gen)
    w = torch.rand(40, 3, generator=gen)
    for a, b in zip(moe_permute_fast(x, idx, 5), moe_permute(x, idx, 5), strict=True):
        assert torch.equal(a, b)
    _, order, _ = moe_permute(x, idx, 5)
    y = torch.randn(120, 7, generator=gen)
    torch.testing.assert_close(moe_unpermute_fast(y, order, w), moe_unpermute(y, order, w))


def test_grouped_mm_matches_reference_with_empty_experts():
    gen = torch.Generator().manual_seed(2)
    x = torch.randn(30, 16, generator=gen)
    w = torch.randn(4, 16, 8, generator=gen)
    counts = torch.tensor([10, 0, 20, 0])
    torch.testing.assert_close(grouped_mm_torch(x, w, counts), grouped_mm_reference(x, w, counts),
                               atol=1e-5, rtol=1e-5)
    odd = torch.randn(30, 5, generator=gen)  # widths torch._grouped_mm refuses: the loop runs
    w5 = torch.randn(4, 5, 3, generator=gen)
    torch.testing.assert_close(grouped_mm_torch(odd, w5, counts),
                               grouped_mm_reference(odd, w5, counts))


def test_cpu_inference_chunks_give_the_same_result(monkeypatch):
    import genoctx.model.moe as moe_module

    m = _moe()
    x = torch.randn(2, 45, 32)
    ops = moe_ops("torch", x.device)
    whole = m(x, ops=ops).detach()  # grad enabled: one dispatch
    stats = m.stats
    monkeypatch.setattr(moe_module, "CPU_CHUNK_BYTES", 4 * 2 * 2 * 16 * 7)  # 7 tokens a chunk
    with torch.no_grad():
        chunked = m(x, ops=ops)
    torch.testing.assert_close(chunked, whole, atol=1e-6, rtol=1e-6)
    assert m.stats == stats
