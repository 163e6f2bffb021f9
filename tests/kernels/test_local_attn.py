"""Triton local attention (interpreter on CPU) against the fp32 PyTorch reference.

Tolerances come from the reference: in fp32 a relative-RMS bound of ~100 fp32 ulps; in fp16
the flash-attention rule, error(Triton) <= 2 x error(plain PyTorch fp16) + a small floor, both
measured against the fp32 reference on the same rounded inputs. NaN-filled outputs (the wrappers
do this under the interpreter) make any element a kernel fails to write fail the comparison.
"""

import pytest
import torch
from genoctx.kernels._triton_utils import force_tiles
from genoctx.kernels.local_attn import local_attn
from genoctx.kernels.local_attn.reference import local_attn_reference

from genoctx.errors import InputError

FP32_REL_RMS = 1e-5
LOWP_FLOOR = 2e-5  # relative-RMS floor for the fp16 rule


def rel_rms(x: torch.Tensor, ref: torch.Tensor) -> float:
    x, ref = x.double(), ref.double()
    return ((x - ref).norm() / ref.norm().clamp_min(1e-30)).item()


def random_extra(B, H, NB, K, gen):
    """Distinct entries per row drawn from [-1, NB + 1]: unused, valid, in-window, future and
    out-of-range indices all occur, as the contract allows."""
    rows = [torch.randperm(NB + 3, generator=gen)[:K] - 1 for _ in range(B * H * NB)]
    return torch.stack(rows).view(B, H, NB, K)


def dense_mask(T, block_size, causal, extra):
    """``[B|1, H|1, T, T]`` visibility mask, the naive way (window by block distance)."""
    qb = torch.arange(T) // block_size
    allowed = ((qb[:, None] - qb[None, :]).abs() <= 1)[None, None]
    if extra is not None:
        e = extra[:, :, qb]  # [B, H, T, K]
        allowed = allowed | (e[..., None] == qb).any(-2)
    if causal:
        allowed = allowed & torch.ones(T, T, dtype=torch.bool).tril()
    return allowed


def lowp_local(q, k, v, *, block_size, causal, extra, scale=None):
    """Plain PyTorch attention at the inputs' precision (flash-attention's ``upcast=False``):
    fp16 scores, softmax cast back to fp16, fp16 output."""
    scale = q.shape[-1] ** -0.5 if scale is None else scale
    s = torch.einsum("bqhd,bkhd->bhqk", q, k) * scale
    s = s.masked_fill(~dense_mask(q.shape[1], block_size, causal, extra), float("-inf"))
    p = torch.softmax(s.float(), -1).nan_to_num(0.0).to(q.dtype)
    return torch.einsum("bhqk,bkhd->bqhd", p, v)


