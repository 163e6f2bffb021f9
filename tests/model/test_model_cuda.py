"""The model on a CUDA device (skipped without one): same numbers as on the CPU, segmented
inference, the torch._grouped_mm path in bf16, and the Triton backend when it is installed."""

import pytest
import torch

from genoctx.kernels.moe.reference import grouped_mm_reference
from genoctx.model.attention import triton_op
from genoctx.model.model import GenoCtxModel
from genoctx.model.moe import _torch_grouped_mm_works, grouped_mm_torch

from model_testutil import random_tokens, small_config

pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")


def _pair(backend="auto", **overrides):
    """The same weights on the CPU (torch path) and on the GPU; head_dim 32 suits the kernels."""
    overrides = dict(d_model=64, head_dim=32) | overrides
    torch.manual_seed(0)
    cpu = GenoCtxModel(small_config(**overrides), backend="torch").eval()
    gpu = GenoCtxModel(small_config(**overrides), backend=backend).eval()
    gpu.load_state_dict(cpu.state_dict())
    return cpu, gpu.cuda()


@pytest.fixture(autouse=True)
def _exact_fp32():
    old = torch.backends.cuda.matmul.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = False
    yield
    torch.backends.cuda.matmul.allow_tf32 = old


@pytest.mark.parametrize("backend", ["torch", "reference", "auto"])
def test_cuda_matches_cpu_and_segments(backend):
    cpu, gpu = _pair(backend)
    x = random_tokens(2, 1100)
    want = cpu.hidden_states(x)
    full = gpu.hidden_states(x.cuda())
    torch.testing.assert_close(full.cpu(), want, atol=1e-4, rtol=0)
    torch.testing.assert_close(gpu.hidden_states(x.cuda(), segment_len=256), full,
                               atol=1e-4, rtol=0)


def test_cuda_embed_is_rc_equivariant():
    _, gpu = _pair()
    x = random_tokens(1, 700).cuda()
    from genoctx.tokenize.nucleotide import reverse_complement

    e, e_rc = gpu.embed(x, segment_len=256), gpu.embed(reverse_complement(x, dim=1))
    D = gpu.config.d_model
    torch.testing.assert_close(e_rc, torch.cat([e[..., D:], e[..., :D]], -1).flip(1),
                               atol=1e-4, rtol=0)


def test_cuda_grouped_mm_bf16():
    gen = torch.Generator().manual_seed(0)
    x = torch.randn(96, 64, generator=gen).cuda().bfloat16()
    w = torch.randn(4, 64, 32, generator=gen).cuda().bfloat16()
    counts = torch.tensor([30, 0, 50, 16], device="cuda")
    got = grouped_mm_torch(x, w, counts).float()
    want = grouped_mm_reference(x.float(), w.float(), counts)
    assert (got - want).norm() / want.norm() < 1e-2
    major, _ = torch.cuda.get_device_capability()
    if major >= 9:  # Hopper and later run torch._grouped_mm in bf16
        assert _torch_grouped_mm_works("cuda", torch.bfloat16, 64, 32)


def test_cuda_bf16_forward_tracks_fp32():
    cpu, gpu = _pair()
    x = random_tokens(1, 900).cuda()
    ref = gpu(x).float()
    low = gpu.to(torch.bfloat16)(x).float()
    assert torch.isfinite(low).all()
    assert (low - ref).norm() / ref.norm() < 5e-2


@pytest.mark.skipif(triton_op("hybrid", "hybrid_attn") is None
                    or triton_op("moe", "grouped_mm") is None,
                    reason="Triton kernels not installed")
def test_cuda_triton_backend_matches_torch():
    _, torch_gpu = _pair("torch")
    _, triton_gpu = _pair("triton")
    x = random_tokens(2, 1100).cuda()
    want = torch_gpu.hidden_states(x)
    torch.testing.assert_close(triton_gpu.hidden_states(x), want, atol=1e-3, rtol=0)
    torch.testing.assert_close(triton_gpu.hidden_states(x, segment_len=256), want,
                               atol=1e-3, rtol=0)
    triton_gpu.train()
    triton_gpu.lm_loss(x)["loss"].backward()
    assert all(p.grad is not None and torch.isfinite(p.grad).all()
               for p in triton_gpu.parameters())
