"""Triton MoE dispatch (interpreter) against the PyTorch reference: permutation exact, grouped
matmul and weighted combine with every gradient. Tolerance: relative RMS error against the fp32
reference at most 2x that of the plain PyTorch path at the same precision, plus a floor."""

import pytest
import torch

from genoctx.errors import InputError
from genoctx.kernels.moe import grouped_mm, moe_permute, moe_unpermute
from genoctx.kernels.moe import reference as ref

FLOOR = {torch.float32: 1e-6, torch.float16: 1e-4}


def rel_rms(x, r):
    x, r = x.double(), r.double()
    if not torch.isfinite(x).all():
        return float("inf")
    return ((x - r).pow(2).mean().sqrt() / r.pow(2).mean().sqrt().clamp_min(1e-30)).item()


def routing(N, K, E, seed, one_expert=None):
    g = torch.Generator().manual_seed(seed)
    idx = torch.rand(N, E, generator=g).topk(K, -1).indices
    if one_expert is not None:
        idx[:, 0] = one_expert
    return idx, torch.rand(N, K, generator=g).softmax(-1)


def pipeline(mods, x, w, idx, tw, E, dy):
    """permute -> grouped matmul -> unpermute; output and gradients of x, w, topk_weight."""
    permute, gmm, unpermute = mods
    xs, ws, tws = (t.detach().clone().requires_grad_() for t in (x, w, tw))
    xp, order, counts = permute(xs, idx, E)
    y = unpermute(gmm(xp, ws, counts), order, tws)
    return [y, *torch.autograd.grad((y.float() * dy).sum(), [xs, ws, tws])]


OURS = (moe_permute, lambda a, b, c: grouped_mm(a, b, c, impl="triton"), moe_unpermute)
REF = (ref.moe_permute, ref.grouped_mm_reference, ref.moe_unpermute)


@pytest.mark.parametrize("N,K,E,D,F", [(37, 2, 5, 32, 48), (64, 1, 8, 16, 16), (50, 3, 16, 64, 40)])
def test_permute_is_exact(N, K, E, D, F):
    x = torch.randn(N, D)
    idx, _ = routing(N, K, E, seed=N)
    for a, b in zip(moe_permute(x, idx, E), ref.moe_permute(x, idx, E)):
        assert torch.equal(a, b)


@pytest.mark.parametrize("N,K,E,D,F,dtype,one_expert", [
    (37, 2, 5, 32, 48, torch.float32, None),
    (50, 3, 8, 64, 40, torch.float16, None),
    (40, 2, 6, 48, 80, torch.float16, 2),     # one hot expert, others nearly empty
    (20, 1, 16, 16, 16, torch.float32, 3),    # every token on one expert, 15 empty experts
])
def test_pipeline_and_gradients_match_reference(N, K, E, D, F, dtype, one_expert):
    g = torch.Generator().manual_seed(N + D)
    x = torch.randn(N, D, generator=g)
    w = torch.randn(E, D, F, generator=g) / D ** 0.5
    idx, tw = routing(N, K, E, seed=N, one_expert=one_expert)
    dy = torch.randn(N, F, generator=g)
    ours = pipeline(OURS, x.to(dtype), w.to(dtype), idx, tw, E, dy)
    lowp = pipeline(REF, x.to(dtype), w.to(dtype), idx, tw, E, dy)
    exact = pipeline(REF, x, w, idx, tw, E, dy)
    assert ours[0].dtype == dtype and ours[3].dtype == tw.dtype
    for name, a, b, r in zip(["y", "dx", "dw", "dtopk_w"], ours, lowp, exact):
        err, base = rel_rms(a, r), rel_rms(b, r)
        assert err <= 2 * base + FLOOR[dtype], f"{name}: error {err:.2e}, plain torch {base:.2e}"


def test_grouped_mm_with_empty_experts_and_transposed_weights():
    counts = torch.tensor([0, 5, 0, 0, 17, 1, 0])
    x = torch.randn(int(counts.sum()), 24)
    w = torch.randn(7, 40, 24).transpose(1, 2)  # [E, D, F] view with non-unit F stride
    out = grouped_mm(x, w, counts, impl="triton")
    torch.testing.assert_close(out, ref.grouped_mm_reference(x, w, counts), rtol=1e-5, atol=1e-5)


def test_unpermute_alone_matches_reference():
    N, K, F = 33, 3, 20
    idx, tw = routing(N, K, 4, seed=9)
    order = torch.argsort(idx.reshape(-1), stable=True)
    y_perm = torch.randn(N * K, F)
    expected = ref.moe_unpermute(y_perm, order, tw)
    torch.testing.assert_close(moe_unpermute(y_perm, order, tw), expected)


def test_user_errors():
    x = torch.randn(4, 8)
    with pytest.raises(InputError, match="num_experts"):
        moe_permute(x, torch.tensor([[0], [1], [5], [2]]), 4)
    with pytest.raises(InputError, match="integer"):
        moe_permute(x, torch.zeros(4, 1), 4)
    with pytest.raises(InputError, match="experts"):
        grouped_mm(x, torch.randn(3, 8, 8), torch.tensor([4, 0]))
    with pytest.raises(InputError, match="impl"):
        grouped_mm(x, torch.randn(2, 8, 8), torch.tensor([4, 0]), impl="cuda")


def test_counts_rows_and_dtypes_that_do_not_fit_are_refused():
    """Counts that sum past M read out of bounds (a crash) and short of it leave rows
    unwritten; an x with more rows than topk_idx gave a wrong dx. All are errors now."""
    x = torch.randn(5, 8)
    w = torch.randn(2, 8, 8)
    for counts in ([4, 2], [2, 2], [6, -1]):
        with pytest.raises(InputError, match="sum to the 5 rows"):
            grouped_mm(x, w, torch.tensor(counts), impl="triton")
    with pytest.raises(InputError, match="share a dtype"):
        grouped_mm(x.half(), w, torch.tensor([3, 2]), impl="triton")
    with pytest.raises(InputError, match="one row per row of topk_idx"):
        moe_permute(x, torch.tensor([[0, 1]] * 4), 2)
    with pytest.raises(InputError, match=r"topk_weight must be \[N, K\]"):
        moe_unpermute(torch.randn(4, 8), torch.arange(4), torch.rand(4))


def test_unpermute_gradients_with_an_order_that_is_a_strided_view():
    N, K, F = 9, 2, 16
    idx, tw = routing(N, K, 3, seed=3)
    order = torch.argsort(idx.reshape(-1), stable=True)
    strided = torch.stack([order, order], 1)[:, 0]  # same values, stride 2
    assert not strided.is_contiguous()
    y_perm = torch.randn(N * K, F)
    dy = torch.randn(N, F)
    grads = []
    for o in (order, strided):
        yp, w = y_perm.clone().requires_grad_(), tw.clone().requires_grad_()
        (moe_unpermute(yp, o, w) * dy).sum().backward()
        grads.append((yp.grad, w.grad))
    for a, b in zip(*grads):
        torch.testing.assert_close(a, b)


def test_second_derivatives_are_refused_not_wrong():
    x = torch.randn(6, 8, requires_grad=True)
    w = torch.randn(2, 8, 4, requires_grad=True)
    y = grouped_mm(x, w, torch.tensor([3, 3]), impl="triton")
    with pytest.raises(RuntimeError, match="second derivatives"):
        torch.autograd.grad(y.pow(2).sum(), x, create_graph=True)
