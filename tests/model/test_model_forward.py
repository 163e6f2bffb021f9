"""The model end to end: segmented == full, likelihoods, RC-equivariant embeddings, gradients."""

import pytest
import torch
import torch.nn.functional as F

from genoctx.model.attention import attention_ops
from genoctx.model.model import BOS_ID, GenoCtxModel
from genoctx.tokenize.nucleotide import reverse_complement

from model_testutil import random_tokens, small_config

ATOL = 1e-5


def _model(backend="torch", **overrides) -> GenoCtxModel:
    torch.manual_seed(0)
    return GenoCtxModel(small_config(**overrides), backend=backend).eval()


@pytest.mark.parametrize("backend", ["torch", "reference"])
def test_segmented_equals_full(backend):
    model = _model(backend)
    x = random_tokens(2, 1100)  # 8.6 blocks: a short last block and carries of 4 blocks
    full = model.hidden_states(x)
    for seg in (128, 384, 640):
        torch.testing.assert_close(model.hidden_states(x, segment_len=seg), full, atol=ATOL, rtol=0)
    ll = model.log_likelihood(x)
    torch.testing.assert_close(model.log_likelihood(x, segment_len=256), ll, atol=ATOL, rtol=0)


def test_backends_agree():
    x = random_tokens(1, 700, seed=3)
    torch.testing.assert_close(_model("torch").hidden_states(x),
                               _model("reference").hidden_states(x), atol=ATOL, rtol=0)


def test_carry_does_not_grow_with_the_sequence():
    model = _model()
    layer = model.layers[0].attn
    ops = attention_ops("torch", torch.device("cpu"))
    x = torch.randn(1, 256, 32)
    carry = None
    with torch.inference_mode():
        for step in range(5):
            _, carry = layer(x, start=256 * step, carry=carry, keep_carry=True, ops=ops)
            keep = model.config.carry_blocks * model.config.block_size
            kept = min(keep, 256 * (step + 1))  # whole segments until the window is full
            assert carry.q.shape[2] == carry.k.shape[2] == carry.g.shape[2] == kept
            assert carry.state[0].shape == (1, 4, 8, 8)


def test_hidden_train_is_the_differentiable_hidden_states():
    model = _model()
    x = random_tokens(1, 300, seed=7)
    h = model.hidden_train(x)
    assert h.requires_grad
    torch.testing.assert_close(h.detach(), model.hidden_states(x), atol=ATOL, rtol=0)


def test_log_likelihood_is_next_token_log_softmax():
    model = _model()
    x = random_tokens(2, 300, seed=1)
    inp = torch.cat([torch.full_like(x[:, :1], BOS_ID), x[:, :-1]], 1)
    with torch.no_grad():
        logp = F.log_softmax(model(inp), -1)
    want = logp.gather(-1, x[..., None])[..., 0]
    torch.testing.assert_close(model.log_likelihood(x), want, atol=ATOL, rtol=0)
    loss = model.lm_loss(x)
    torch.testing.assert_close(loss["lm"], -want.mean(), atol=ATOL, rtol=0)


def test_embed_is_rc_equivariant_and_keeps_the_strand():
    model = _model()
    x = random_tokens(2, 500, seed=2)
    e = model.embed(x, segment_len=256)
    e_rc = model.embed(reverse_complement(x, dim=1))
    D = model.config.d_model
    assert e.shape == (2, 500, 2 * D)
    swapped = torch.cat([e[..., D:], e[..., :D]], -1).flip(1)
    torch.testing.assert_close(e_rc, swapped, atol=ATOL, rtol=0)
    assert (e[..., :D] - e[..., D:]).abs().max() > 1e-2  # not an RC-invariant average


def test_embed_halves_are_the_two_strand_passes():
    model = _model()
    x = random_tokens(1, 300, seed=4)
    bos = torch.full_like(x[:, :1], BOS_ID)
    fwd = model.hidden_states(torch.cat([bos, x], 1))[:, 1:]
    rev = model.hidden_states(torch.cat([bos, reverse_complement(x, dim=1)], 1))[:, 1:].flip(1)
    e = model.embed(x)
    torch.testing.assert_close(e, torch.cat([fwd, rev], -1), atol=ATOL, rtol=0)


@pytest.mark.parametrize("workers, segment_len", [(1, None), (2, 256)])
def test_a_padded_batch_embeds_each_row_as_alone(workers, segment_len):
    """Rows of different lengths padded to one batch: the reverse strand of a padded row was
    rc(bases + pads) = pads + rc(bases), so it read the padding before the bases (up to 4.3
    off on the embedded model); each row's bases now embed as they do alone, on both halves."""
    model = _model()
    rows = [random_tokens(1, n, seed=n)[0] for n in (700, 300, 513)]
    batch = torch.zeros(len(rows), 700, dtype=torch.long)  # <pad> is 0
    for b, r in enumerate(rows):
        batch[b, :len(r)] = r
    got = model.embed(batch, segment_len=segment_len, workers=workers)
    for b, r in enumerate(rows):
        alone = model.embed(r[None], segment_len=segment_len, workers=workers)[0]
        torch.testing.assert_close(got[b, :len(r)], alone, atol=ATOL, rtol=0)
    with pytest.raises(ValueError, match="token ids must lie in 0..8"):
        reverse_complement(torch.tensor([4, 12]), dim=0)


