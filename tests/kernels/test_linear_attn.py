"""Triton linear attention (interpreter) against the fp32 PyTorch reference: forward, every
gradient, state in/out, segmented calls. Tolerance: the kernel's relative RMS error against the
fp32 reference must be at most 2x that of plain PyTorch at the same precision, plus a floor."""

import os

import pytest
import torch
import torch.nn.functional as F

from genoctx.errors import InputError
from genoctx.kernels.linear_attn import linear_attn as linear_attn_fn
from genoctx.kernels.linear_attn.reference import linear_attn_reference, naive_linear_attn

LA = __import__("genoctx.kernels.linear_attn.linear_attn", fromlist=["linear_attn"])
FLOOR = {torch.float32: 1e-5, torch.float16: 2e-4}


def rel_rms(x, ref):
    x, ref = x.double(), ref.double()
    if not torch.isfinite(x).all():  # NaN-prefilled outputs that a kernel never wrote end here
        return float("inf")
    return ((x - ref).pow(2).mean().sqrt() / ref.pow(2).mean().sqrt().clamp_min(1e-30)).item()


def linear_lowp(q, k, v, causal, state, C, eps=1e-6):
    """Plain PyTorch at the inputs' precision: features and products in that dtype, state fp32."""
    dt = q.dtype
    fq, fk = F.elu(q) + 1, F.elu(k) + 1
    B, T, H, D = q.shape
    S = state[0] if state is not None else q.new_zeros(B, H, D, v.shape[-1], dtype=torch.float32)
    z = state[1] if state is not None else q.new_zeros(B, H, D, dtype=torch.float32)
    if not causal:
        S = S + torch.einsum("bthd,bthe->bhde", fk, v).float()
        z = z + fk.float().sum(1)
        num = torch.einsum("bthd,bhde->bthe", fq, S.to(dt))
        return num / (torch.einsum("bthd,bhd->bth", fq, z.to(dt))[..., None] + eps), (S, z)
    out = []
    for c0 in range(0, T, C):
        qc, kc, vc = fq[:, c0:c0 + C], fk[:, c0:c0 + C], v[:, c0:c0 + C]
        n = qc.shape[1]
        a = torch.einsum("bqhd,bkhd->bhqk", qc, kc) * torch.ones(n, n, dtype=dt).tril()
        num = torch.einsum("bqhd,bhde->bqhe", qc, S.to(dt)) + torch.einsum("bhqk,bkhe->bqhe", a, vc)
        den = torch.einsum("bqhd,bhd->bqh", qc, z.to(dt)) + a.sum(-1).transpose(1, 2)
        out.append(num / (den[..., None] + eps))
        S = S + torch.einsum("bkhd,bkhe->bhde", kc, vc).float()
        z = z + kc.float().sum(1)
    return torch.cat(out, 1), (S, z)


def run_all(fn, q, k, v, state, do, dS, dz, dtype):
    """Output, final state and gradients of q, k, v, S0, z0 for one implementation."""
    x = [t.detach().to(dtype).requires_grad_() for t in (q, k, v)]
    s0 = tuple(t.detach().clone().requires_grad_() for t in state) if state is not None else None
    o, (S, z) = fn(*x, s0)
    loss = (o.float() * do).sum() + (S * dS).sum() + (z * dz).sum()
    leaves = x + (list(s0) if s0 is not None else [])
    return [o, S, z] + list(torch.autograd.grad(loss, leaves))


def make_inputs(B, T, H, D, E, with_state, seed):
    g = torch.Generator().manual_seed(seed)
    q, k = torch.randn(B, T, H, D, generator=g), torch.randn(B, T, H, D, generator=g)
    v = torch.randn(B, T, H, E, generator=g)
    state = None
    if with_state:
        state = (torch.rand(B, H, D, E, generator=g) * 4, torch.rand(B, H, D, generator=g) * 8)
    do = torch.randn(B, T, H, E, generator=g)
    dS, dz = torch.randn(B, H, D, E, generator=g), torch.randn(B, H, D, generator=g)
    return q, k, v, state, do, dS, dz


CASES = [  # B, T, H, D, E, chunk, dtype, causal, with_state
    (1, 255, 2, 32, 32, 16, torch.float32, True, False),
    (2, 333, 1, 64, 48, 32, torch.float32, True, True),
    (1, 511, 1, 128, 64, 64, torch.float32, True, True),
    (1, 333, 2, 64, 64, 64, torch.float32, False, True),
    (1, 255, 2, 32, 32, 16, torch.float16, True, True),
    (1, 511, 1, 64, 64, 32, torch.float16, True, False),
    (2, 333, 1, 128, 128, 64, torch.float16, True, True),
    (1, 255, 1, 64, 32, 32, torch.float16, False, False),
]


@pytest.mark.parametrize("B,T,H,D,E,C,dtype,causal,with_state", CASES)
def test_forward_and_gradients_match_reference(B, T, H, D, E, C, dtype, causal, with_state):
    assert os.environ.get("TRITON_INTERPRET") == "1"
    q, k, v, state, do, dS, dz = make_inputs(B, T, H, D, E, with_state, seed=T + D)
    ours = run_all(lambda *a: linear_attn_fn(*a[:3], causal=causal, initial_state=a[3],
                                             output_final_state=True, chunk_size=C),
                   q, k, v, state, do, dS, dz, dtype)
    lowp = run_all(lambda *a: linear_lowp(*a[:3], causal, a[3], C), q, k, v, state, do, dS, dz,
                   dtype)
    ref = run_all(lambda *a: linear_attn_reference(*a[:3], causal=causal, initial_state=a[3],
                                                   output_final_state=True, chunk_size=C),
                  q, k, v, state, do, dS, dz, torch.float32)
    names = ["o", "S", "z", "dq", "dk", "dv", "dS0", "dz0"]
    assert ours[0].dtype == dtype and ours[1].dtype == torch.float32
    for name, a, b, r in zip(names, ours, lowp, ref):
        err, base = rel_rms(a, r), rel_rms(b, r)
        assert err <= 2 * base + FLOOR[dtype], f"{name}: error {err:.2e}, plain torch {base:.2e}"


