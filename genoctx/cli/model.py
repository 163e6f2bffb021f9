"""``genoctx model info``: architecture, exact parameter counts and memory arithmetic."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import typer

from genoctx.errors import GenoctxError

CONTEXT_TOKENS = 1 << 20
SEGMENT_LEN = 16384


def _load_config(config: str | None, model: str | None):
    from genoctx.model import checkpoint
    from genoctx.model.config import get_config

    if config and model:
        raise GenoctxError("give --config NAME or --model PATH, not both")
    if model:
        directory = checkpoint.resolve_checkpoint(model)
        return checkpoint.read_config(directory), str(directory)
    try:
        return get_config(config or "tiny"), f"flavour {config or 'tiny'}"
    except ValueError as exc:
        raise GenoctxError(str(exc)) from exc


def _meta_numel(cfg) -> tuple[int, int]:
    """``(total, one expert)`` counted on meta-device modules (no memory is allocated).

    The layers are all alike, so modules of one and two layers give the rest and the cost of
    one more layer; building all of them would take minutes for a config of a million layers.
    """
    import torch

    from genoctx.model.model import GenoCtxModel

    counts = []
    with torch.device("meta"):
        for layers in (1, 2):
            module = GenoCtxModel(dataclasses.replace(cfg, num_layers=layers), backend="torch")
            counts.append(sum(p.numel() for p in module.parameters()))
    moe = module.layers[0].moe
    per_expert = (moe.w_gate_up.numel() + moe.w_down.numel()) // cfg.num_experts
    return counts[0] + (cfg.num_layers - 1) * (counts[1] - counts[0]), per_expert


def model_summary(cfg, source: str) -> dict:
    """Everything ``model info`` reports, as plain numbers."""
    total, per_expert = _meta_numel(cfg)
    if total != cfg.num_params() or per_expert != cfg.expert_params():
        raise AssertionError(f"closed-form count {cfg.num_params()} != module numel {total}")
    parts = cfg.param_breakdown()
    routed = parts["experts"]
    seg = max(cfg.block_size, SEGMENT_LEN // cfg.block_size * cfg.block_size)
    return {
        "name": cfg.name, "source": source, "num_layers": cfg.num_layers,
        "d_model": cfg.d_model, "num_heads": cfg.num_heads, "num_kv_heads": cfg.num_kv_heads,
        "head_dim": cfg.head_dim, "block_size": cfg.block_size,
        "top_k_blocks": cfg.top_k_blocks, "topk_window_blocks": cfg.topk_window_blocks,
        "causal": cfg.causal, "num_experts": cfg.num_experts, "top_k": cfg.top_k,
        "expert_dim": cfg.expert_dim, "shared_expert_dim": cfg.shared_expert_dim,
        "vocab_size": cfg.vocab_size, "total_params": total,
        "active_params": cfg.num_active_params(),
        "active_fraction": cfg.num_active_params() / total,
        "routed_expert_params": routed,
        "routed_active_params": routed * cfg.top_k // cfg.num_experts,
        "always_on_params": cfg.always_on_params(), "param_breakdown": parts,
        "weight_bytes_bf16": 2 * total,
        "context_tokens": CONTEXT_TOKENS, "segment_len": seg,
        "activation_bytes_full_bf16": cfg.activation_bytes(CONTEXT_TOKENS),
        "activation_bytes_segmented_bf16": cfg.activation_bytes(CONTEXT_TOKENS, seg),
    }


def _b(n: float) -> str:
    for unit, scale in (("T", 1e12), ("B", 1e9), ("M", 1e6), ("K", 1e3)):
        if n >= scale:
            return f"{n / scale:.2f} {unit}"
    return str(int(n))


def _gib(n: float) -> str:
    return f"{n / 2**30:.2f} GiB"


def format_summary(s: dict) -> str:
    """Human-readable ``model info`` text, including the active-parameter arithmetic."""
    p = s["param_breakdown"]
    L, E, K = s["num_layers"], s["num_experts"], s["top_k"]
    always = {k: v for k, v in p.items() if k != "experts"}
    lines = [
        f"model {s['name']} ({s['source']})",
        f"  layers {L}, d_model {s['d_model']}, heads {s['num_heads']} (kv heads "
        f"{s['num_kv_heads']}, head_dim {s['head_dim']}), vocab {s['vocab_size']}",
        f"  local attention: block {s['block_size']} + up to {s['top_k_blocks']} top-k blocks of "
        f"{s['topk_window_blocks']}; {'causal' if s['causal'] else 'bidirectional'}",
        f"  experts {E}, top-{K}, expert hidden {s['expert_dim']}, shared expert hidden "
        f"{s['shared_expert_dim']}",
        "parameters",
        f"  total {_b(s['total_params'])} ({s['total_params']:,}; meta-device numel = closed form)",
        f"  active per token {_b(s['active_params'])} ({s['active_params']:,}; "
        f"{100 * s['active_fraction']:.2f}%)",
        f"  weights in bf16 {_gib(s['weight_bytes_bf16'])}",
        "active-parameter arithmetic",
        f"  routed experts: {L} layers x {E} x 3*{s['d_model']}*{s['expert_dim']} = "
        f"{_b(s['routed_expert_params'])}; a token uses {K}/{E} = {100 * K / E:.2f}% of them = "
        f"{_b(s['routed_active_params'])}",
        "  always-on: " + " + ".join(f"{k} {_b(v)}" for k, v in always.items() if v) +
        f" = {_b(s['always_on_params'])}",
        f"  active = {_b(s['routed_active_params'])} + {_b(s['always_on_params'])} = "
        f"{_b(s['active_params'])}",
        f"  floor: with {K} of {E} equal experts at least {100 * K / E:.2f}% of the expert weights "
        f"are active before any always-on weight" + (
            f"; a quoted 18B-active (6%) at this size cannot be met (the routed experts alone "
            f"give {_b(s['routed_active_params'])})" if s["total_params"] > 1e11 else ""),
        f"activation memory at {s['context_tokens']:,} tokens (inference, bf16, batch 1; "
        f"formula in docs/model.md)",
        f"  full forward {_gib(s['activation_bytes_full_bf16'])}; segmented "
        f"({s['segment_len']:,}-token segments) {_gib(s['activation_bytes_segmented_bf16'])} "
        f"+ the outputs returned",
    ]
    return "\n".join(lines)


def info(
    config: str = typer.Option(None, "--config", "-c",
                               help="Flavour name: tiny, small, base, glm-5.3-flash."),
    model: Path = typer.Option(None, "--model", "-m",
                               help="Checkpoint directory (reads its config.json only)."),
    as_json: bool = typer.Option(False, "--json", help="Print JSON instead of text."),
) -> None:
    """Layers, heads, experts, exact total/active parameters and memory of a model.

    Example: genoctx model info --config glm-5.3-flash
    """
    from genoctx.cli.common import model_choice

    cfg, source = _load_config(config, model_choice(str(model)) if model else None)
    summary = model_summary(cfg, source)
    typer.echo(json.dumps(summary, indent=2) if as_json else format_summary(summary))


def register(app: typer.Typer) -> None:
    group = typer.Typer(help="Inspect model flavours and checkpoints.", no_args_is_help=True)
    group.command("info")(info)
    app.add_typer(group, name="model")
