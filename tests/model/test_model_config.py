"""Flavour registry, validation, and the closed-form parameter counts against real modules."""

import dataclasses

import pytest
import torch

from genoctx.model import model as model_module
from genoctx.model.config import FLAVOURS, VOCAB_SIZE, ModelConfig, get_config
from genoctx.model.model import GenoCtxModel
from genoctx.tokenize import nucleotide


def test_token_ids_match_the_tokenizer():
    assert VOCAB_SIZE == nucleotide.VOCAB_SIZE
    assert model_module.BOS_ID == nucleotide.BOS
    assert model_module.PAD_ID == nucleotide.PAD


@pytest.mark.parametrize("name", list(FLAVOURS))
def test_closed_form_counts_match_meta_module(name):
    cfg = get_config(name)
    with torch.device("meta"):
        module = GenoCtxModel(cfg, backend="torch")
    total = sum(p.numel() for p in module.parameters())
    assert total == cfg.num_params()
    moe = module.layers[0].moe
    per_expert = (moe.w_gate_up.numel() + moe.w_down.numel()) // cfg.num_experts
    idle = cfg.num_layers * (cfg.num_experts - cfg.top_k) * per_expert
    assert cfg.num_active_params() == total - idle
    assert sum(cfg.param_breakdown().values()) == total
    attn = sum(p.numel() for p in module.layers[0].attn.parameters())
    assert attn == cfg.attention_params()


def test_tiny_is_cpu_sized():
    cfg = get_config("tiny")
    assert 1e6 <= cfg.num_params() <= 10e6
    assert cfg.causal and cfg.num_experts == 16 and cfg.top_k == 2


def test_glm_flavour_meets_the_published_total_and_caps_active():
    cfg = get_config("glm-5.3-flash")
    assert cfg.num_experts == 128 and cfg.top_k == 8
    assert abs(cfg.num_params() - 320e9) <= 0.03 * 320e9
    assert cfg.num_active_params() <= 30e9
    # The floor: K/E of the expert weights plus every always-on weight.
    floor = cfg.param_breakdown()["experts"] * cfg.top_k / cfg.num_experts
    assert cfg.num_active_params() == floor + cfg.always_on_params()
    assert cfg.num_active_params() / cfg.num_params() > 0.0625


@pytest.mark.parametrize("overrides, message", [
    (dict(num_heads=6, num_kv_heads=4), "multiple of num_kv_heads"),
    (dict(top_k=32), "cannot exceed num_experts"),
    (dict(block_size=64), "between 128 and 4096"),
    (dict(head_dim=31), "even"),
    (dict(d_model=0), "d_model must be >= 1"),
    (dict(top_k_blocks=-1), "top_k_blocks must be >= 0"),
    (dict(router="sigmoid"), "router must be one of"),
    (dict(d_model="128"), "d_model must be a whole number, got '128'"),
    (dict(num_layers=2.0), "num_layers must be a whole number"),
    (dict(causal="no"), "causal must be bool"),
    (dict(num_experts=True), "num_experts must be a whole number"),
    (dict(vocab_size=2), "vocab_size must be at least 9"),
])
def test_invalid_configs_raise_with_the_fix(overrides, message):
    with pytest.raises(ValueError, match=message):
        get_config("tiny", **overrides)


def test_unknown_flavour_and_keys():
    with pytest.raises(ValueError, match="choose one of"):
        get_config("huge")
    data = get_config("tiny").to_dict() | {"bogus": 1}
    with pytest.raises(ValueError, match="unknown model config keys"):
        ModelConfig.from_dict(data)


def test_dict_round_trip():
    cfg = get_config("base")
    assert ModelConfig.from_dict(cfg.to_dict()) == cfg
    assert dataclasses.replace(cfg, causal=False).to_dict()["causal"] is False


def test_activation_memory_is_bounded_by_the_segment():
    cfg = get_config("tiny")
    seg = 16384
    short = cfg.activation_bytes(1 << 20, seg)
    assert short == cfg.activation_bytes(1 << 24, seg)  # independent of the context length
    assert short < cfg.activation_bytes(1 << 20) / 10


def test_the_full_design_runs_forward_on_the_meta_device():
    """glm-5.3-flash (317 B) exists only on the meta device: its forward there gives the logits'
    shape (it stopped at the token-range check, then at value-dependent attention grouping and
    MoE counts), and a FLOP count of it is what the design promises: about 2 FLOPs per active
    parameter per token (27.45 B active), the same at 4,096 and 16,384 tokens, as attention that
    is O(n) in the context must be."""
    from torch.utils.flop_counter import FlopCounterMode

    cfg = get_config("glm-5.3-flash")
    with torch.device("meta"):
        module = GenoCtxModel(cfg)
    per_token = []
    for T in (4096, 16384):
        with FlopCounterMode(display=False) as fc:
            logits = module(torch.zeros(1, T, dtype=torch.long, device="meta"))
        assert logits.is_meta and logits.shape == (1, T, cfg.vocab_size)
        per_token.append(fc.get_total_flops() / T)
    assert per_token[0] == pytest.approx(per_token[1], rel=1e-3)
    active = 2 * cfg.num_active_params()
    assert active <= per_token[0] <= 1.02 * active