def test_embed_strands_in_two_workers_equal_one_batch():
    """workers=2 runs the strands in two threads: same embeddings up to rounding, the progress
    total of the batched pass, torch's thread count restored, a worker's error raised."""
    model = _model()
    x = random_tokens(2, 700, seed=6)
    steps = {1: [], 2: []}
    got = {w: model.embed(x, segment_len=256, progress=steps[w].append, workers=w) for w in (1, 2)}
    torch.testing.assert_close(got[2], got[1], atol=ATOL, rtol=0)
    assert sum(steps[1]) == sum(steps[2]) == 701 and all(n > 0 for n in steps[2])
    threads = torch.get_num_threads()
    with pytest.raises(ValueError, match="segment"):
        model.embed(x, segment_len=100, workers=2)  # not block-aligned: raised in a worker
    assert torch.get_num_threads() == threads


@pytest.mark.parametrize("backend", ["torch", "reference"])
def test_gradients_reach_every_parameter(backend):
    model = _model(backend).train()
    x = random_tokens(2, 640, seed=5)
    model.lm_loss(x)["loss"].backward()
    for name, p in model.named_parameters():
        assert p.grad is not None, name
        assert torch.isfinite(p.grad).all(), name
        assert p.grad.abs().sum() > 0, name
    for block in model.layers:  # every expert that received tokens learns
        counts = torch.tensor(block.moe.stats["tokens_per_expert"])
        per_expert = block.moe.w_gate_up.grad.abs().flatten(1).sum(1)
        assert ((per_expert > 0) == (counts > 0)).all()


def test_bidirectional_full_forward():
    model = _model(causal=False)
    ref = _model("reference", causal=False)
    x = random_tokens(1, 520, seed=6)
    with torch.no_grad():
        a = model(x)
        torch.testing.assert_close(a, ref(x), atol=ATOL, rtol=0)
        y = x.clone()
        y[0, 450] = 4 if int(y[0, 450]) != 4 else 5
        assert (model(y)[:, :300] - a[:, :300]).abs().max() > 1e-6  # sees the right side
    with pytest.raises(ValueError, match="needs a causal model"):
        model.hidden_states(x, segment_len=256)
    with pytest.raises(ValueError, match="bidirectional model"):
        model.log_likelihood(x)


def test_input_validation():
    model = _model()
    with pytest.raises(ValueError, match="multiple of block_size"):
        model.hidden_states(random_tokens(1, 600), segment_len=200)
    with pytest.raises(ValueError, match=r"token ids must lie in \[0, 9\)"):
        model(torch.tensor([[4, 5, 9]]))
    with pytest.raises(ValueError, match="integer tensor"):
        model(torch.zeros(1, 3))
    with pytest.raises(ValueError, match="backend must be one of"):
        GenoCtxModel(small_config(), backend="fast")
    # a sequence string, and bool ids (which read as <pad>/<bos>), say what to give instead
    with pytest.raises(TypeError, match="nucleotide.encode"):
        model.embed("ACGTACGT")
    with pytest.raises(ValueError, match="integer tensor"):
        model(torch.ones(1, 3, dtype=torch.bool))
    if not torch.cuda.is_available():
        from genoctx.errors import InputError

        with pytest.raises(InputError, match="no CUDA device is available here"):
            GenoCtxModel.from_pretrained("embedded", device="cuda")


def test_routing_stats_after_forward():
    model = _model()
    model.hidden_states(random_tokens(1, 300))
    stats = model.routing_stats()
    assert len(stats) == 2
    assert all(sum(s["tokens_per_expert"]) == 300 * 2 and s["dropped"] == 0 for s in stats)


def test_rmsnorm_inference_path_equals_torchs():
    from genoctx.model.model import RMSNorm

    torch.manual_seed(3)
    norm = RMSNorm(48, eps=1e-6)
    with torch.no_grad():
        norm.weight.copy_(torch.rand(48) + 0.5)
    x = torch.randn(2, 33, 48) * 3
    want = torch.nn.RMSNorm.forward(norm, x)  # torch's own path, under grad
    with torch.inference_mode():
        got = norm(x)
    torch.testing.assert_close(got, want.detach(), atol=1e-6, rtol=1e-6)
    assert set(norm.state_dict()) == {"weight"}


def test_cpu_workers_default_and_devices():
    """One default for every worker-thread user: torch's threads on CPU, at most
    MAX_CPU_WORKERS, an explicit count kept, and 1 on other devices."""
    from genoctx.model.workers import MAX_CPU_WORKERS, cpu_workers

    threads = torch.get_num_threads()
    assert cpu_workers("cpu") == max(1, min(threads, MAX_CPU_WORKERS))
    assert cpu_workers(torch.device("cpu"), 3) == 3
    assert cpu_workers("cpu", 0) == 1
    assert cpu_workers("meta", 3) == 1


def test_the_embedded_model_under_autocast_and_torch_compile():
    """CPU bf16 autocast failed in the local attention (an fp32 buffer given bf16 rows), and
    torch.compile in the MoE grouped matmul (torch._grouped_mm's compile-time check takes
    only bf16 on the CPU, though it runs fp32 eagerly)."""
    model = GenoCtxModel.from_pretrained("embedded")
    x = torch.randint(4, 8, (1, 512), generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        want = model(x)
        with torch.autocast("cpu", dtype=torch.bfloat16):
            low = model(x)
        compiled = torch.compile(model, backend="aot_eager")(x)  # no C++ toolchain needed
    assert low.dtype == torch.bfloat16
    assert ((low.float() - want).norm() / want.norm()) < 0.05
    torch.testing.assert_close(compiled, want, atol=1e-5, rtol=1e-5)