@pytest.mark.parametrize("B,T,H,D,E,C,dtype,causal,with_state", [CASES[4], CASES[7]])
def test_half_operand_path_matches_reference(monkeypatch, B, T, H, D, E, C, dtype, causal,
                                             with_state):
    """bf16 inputs multiply the state and the scaled gradients in bf16 on the GPU; the interpreter
    cannot run bf16 products, so the same code path is exercised here on fp16."""
    monkeypatch.setitem(LA.TUNE, "lowp_fp16", True)
    test_forward_and_gradients_match_reference(B, T, H, D, E, C, dtype, causal, with_state)


@pytest.mark.parametrize("causal", [True, False])
def test_matches_quadratic_form(causal):
    q, k, v, *_ = make_inputs(1, 200, 2, 32, 32, False, seed=7)
    o, state = linear_attn_fn(q, k, v, causal=causal, chunk_size=32)
    assert state is None
    assert rel_rms(o, naive_linear_attn(q, k, v, causal=causal)) < 1e-5


def test_segmented_calls_equal_one_call():
    q, k, v, *_ = make_inputs(1, 300, 2, 32, 32, False, seed=3)
    full, (S_full, z_full) = linear_attn_fn(q, k, v, output_final_state=True, chunk_size=16)
    cut = 137  # not a chunk boundary
    o1, st = linear_attn_fn(q[:, :cut], k[:, :cut], v[:, :cut], output_final_state=True,
                            chunk_size=16)
    o2, (S2, z2) = linear_attn_fn(q[:, cut:], k[:, cut:], v[:, cut:], initial_state=st,
                                  output_final_state=True, chunk_size=16)
    assert rel_rms(torch.cat([o1, o2], 1), full) < 1e-6
    assert rel_rms(S2, S_full) < 1e-6 and rel_rms(z2, z_full) < 1e-6


def test_gradient_flows_through_chained_state():
    q, k, v, *_ = make_inputs(1, 160, 1, 32, 32, False, seed=11)
    x = [t.clone().requires_grad_() for t in (q, k, v)]
    _, st = linear_attn_fn(*(t[:, :64] for t in x), output_final_state=True, chunk_size=16)
    o2, _ = linear_attn_fn(*(t[:, 64:] for t in x), initial_state=st, chunk_size=16)
    g = torch.autograd.grad(o2.sum(), x)
    xr = [t.clone().requires_grad_() for t in (q, k, v)]
    o_ref, _ = linear_attn_reference(*xr, chunk_size=16)
    g_ref = torch.autograd.grad(o_ref[:, 64:].sum(), xr)
    for a, b in zip(g, g_ref):
        assert rel_rms(a, b) < 1e-5


def test_chunk_size_does_not_change_the_result():
    q, k, v, *_ = make_inputs(1, 250, 1, 32, 32, False, seed=5)
    outs = [linear_attn_fn(q, k, v, chunk_size=c)[0] for c in (16, 64, 128)]
    assert rel_rms(outs[0], outs[2]) < 1e-6 and rel_rms(outs[1], outs[2]) < 1e-6


def test_runs_the_kernel_not_the_reference(monkeypatch):
    def boom(*a, **kw):
        raise AssertionError("fell back to the reference")
    monkeypatch.setattr(LA, "linear_attn_reference", boom)
    q, k, v, *_ = make_inputs(1, 40, 1, 16, 16, False, seed=1)
    o, _ = linear_attn_fn(q, k, v, chunk_size=16)
    assert torch.isfinite(o).all()


@pytest.mark.parametrize("kwargs,match", [
    (dict(chunk_size=48), "chunk_size"),
    (dict(initial_state=(torch.zeros(1, 1, 16, 8), torch.zeros(1, 1, 16))), "initial_state"),
])
def test_user_errors(kwargs, match):
    q = torch.randn(1, 8, 1, 16)
    with pytest.raises(InputError, match=match):
        linear_attn_fn(q, q, q, **kwargs)


def test_rejects_wide_heads_and_mismatched_shapes():
    with pytest.raises(InputError, match="D, E <= 128"):
        x = torch.randn(1, 8, 1, 256)
        linear_attn_fn(x, x, x)
    with pytest.raises(InputError, match="shape|B, T, H"):
        linear_attn_fn(torch.randn(1, 8, 1, 16), torch.randn(1, 9, 1, 16), torch.randn(1, 8, 1, 16))


def test_second_derivatives_are_refused_not_wrong():
    """A gradient penalty through the kernel gave 0.961 against the reference's 0.682."""
    q, k, v = (torch.randn(1, 32, 2, 16, requires_grad=True) for _ in range(3))
    o, _ = linear_attn_fn(q, k, v, chunk_size=16)
    with pytest.raises(RuntimeError, match="second derivatives"):
        torch.autograd.grad(o.pow(2).sum(), q, create_graph=True)
