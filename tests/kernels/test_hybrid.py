"""Fused Triton hybrid attention (interpreter on CPU) against the fp32 PyTorch reference.

Every output (o and the final state) and every gradient (q, k, v, gate and the initial state)
is compared, with one random upstream gradient for each output. Tolerances: a relative-RMS bound
of ~100 fp32 ulps in fp32; in fp16, error(Triton) <= 2 x error(plain PyTorch at fp16) + a small
floor, both against the fp32 reference on the same rounded inputs.
"""

import pytest
import torch
import torch.nn.functional as F
from genoctx.kernels._triton_utils import force_tiles
from genoctx.kernels.hybrid import hybrid_attn
from genoctx.kernels.hybrid.reference import hybrid_attn_reference
from genoctx.kernels.linear_attn.reference import linear_attn_reference

from genoctx.errors import InputError

FP32_REL_RMS = 1e-5
LOWP_FLOOR = 2e-5
NAMES = ("o", "S_final", "z_final", "dq", "dk", "dv", "dgate", "dS0", "dz0")


def rel_rms(x: torch.Tensor, ref: torch.Tensor) -> float:
    x, ref = x.double(), ref.double()
    return ((x - ref).norm() / ref.norm().clamp_min(1e-30)).item()


def random_extra(B, H, NB, K, gen):
    """Distinct entries per row from [-1, NB + 1] (unused, valid, in-window, future, too big)."""
    rows = [torch.randperm(NB + 3, generator=gen)[:K] - 1 for _ in range(B * H * NB)]
    return torch.stack(rows).view(B, H, NB, K)


def lowp_local(q, k, v, *, block_size, causal, extra):
    """Plain PyTorch softmax attention in the inputs' dtype (flash-attention's upcast=False)."""
    T = q.shape[1]
    qb = torch.arange(T) // block_size
    allowed = ((qb[:, None] - qb[None, :]).abs() <= 1)[None, None]
    if extra is not None:
        allowed = allowed | (extra[:, :, qb][..., None] == qb).any(-2)
    if causal:
        allowed = allowed & torch.ones(T, T, dtype=torch.bool).tril()
    s = torch.einsum("bqhd,bkhd->bhqk", q, k) * q.shape[-1] ** -0.5
    p = torch.softmax(s.masked_fill(~allowed, float("-inf")).float(), -1).to(q.dtype)
    return torch.einsum("bhqk,bkhd->bqhd", p, v)


def lowp_linear(q, k, v, s0, z0, *, causal, eps=1e-6):
    """Linear attention as mixed-precision PyTorch does it: fp16 matmul operands, fp32 sums
    (an all-fp16 normaliser would overflow at these lengths)."""
    fq = (F.elu(q.float()) + 1).to(q.dtype).float()
    fk = (F.elu(k.float()) + 1).to(k.dtype).float()
    a = torch.einsum("bqhd,bkhd->bhqk", fq, fk)
    if causal:
        a = a * torch.ones(q.shape[1], q.shape[1]).tril()
    num = torch.einsum("bhqk,bkhd->bqhd", a.to(q.dtype).float(), v.float())
    den = a.sum(-1).transpose(1, 2)
    num = num + torch.einsum("bqhd,bhde->bqhe", fq, s0)
    den = den + torch.einsum("bqhd,bhd->bqh", fq, z0)
    s_fin = s0 + torch.einsum("bkhd,bkhe->bhde", fk, v.float())
    return num / (den[..., None] + eps), (s_fin, z0 + fk.sum(1))


def lowp_hybrid(q, k, v, gate, s0, z0, *, block_size, causal, extra):
    o_loc = lowp_local(q, k, v, block_size=block_size, causal=causal, extra=extra)
    o_lin, state = lowp_linear(q, k, v, s0, z0, causal=causal)
    g = gate.float()[..., None]
    return (g * o_loc.float() + (1 - g) * o_lin).to(q.dtype), state