def run_case(B, T, H, D, block_size, causal, num_extra, dtype, seed=0, scale=None):
    gen = torch.Generator().manual_seed(seed)
    q, k, v = (torch.randn(B, T, H, D, generator=gen).to(dtype) for _ in range(3))
    NB = -(-T // block_size)
    extra = random_extra(B, H, NB, num_extra, gen) if num_extra else None
    do = torch.randn(B, T, H, D, generator=gen).to(dtype)
    kw = {"block_size": block_size, "causal": causal, "extra_blocks": extra, "scale": scale}

    def fwd_bwd(fn, xs):
        xs = [x.detach().clone().requires_grad_() for x in xs]
        o = fn(*xs, **kw)
        return [o, *torch.autograd.grad(o, xs, do.to(o.dtype))]

    got = fwd_bwd(local_attn, (q, k, v))
    ref = fwd_bwd(local_attn_reference, (q.float(), k.float(), v.float()))
    names = ("o", "dq", "dk", "dv")
    if dtype == torch.float32:
        for name, g, r in zip(names, got, ref):
            assert rel_rms(g, r) <= FP32_REL_RMS, f"{name}: rel RMS {rel_rms(g, r):.2e}"
        return got, ref
    lowp = fwd_bwd(lambda *a, **kw_: lowp_local(*a, block_size=block_size, causal=causal,
                                                extra=extra, scale=scale), (q, k, v))
    for name, g, lp, r in zip(names, got, lowp, ref):
        assert g.dtype == dtype
        err, err_pt = rel_rms(g, r), rel_rms(lp, r)
        assert err <= 2 * err_pt + LOWP_FLOOR, f"{name}: {err:.2e} vs PyTorch fp16 {err_pt:.2e}"
    return got, ref


@pytest.mark.parametrize(
    "B, T, H, D, block_size, causal, num_extra, dtype",
    [
        (1, 255, 2, 32, 32, True, 0, torch.float32),
        (2, 333, 2, 48, 64, False, 3, torch.float32),
        (1, 511, 1, 64, 16, True, 2, torch.float16),
        (1, 333, 2, 128, 64, True, 2, torch.float16),
        (1, 255, 2, 64, 32, False, 0, torch.float16),
        (1, 100, 1, 32, 24, True, 2, torch.float32),  # block size not a power of two
    ],
)
def test_matches_reference(B, T, H, D, block_size, causal, num_extra, dtype):
    run_case(B, T, H, D, block_size, causal, num_extra, dtype)


@pytest.mark.parametrize("causal", [True, False])
def test_block_longer_than_tiles(causal):
    """A 64-token block split into 32-row query tiles and 16-key tiles (as 512..4096-token
    blocks are on a GPU), with an odd T so the last block is short."""
    with force_tiles("local_fwd", block_m=32, block_n=16), \
            force_tiles("local_bwd_dq", block_m=16, block_n=32), \
            force_tiles("local_bwd_dkdv", block_m=32, block_n=16):
        run_case(2, 201, 1, 32, 64, causal, 2, torch.float32, seed=1, scale=0.3)


def test_long_sequence_fp16():
    run_case(1, 1023, 1, 32, 64, True, 2, torch.float16, seed=2)


def test_no_grad_path_matches_grad_path():
    gen = torch.Generator().manual_seed(3)
    q, k, v = (torch.randn(1, 130, 2, 32, generator=gen) for _ in range(3))
    with torch.no_grad():
        o_nograd = local_attn(q, k, v, block_size=32)
    o_grad = local_attn(q.requires_grad_(), k, v, block_size=32)
    torch.testing.assert_close(o_nograd, o_grad.detach(), rtol=0, atol=0)


def test_rejects_bad_inputs():
    q = torch.randn(1, 64, 2, 32)
    with pytest.raises(InputError, match="shape"):
        local_attn(q, q[:, :32], q, block_size=16)
    with pytest.raises(InputError, match="head dim"):
        local_attn(q[..., :24], q[..., :24], q[..., :24], block_size=16)
    with pytest.raises(InputError, match="dtype"):
        local_attn(q.double(), q.double(), q.double(), block_size=16)
    with pytest.raises(InputError, match="extra_blocks"):
        local_attn(q, q, q, block_size=16, extra_blocks=torch.zeros(1, 2, 3, 1, dtype=torch.long))
    with pytest.raises(InputError, match="integer"):
        local_attn(q, q, q, block_size=16, extra_blocks=torch.zeros(1, 2, 4, 1))
    with pytest.raises(InputError, match="block_size"):
        local_attn(q, q, q, block_size=0)


def test_cpu_tensors_without_the_interpreter_run_the_reference(monkeypatch):
    """As docs/kernels.md says (and the other ops do): no Triton on CPU tensors unless
    TRITON_INTERPRET=1; any head dim the reference takes."""
    from genoctx.kernels.hybrid import hybrid_attn
    from genoctx.kernels.hybrid.reference import hybrid_attn_reference
    from genoctx.kernels.local_attn.reference import local_attn_reference

    monkeypatch.setenv("TRITON_INTERPRET", "0")
    q, k, v = (torch.randn(1, 40, 2, 24) for _ in range(3))
    gate = torch.rand(1, 40, 2)
    torch.testing.assert_close(local_attn(q, k, v, block_size=16, causal=False),
                               local_attn_reference(q, k, v, block_size=16, causal=False))
    o, state = hybrid_attn(q, k, v, gate, block_size=16, output_final_state=True)
    o_ref, state_ref = hybrid_attn_reference(q, k, v, gate, block_size=16,
                                             output_final_state=True)
    torch.testing.assert_close(o, o_ref)
    torch.testing.assert_close(state, state_ref)


@pytest.mark.parametrize("op", ["local", "hybrid"])
def test_a_gradient_penalty_is_refused_not_silently_wrong(op):
    """once_differentiable let torch.autograd.grad(penalty, w), w outside the kernel's inputs,
    treat the first gradient as a constant (1964.7 here, not the reference's value)."""
    from genoctx.kernels.hybrid import hybrid_attn

    q0, k, v = (torch.randn(1, 37, 1, 32) for _ in range(3))
    q, w = q0.clone().requires_grad_(), torch.ones(1, requires_grad=True)
    if op == "local":
        o = local_attn(q * w, k, v, block_size=16)
    else:
        o, _ = hybrid_attn(q * w, k, v, torch.rand(1, 37, 1), block_size=16)
    with pytest.raises(RuntimeError, match="second derivatives"):
        torch.autograd.grad(o.pow(2).sum(), q, create_graph=True)
    (g,) = torch.autograd.grad(o.pow(2).sum(), q)  # first order as before
    assert torch.isfinite(g).all()
