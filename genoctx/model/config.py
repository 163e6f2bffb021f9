"""Model configuration, the flavour registry, and exact parameter arithmetic.

Legend: L layers, D d_model, H query heads, Hk kv heads, hd head dim, E experts, K experts per
token, F expert hidden size, Fs shared-expert hidden size, V vocabulary.

Parameters per layer (no biases except the gate's):

* attention: ``D·H·hd`` (q) ``+ 2·D·Hk·hd`` (k, v) ``+ H·hd·D`` (o) ``+ D·H + H`` (gate)
* norms: ``2·D``; router: ``D·E``
* routed experts: ``E · 3·D·F`` (SwiGLU: gate and up ``D×F`` each, down ``F×D``)
* shared expert: ``3·D·Fs``

plus ``V·D`` (embedding), ``D`` (final norm) and ``V·D`` (LM head, untied). A token uses every
weight except the ``E − K`` experts it is not routed to, so
``active = total − L·(E − K)·3·D·F``.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

# genoctx.tokenize.nucleotide.VOCAB_SIZE (PAD BOS EOS MASK A C G T N); a test keeps them equal.
VOCAB_SIZE = 9
BACKENDS = ("auto", "reference", "torch", "triton")
ROUTERS = ("softmax",)


@dataclass(kw_only=True)
class ModelConfig:
    """Hyper-parameters of :class:`genoctx.model.model.GenoCtxModel`.

    Attributes mirror the architecture in docs/model.md. ``block_size`` is the local-attention
    block; ``top_k_blocks`` the most extra far key blocks a (query block, head) may get;
    ``topk_window_blocks`` how many blocks beyond the halo are candidates for them.
    """

    name: str = "custom"
    vocab_size: int = VOCAB_SIZE
    d_model: int
    num_layers: int
    num_heads: int
    num_kv_heads: int
    head_dim: int
    block_size: int = 128
    top_k_blocks: int = 2
    topk_window_blocks: int = 8
    causal: bool = True
    rope_theta: float = 1_000_000.0
    num_experts: int
    top_k: int
    expert_dim: int
    shared_expert_dim: int = 0
    router: str = "softmax"
    aux_loss_coef: float = 1e-2
    z_loss_coef: float = 1e-3
    norm_eps: float = 1e-6
    init_std: float = 0.02

    def __post_init__(self) -> None:
        kinds = {"int": (int,), "float": (int, float), "bool": (bool,), "str": (str,)}
        for f in dataclasses.fields(self):  # a config.json written by hand: "d_model": "128"
            v, ok = getattr(self, f.name), kinds.get(str(f.type))
            if ok and (not isinstance(v, ok) or (isinstance(v, bool) and bool not in ok)):
                want = "a whole number" if f.type == "int" else f.type
                raise ValueError(f"{f.name} must be {want}, got {v!r}")
        if self.vocab_size < VOCAB_SIZE:
            raise ValueError(f"vocab_size must be at least {VOCAB_SIZE} (the nucleotide tokens), "
                             f"got {self.vocab_size}")
        positive = ("vocab_size", "d_model", "num_layers", "num_heads", "num_kv_heads", "head_dim",
                    "num_experts", "top_k", "expert_dim")
        for field in positive:
            if int(getattr(self, field)) < 1:
                raise ValueError(f"{field} must be >= 1, got {getattr(self, field)}")
        for field in ("top_k_blocks", "topk_window_blocks", "shared_expert_dim"):
            if int(getattr(self, field)) < 0:
                raise ValueError(f"{field} must be >= 0, got {getattr(self, field)}")
        if self.num_heads % self.num_kv_heads:
            raise ValueError(f"num_heads ({self.num_heads}) must be a multiple of num_kv_heads "
                             f"({self.num_kv_heads}); pick num_kv_heads among its divisors")
        if self.top_k > self.num_experts:
            raise ValueError(f"top_k ({self.top_k}) cannot exceed num_experts ({self.num_experts})")
        if not 128 <= self.block_size <= 4096:
            raise ValueError(f"block_size must be between 128 and 4096, got {self.block_size}")
        if self.head_dim % 2:
            raise ValueError(f"head_dim must be even for rotary positions, got {self.head_dim}")
        if self.router not in ROUTERS:
            raise ValueError(f"router must be one of {ROUTERS}, got {self.router!r}")
        if self.rope_theta <= 1:
            raise ValueError(f"rope_theta must be > 1, got {self.rope_theta}")

    # ---- derived sizes ------------------------------------------------------------------------
    @property
    def kv_groups(self) -> int:
        """Query heads per kv head."""
        return self.num_heads // self.num_kv_heads

    @property
    def carry_blocks(self) -> int:
        """Blocks of local context carried between segments: the halo plus the top-k window."""
        return 1 + (self.topk_window_blocks if self.top_k_blocks else 0)

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, data: dict) -> ModelConfig:
        """Build from :meth:`to_dict` output; unknown keys are an error (a newer format?)."""
        known = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(data) - known)
        if unknown:
            raise ValueError(f"unknown model config keys {unknown}; was the checkpoint written "
                             f"by a newer genoctx?")
        return cls(**data)

    # ---- parameter arithmetic -----------------------------------------------------------------
    def attention_params(self) -> int:
        """Parameters of one layer's hybrid attention (q, k, v, o projections and the gate)."""
        D, H, Hk, hd = self.d_model, self.num_heads, self.num_kv_heads, self.head_dim
        return D * H * hd + 2 * D * Hk * hd + H * hd * D + D * H + H

    def expert_params(self) -> int:
        """Parameters of one routed SwiGLU expert."""
        return 3 * self.d_model * self.expert_dim

    def layer_params(self) -> dict[str, int]:
        """Per-layer parameter counts by part."""
        D = self.d_model
        return {"attention": self.attention_params(), "norms": 2 * D,
                "router": D * self.num_experts,
                "experts": self.num_experts * self.expert_params(),
                "shared_expert": 3 * D * self.shared_expert_dim}

    def param_breakdown(self) -> dict[str, int]:
        """Whole-model parameter counts by part (summing to :meth:`num_params`)."""
        L = self.num_layers
        parts = {k: L * v for k, v in self.layer_params().items()}
        parts["embedding"] = self.vocab_size * self.d_model
        parts["final_norm"] = self.d_model
        parts["lm_head"] = self.vocab_size * self.d_model
        return parts

    def num_params(self) -> int:
        """Total parameters (closed form; equals the module's numel)."""
        return sum(self.param_breakdown().values())

    def num_active_params(self) -> int:
        """Parameters a token uses: everything but the experts it is not routed to."""
        idle = self.num_layers * (self.num_experts - self.top_k) * self.expert_params()
        return self.num_params() - idle

    def always_on_params(self) -> int:
        """Parameters every token uses whatever the routing (all but the routed experts)."""
        return self.num_params() - self.param_breakdown()["experts"]


    # ---- memory arithmetic --------------------------------------------------------------------
    def activation_values(self, tokens: int) -> int:
        """Peak live activation values of an inference pass over ``tokens`` (batch 1).

        One layer is live at a time: the residual stream ``T·D`` plus the larger of the two
        phases. Attention: q, k, v expanded to H heads, the gate, the local and linear outputs
        and the linear-attention chunk states (chunk 64):
        ``T·(5·H·hd + H) + (T/64)·H·hd²``. MoE: routed inputs and outputs, gate/up and SwiGLU
        rows, router probabilities (fp32, two values each) and the shared expert:
        ``T·(2·K·D + 3·K·F + 2·E + 3·Fs)``. Local-attention scores are not counted: the
        SDPA/Triton paths keep them per block in cache or on-chip.
        """
        H, hd, D = self.num_heads, self.head_dim, self.d_model
        attn = tokens * (5 * H * hd + H) + -(-tokens // 64) * H * hd * hd
        moe = tokens * (2 * self.top_k * D + 3 * self.top_k * self.expert_dim
                        + 2 * self.num_experts + 3 * self.shared_expert_dim)
        return tokens * D + max(attn, moe)

    def activation_bytes(self, tokens: int, segment_len: int | None = None,
                         bytes_per_value: int = 2) -> int:
        """:meth:`activation_values` in bytes; segmented passes hold one segment plus the
        carried ``carry_blocks`` blocks per layer (the returned outputs are not counted)."""
        if segment_len is None or segment_len >= tokens:
            return self.activation_values(tokens) * bytes_per_value
        carry_tokens = self.carry_blocks * self.block_size
        H, Hk, hd = self.num_heads, self.num_kv_heads, self.head_dim
        carry = self.num_layers * carry_tokens * ((H + 2 * Hk) * hd + H) + \
            self.num_layers * H * hd * (hd + 1)  # carried q, k, v, gate and (S, z) per layer
        return (self.activation_values(segment_len + carry_tokens) + carry) * bytes_per_value


FLAVOURS: dict[str, ModelConfig] = {}


def _register(cfg: ModelConfig) -> None:
    FLAVOURS[cfg.name] = cfg


# CPU-trainable default (the embedded checkpoint). Sized so that segmented inference over
# 1,048,576 tokens fits the CPU budget of benchmarks/model_cpu.py: two 32-wide heads (local
# attention is the largest cost per token) and no kv grouping (at this width the expansion copy
# costs more than the weights it saves).
_register(ModelConfig(
    name="tiny", d_model=128, num_layers=4, num_heads=2, num_kv_heads=2, head_dim=32,
    block_size=128, top_k_blocks=2, topk_window_blocks=8,
    num_experts=16, top_k=2, expert_dim=128, shared_expert_dim=0,
))
_register(ModelConfig(
    name="small", d_model=512, num_layers=8, num_heads=8, num_kv_heads=2, head_dim=64,
    block_size=128, top_k_blocks=4, topk_window_blocks=16,
    num_experts=32, top_k=4, expert_dim=256, shared_expert_dim=512,
))
_register(ModelConfig(
    name="base", d_model=1024, num_layers=16, num_heads=16, num_kv_heads=4, head_dim=64,
    block_size=256, top_k_blocks=4, topk_window_blocks=32,
    num_experts=64, top_k=4, expert_dim=512, shared_expert_dim=1024,
))
# 128 experts, top-8: ~320B total. Only ever built on the meta device here.
_register(ModelConfig(
    name="glm-5.3-flash", d_model=6144, num_layers=64, num_heads=48, num_kv_heads=8, head_dim=128,
    block_size=512, top_k_blocks=8, topk_window_blocks=64,
    num_experts=128, top_k=8, expert_dim=2048, shared_expert_dim=2048,
))


def get_config(name: str, **overrides) -> ModelConfig:
    """A copy of the named flavour, with ``overrides`` applied (validated again)."""
    if name not in FLAVOURS:
        raise ValueError(f"unknown model flavour {name!r}; choose one of {', '.join(FLAVOURS)}")
    return dataclasses.replace(FLAVOURS[name], **overrides)