def make_inputs(B, T, H, D, dtype, gate_dtype, gen):
    q, k, v = (torch.randn(B, T, H, D, generator=gen).to(dtype) for _ in range(3))
    gate = torch.rand(B, T, H, generator=gen)
    gate[:, ::7] = 0.0  # the saturated gate values a sigmoid reaches in fp16/bf16
    gate[:, 3::11] = 1.0
    # A state as a previous 64-token segment leaves it.
    prev = [torch.randn(B, 64, H, D, generator=gen) for _ in range(2)]
    _, (s0, z0) = linear_attn_reference(prev[0], prev[0], prev[1], output_final_state=True)
    return q, k, v, gate.to(gate_dtype), s0, z0


def run_case(B, T, H, D, block_size, causal, num_extra, dtype, *, gate_dtype=torch.float32,
             seed=0):
    gen = torch.Generator().manual_seed(seed)
    inputs = make_inputs(B, T, H, D, dtype, gate_dtype, gen)
    extra = random_extra(B, H, -(-T // block_size), num_extra, gen) if num_extra else None
    do = torch.randn(B, T, H, D, generator=gen).to(dtype)
    d_s, d_z = torch.randn(B, H, D, D, generator=gen), torch.randn(B, H, D, generator=gen)
    kw = {"block_size": block_size, "causal": causal, "extra_blocks": extra}

    def fwd_bwd(fn, xs):
        xs = [x.detach().clone().requires_grad_() for x in xs]
        o, (s_fin, z_fin) = fn(*xs)
        loss = (o.float() * do.float()).sum() + (s_fin * d_s).sum() + (z_fin * d_z).sum()
        return [o, s_fin, z_fin, *torch.autograd.grad(loss, xs)]

    def triton_fn(q, k, v, g, s0, z0):
        return hybrid_attn(q, k, v, g, initial_state=(s0, z0), output_final_state=True, **kw)

    def ref_fn(q, k, v, g, s0, z0):
        return hybrid_attn_reference(q, k, v, g, initial_state=(s0, z0),
                                     output_final_state=True, **kw)

    def lowp_fn(q, k, v, g, s0, z0):
        return lowp_hybrid(q, k, v, g, s0, z0, block_size=block_size, causal=causal,
                           extra=extra)

    got = fwd_bwd(triton_fn, inputs)
    ref = fwd_bwd(ref_fn, [x.float() for x in inputs])
    if dtype == torch.float32:
        for name, g, r in zip(NAMES, got, ref):
            assert rel_rms(g, r) <= FP32_REL_RMS, f"{name}: rel RMS {rel_rms(g, r):.2e}"
        return
    lowp = fwd_bwd(lowp_fn, inputs)
    for name, g, lp, r, x in zip(NAMES, got, lowp, ref, [None] * 3 + list(inputs)):
        assert x is None or g.dtype == x.dtype, f"{name} has dtype {g.dtype}"
        err, err_pt = rel_rms(g, r), rel_rms(lp, r)
        assert err <= 2 * err_pt + LOWP_FLOOR, f"{name}: {err:.2e} vs PyTorch fp16 {err_pt:.2e}"


@pytest.mark.parametrize(
    "B, T, H, D, block_size, causal, num_extra, dtype",
    [
        (1, 255, 2, 32, 32, True, 0, torch.float32),
        (2, 333, 2, 48, 64, True, 2, torch.float32),
        (1, 333, 2, 64, 64, False, 3, torch.float32),
        (1, 511, 1, 64, 16, True, 2, torch.float16),
        (1, 255, 2, 128, 32, False, 0, torch.float16),
        (1, 100, 1, 32, 24, True, 2, torch.float32),  # block size not a power of two
    ],
)
def test_matches_reference(B, T, H, D, block_size, causal, num_extra, dtype):
    run_case(B, T, H, D, block_size, causal, num_extra, dtype)


def test_long_sequence_fp16():
    """T = 1023 with 128-token blocks: each block spans two 64-row interpreter tiles."""
    run_case(1, 1023, 1, 32, 128, True, 1, torch.float16, seed=7)


def test_fp16_gate():
    run_case(1, 200, 2, 32, 32, True, 1, torch.float16, gate_dtype=torch.float16, seed=4)


@pytest.mark.parametrize("causal", [True, False])
def test_block_longer_than_tiles(causal):
    """A 64-token block (= linear chunk) split into 32-row query tiles, 16-key tiles and
    16-row state tiles, odd T so the last block is short."""
    with force_tiles("hybrid_fwd", block_m=32, block_n=16), \
            force_tiles("hybrid_bwd_dq", block_m=16, block_n=32), \
            force_tiles("hybrid_bwd_dkdv", block_m=32, block_n=16), \
            force_tiles("hybrid_state", block_m=16):
        run_case(1, 201, 2, 32, 64, causal, 2, torch.float32, seed=1)



@pytest.mark.parametrize(
    "B, T, H, D, block_size, num_extra, dtype, tiles",
    [
        (2, 333, 2, 48, 64, 2, torch.float32, None),
        (1, 511, 1, 64, 16, 2, torch.float16, None),
        (1, 100, 1, 32, 24, 2, torch.float32, None),  # block size not a power of two
        (1, 201, 2, 32, 64, 2, torch.float32, (32, 16)),  # a block of two query tiles
        (1, 201, 2, 32, 64, 0, torch.float16, (16, 32)),  # key tiles longer than query tiles
    ],
)
def test_two_loops_match_reference(monkeypatch, B, T, H, D, block_size, num_extra, dtype, tiles):
    """GENOCTX_HYBRID_LOOPS=two (the intra-chunk terms in loops apart from the softmax ones, in
    the forward and the dk/dv kernel): the same outputs and gradients against the reference
    (causal; the bidirectional kernels have no intra-chunk loop)."""
    from genoctx.kernels.hybrid import hybrid as hyb

    monkeypatch.setenv("GENOCTX_HYBRID_LOOPS", "two")
    launched = []

    class Spy:
        def __init__(self, name):
            self.name, self.real = name, getattr(hyb, name)

        def __getitem__(self, grid):
            def launch(*args, **kwargs):
                launched.append((self.name, kwargs["TWO_LOOPS"]))
                return self.real[grid](*args, **kwargs)
            return launch

    for name in ("hybrid_fwd_kernel", "hybrid_bwd_kernel_dkdv"):
        monkeypatch.setattr(hyb, name, Spy(name))
    if tiles is None:
        run_case(B, T, H, D, block_size, True, num_extra, dtype, seed=3)
    else:
        with force_tiles("hybrid_fwd2", block_m=tiles[0], block_n=tiles[1]), \
                force_tiles("hybrid_bwd_dkdv2", block_m=tiles[1], block_n=tiles[0]):
            run_case(B, T, H, D, block_size, True, num_extra, dtype, seed=3)
    assert {name for name, two in launched if two} == {"hybrid_fwd_kernel",
                                                       "hybrid_bwd_kernel_dkdv"}
    assert all(two for _, two in launched)


def test_forward_loops_are_checked(monkeypatch):
    from genoctx.kernels.hybrid import hybrid as hyb

    monkeypatch.setenv("GENOCTX_HYBRID_LOOPS", "three")
    with pytest.raises(ValueError, match="GENOCTX_HYBRID_LOOPS must be one of one, two"):
        hyb.loops()

def test_state_carries_across_segments():
    """Two segments with the state carried give the one-pass final state (linear branch)."""
    gen = torch.Generator().manual_seed(5)
    q, k, v, gate, _, _ = make_inputs(1, 192, 2, 32, torch.float32, torch.float32, gen)
    _, whole = hybrid_attn(q, k, v, gate, block_size=32, output_final_state=True)
    _, first = hybrid_attn(q[:, :96], k[:, :96], v[:, :96], gate[:, :96], block_size=32,
                           output_final_state=True)
    _, second = hybrid_attn(q[:, 96:], k[:, 96:], v[:, 96:], gate[:, 96:], block_size=32,
                            initial_state=first, output_final_state=True)
    for a, b in zip(second, whole):
        assert rel_rms(a, b) <= FP32_REL_RMS


def test_no_grad_path_matches_grad_path():
    gen = torch.Generator().manual_seed(6)
    q, k, v, gate, s0, z0 = make_inputs(1, 130, 2, 32, torch.float32, torch.float32, gen)
    kw = {"block_size": 32, "initial_state": (s0, z0), "output_final_state": True}
    with torch.no_grad():
        o_ng, st_ng = hybrid_attn(q, k, v, gate, **kw)
    o_g, st_g = hybrid_attn(q, k, v, gate.requires_grad_(), **kw)
    for a, b in zip((o_ng, *st_ng), (o_g, *st_g)):
        torch.testing.assert_close(a, b.detach(), rtol=0, atol=0)
    assert hybrid_attn(q, k, v, gate, block_size=32)[1] is None


def test_rejects_bad_inputs():
    q = torch.randn(1, 64, 2, 32)
    gate = torch.rand(1, 64, 2)
    with pytest.raises(InputError, match="gate"):
        hybrid_attn(q, q, q, gate[:, :32], block_size=16)
    with pytest.raises(InputError, match="initial_state"):
        hybrid_attn(q, q, q, gate, block_size=16,
                    initial_state=(torch.zeros(1, 2, 32, 16), torch.zeros(1, 2, 32)))
    with pytest.raises(InputError, match="head dim"):
        hybrid_attn(q[..., :16], q[..., :16], q[..., :16], gate, block_size=16)


@pytest.mark.parametrize("causal", [True, False])
def test_split_hybrid_matches_the_reference(causal):
    """``GENOCTX_HYBRID=split``: the local and linear kernels and one lerp give the reference's
    output, final state and every gradient (fp32, with extra blocks and an initial state)."""
    from genoctx.kernels.linear_attn import linear_attn
    from genoctx.kernels.local_attn import local_attn
    from genoctx.model.attention import hybrid_from_branches

    gen = torch.Generator().manual_seed(11)
    B, T, H, D, BS = 1, 301, 2, 32, 64
    q, k, v, gate, s0, z0 = make_inputs(B, T, H, D, torch.float32, torch.float32, gen)
    extra = random_extra(B, H, -(-T // BS), 2, gen)
    split = hybrid_from_branches(local_attn, linear_attn)
    got, ref = [], []
    for fn, out in ((split, got), (hybrid_attn_reference, ref)):
        leaves = [t.clone().requires_grad_() for t in (q, k, v, gate, s0, z0)]
        o, (S, z) = fn(*leaves[:4], block_size=BS, causal=causal, extra_blocks=extra,
                       initial_state=(leaves[4], leaves[5]), output_final_state=True)
        torch.manual_seed(3)
        do, dS, dz = torch.randn_like(o), torch.randn_like(S), torch.randn_like(z)
        grads = torch.autograd.grad((o, S, z), leaves, (do, dS, dz))
        out += [o, S, z, *grads]
    for name, a, b in zip(NAMES, got, ref):
        assert torch.isfinite(a).all(), name
        assert rel_rms(a, b) < FP32_REL_RMS, (name, rel_rms(a, b))


def test_hybrid_impl_comes_from_the_environment(monkeypatch):
    from genoctx.model.attention import attention_ops, hybrid_impl

    monkeypatch.setenv("GENOCTX_HYBRID", "split")
    assert hybrid_impl() == "split"
    ops = attention_ops("triton", torch.device("cpu"))  # the interpreter runs the kernels here
    assert ops.hybrid_attn.__name__ == "hybrid_attn_split"
    monkeypatch.setenv("GENOCTX_HYBRID", "fused")
    assert attention_ops("triton", torch.device("cpu")).hybrid_attn is hybrid_attn
    monkeypatch.setenv("GENOCTX_HYBRID", "unfused")
    with pytest.raises(ValueError, match="GENOCTX_HYBRID must be one of fused, split"):
        attention_ops("triton", torch.device("cpu"))
