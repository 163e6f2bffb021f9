"""GenoCtxModel: a causal nucleotide LM with hybrid attention and MoE feed-forwards.

Legend: B batch, T tokens, D d_model, V vocabulary.

Each block is ``x += attn(rmsnorm(x)); x += moe(rmsnorm(x))``; a final RMSNorm feeds an untied
LM head (``D × V``: 9 rows, so tying would save nothing and would couple the input and output
token spaces). The objective is next-token cross-entropy; position 0 is predicted from BOS.

Long inputs are processed in block-aligned segments (causal mode): each layer carries the last
blocks of rotated q, k, v and gate for the local/top-k ops and the linear-attention state, so a
segmented pass equals the full forward while memory stays bounded by the segment length plus
the outputs returned.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import torch
import torch.nn as nn
import torch.nn.functional as F

from genoctx.errors import InputError
from genoctx.model import checkpoint
from genoctx.model.attention import AttnCarry, HybridAttention, attention_ops, check_backend
from genoctx.model.config import ModelConfig, get_config
from genoctx.model.moe import MoE, moe_ops
from genoctx.model.rope import rope_freqs
from genoctx.model.workers import in_order

BOS_ID = 1  # genoctx.tokenize.nucleotide.BOS (a test keeps them equal)
PAD_ID = 0

Progress = Callable[[int], None]


class RMSNorm(nn.RMSNorm):
    """``nn.RMSNorm`` (same parameters and state dict) with a faster no-grad path: the mean
    square as one ``vecdot`` and the scaling in place. On the CPU torch composes RMSNorm from
    pow, mean, rsqrt and two multiplies, each a pass over the activations. Alone, at the
    embedded model's shapes, this takes 40% of the time; inside the model the norms' share
    drops by about a fifth (``python benchmarks/model_cpu_parts.py``). The numbers are the
    same up to rounding. Training keeps torch's own path."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if (torch.is_grad_enabled() or x.is_meta or x.dtype != torch.float32
                or len(self.normalized_shape) != 1):
            return super().forward(x)
        eps = torch.finfo(x.dtype).eps if self.eps is None else self.eps
        inv = torch.linalg.vecdot(x, x).div_(x.shape[-1]).add_(eps).rsqrt_()
        y = x * inv[..., None]
        return y.mul_(self.weight) if self.weight is not None else y


class Block(nn.Module):
    """One pre-norm layer: hybrid attention, then the MoE feed-forward, residual around both."""

    def __init__(self, cfg: ModelConfig):
        super().__init__()
        self.attn_norm = RMSNorm(cfg.d_model, eps=cfg.norm_eps)
        self.attn = HybridAttention(cfg)
        self.moe_norm = RMSNorm(cfg.d_model, eps=cfg.norm_eps)
        self.moe = MoE(cfg)

    def forward(self, x_BTD, *, start, freqs, carry, keep_carry, attn_ops, moe_ops):
        a, carry = self.attn(self.attn_norm(x_BTD), start=start, freqs=freqs, carry=carry,
                             keep_carry=keep_carry, ops=attn_ops)
        x_BTD = x_BTD + a
        return x_BTD + self.moe(self.moe_norm(x_BTD), ops=moe_ops), carry


def _state_mismatch(want: dict, got: dict) -> str:
    """One line on how a state dict differs from a model's: missing, unexpected and reshaped
    tensors, counted, with the first of each named (torch's own message lists them all)."""
    missing = [k for k in want if k not in got]
    extra = [k for k in got if k not in want]
    shaped = [f"{k} {list(got[k].shape)} vs {list(want[k].shape)}" for k in want
              if k in got and tuple(got[k].shape) != tuple(want[k].shape)]
    parts = [f"{len(v)} {what} (first: {v[0]})" for what, v in
             (("tensor(s) missing", missing), ("unexpected", extra),
              ("of another shape, weights vs config", shaped)) if v]
    return "; ".join(parts) or "the tensors do not load"


class GenoCtxModel(nn.Module):
    """``tokens [B, T] -> logits [B, T, V]``, plus segmented likelihoods and embeddings.

    Args:
        config: the architecture (see :mod:`genoctx.model.config`).
        backend: ``auto`` | ``reference`` | ``torch`` | ``triton`` (see :mod:`.attention`).
    """

    def __init__(self, config: ModelConfig, *, backend: str = "auto"):
        super().__init__()
        self.config = config
        self.backend = check_backend(backend)
        self.embed_tokens = nn.Embedding(config.vocab_size, config.d_model)
        self.layers = nn.ModuleList(Block(config) for _ in range(config.num_layers))
        self.norm = RMSNorm(config.d_model, eps=config.norm_eps)
        self.lm_head = nn.Linear(config.d_model, config.vocab_size, bias=False)
        self.reset_parameters()

    # ---- construction -------------------------------------------------------------------------
    def reset_parameters(self) -> None:
        """Normal(0, init_std) weights; residual outputs scaled by 1/sqrt(2L); gate bias 0."""
        std = self.config.init_std
        out_std = std / math.sqrt(2 * self.config.num_layers)
        for name, p in self.named_parameters():
            if "norm" in name:
                nn.init.ones_(p)
            elif name.endswith("gate.bias"):
                nn.init.zeros_(p)  # g = 0.5: both branches start with equal weight
            elif name.endswith(("wo.weight", "w_down", "w_down.weight")):
                nn.init.normal_(p, std=out_std)
            else:
                nn.init.normal_(p, std=std)

    @classmethod
    def from_config(cls, config: ModelConfig | str, *, backend: str = "auto",
                    device: str | torch.device | None = None) -> GenoCtxModel:
        """A randomly initialised model of a flavour name or a :class:`ModelConfig`."""
        cfg = get_config(config) if isinstance(config, str) else config
        with torch.device(device or "cpu"):
            return cls(cfg, backend=backend)

    @classmethod
    def from_pretrained(cls, path_or_name: str | Path = checkpoint.EMBEDDED, *,
                        device: str | torch.device = "cpu", backend: str = "auto") -> GenoCtxModel:
        """Load a checkpoint directory (or ``"embedded"``) after checking its sha256."""
        if str(device).startswith("cuda") and not torch.cuda.is_available():
            raise InputError(f"device {device!r} was asked for, but no CUDA device is "
                             "available here; use device='cpu'")
        config, state, _ = checkpoint.read_checkpoint(path_or_name, device="cpu")
        with torch.device("meta"):
            model = cls(config, backend=backend)
        try:
            model.load_state_dict(state, strict=True, assign=True)
        except RuntimeError:
            raise InputError(f"checkpoint {path_or_name} does not fit its config.json: "
                             f"{_state_mismatch(model.state_dict(), state)}") from None
        return model.to(device).eval()

    def save_pretrained(self, directory: str | Path) -> Path:
        """Write ``model.safetensors``, ``model.safetensors.sha256`` and ``config.json``."""
        return checkpoint.write_checkpoint(directory, self.state_dict(), self.config)

    # ---- core ---------------------------------------------------------------------------------
    @property
    def device(self) -> torch.device:
        return self.embed_tokens.weight.device

    def _ops(self):
        return (attention_ops(self.backend, self.device, self.config.head_dim),
                moe_ops(self.backend, self.device))

    def _check_tokens(self, tokens) -> torch.Tensor:
        if isinstance(tokens, (str, bytes)):
            raise TypeError("tokens are token ids [B, T], not a sequence string: encode it with "
                            "genoctx.tokenize.nucleotide.encode(seq) (and add a batch axis)")
        tokens = torch.as_tensor(tokens, device=self.device)
        if (tokens.ndim != 2 or tokens.dtype.is_floating_point or tokens.dtype == torch.bool
                or tokens.numel() == 0):
            raise ValueError(f"tokens must be a non-empty integer tensor [B, T], got "
                             f"{tuple(tokens.shape)} {tokens.dtype}")
        if tokens.is_meta:  # shapes only (the full-size configs): no values to check
            return tokens.long()
        if int(tokens.min()) < 0 or int(tokens.max()) >= self.config.vocab_size:
            raise ValueError(f"token ids must lie in [0, {self.config.vocab_size}); tokenize with "
                             f"genoctx.tokenize.nucleotide")
        return tokens.long()

    def _require_causal(self, what: str) -> None:
        if not self.config.causal:
            raise ValueError(f"{what} predicts the next token, which a bidirectional model "
                             f"(causal=False) sees; use a causal config")

    def _run(self, tokens_BT, start: int, carries: list, keep_carry: bool):
        """Hidden states (after the final norm) of one segment; returns ``(h_BTD, carries)``."""
        attn_ops, moe_ops_ = self._ops()
        cfg = self.config
        freqs = rope_freqs(start, tokens_BT.shape[1], cfg.head_dim, cfg.rope_theta, self.device)
        x = self.embed_tokens(tokens_BT)
        new = []
        for layer, carry in zip(self.layers, carries, strict=True):
            x, carry = layer(x, start=start, freqs=freqs, carry=carry, keep_carry=keep_carry,
                             attn_ops=attn_ops, moe_ops=moe_ops_)
            new.append(carry)
        return self.norm(x), new

    def hidden_train(self, tokens: torch.Tensor) -> torch.Tensor:
        """Final-norm hidden states of one full forward, ``[B, T] -> [B, T, D]``, with autograd
        (for training; inference over long inputs uses :meth:`hidden_states`)."""
        h, _ = self._run(self._check_tokens(tokens), 0, [None] * len(self.layers), False)
        return h

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        """Full forward (causal or bidirectional as configured): ``[B, T] -> [B, T, V]``."""
        return self.lm_head(self.hidden_train(tokens))

    def segment_length(self, segment_len: int | None, T: int) -> int:
        """Validate ``segment_len`` (None = the whole sequence at once)."""
        if segment_len is None or segment_len >= T:
            return T
        bs = self.config.block_size
        if not self.config.causal:
            raise ValueError("segmented inference needs a causal model; this config has "
                             "causal=False, so pass segment_len=None")
        if segment_len < bs or segment_len % bs:
            raise ValueError(f"segment_len must be a positive multiple of block_size ({bs}), got "
                             f"{segment_len}; try {max(bs, segment_len // bs * bs)}")
        return segment_len

    def iter_hidden(self, tokens,
                    segment_len: int | None = None) -> Iterator[tuple[int, torch.Tensor]]:
        """Yield ``(start, h [B, t, D])`` segment by segment (final-norm hidden states).

        The caller chooses the grad mode; wrap in ``torch.inference_mode()`` for inference.
        """
        tokens = self._check_tokens(tokens)
        T = tokens.shape[1]
        seg = self.segment_length(segment_len, T)
        carries: list[AttnCarry | None] = [None] * len(self.layers)
        for start in range(0, T, seg):
            end = min(T, start + seg)
            h, carries = self._run(tokens[:, start:end], start, carries, keep_carry=end < T)
            yield start, h

    # ---- inference API ------------------------------------------------------------------------
    def hidden_states(self, tokens, segment_len: int | None = None,
                      progress: Progress | None = None) -> torch.Tensor:
        """Final-norm hidden states ``[B, T] -> [B, T, D]`` (fp32, no grad)."""
        tokens = self._check_tokens(tokens)
        out = torch.empty(*tokens.shape, self.config.d_model, device=self.device)
        with torch.inference_mode():
            for start, h in self.iter_hidden(tokens, segment_len):
                out[:, start:start + h.shape[1]] = h
                if progress:
                    progress(h.shape[1])
        return out

    def log_likelihood(self, tokens, segment_len: int | None = None,
                       progress: Progress | None = None) -> torch.Tensor:
        """``[B, T] -> [B, T]``: ``log p(x_t | BOS, x_<t)`` of each observed token (fp32)."""
        self._require_causal("log_likelihood")
        tokens = self._check_tokens(tokens)
        inp = torch.cat([torch.full_like(tokens[:, :1], BOS_ID), tokens[:, :-1]], 1)
        out = torch.empty(tokens.shape, device=self.device)
        with torch.inference_mode():
            for start, h in self.iter_hidden(inp, segment_len):
                end = start + h.shape[1]
                logp = self.lm_head(h).float().log_softmax(-1)
                out[:, start:end] = logp.gather(-1, tokens[:, start:end, None])[..., 0]
                if progress:
                    progress(h.shape[1])
        return out

    def embed(self, tokens, segment_len: int | None = None,
              progress: Progress | None = None, workers: int | None = None) -> torch.Tensor:
        """Per-base embeddings ``[B, T] -> [B, T, 2D]``: ``[h_fwd, h_rc]`` (fp32, no grad).

        ``h_fwd[t]`` is the hidden state at ``x_t`` of ``BOS x``; ``h_rc[t]`` that of the same
        base in ``BOS rc(x)``, flipped back, so the two halves see the left and the right
        context. RC-equivariant: ``embed(rc(x)) == flip_T(swap_halves(embed(x)))``.

        The two strands run as one batch, or with ``workers=2`` (the default on CPU when torch
        has two or more threads) side by side in two threads, each with half the cores: the
        model's ops are small, and one op split over the cores waits for the slower one. The
        two ways agree up to float rounding.

        Rows of a batch may end in ``<pad>`` (sequences of different lengths): each row's
        reverse strand is the reverse complement of its bases alone, followed by its padding
        (not the padding first), so a row's bases embed as they do alone; the padding's own
        positions hold the pad tokens' states on both halves.
        """
        from genoctx.tokenize.nucleotide import reverse_complement

        tokens = self._check_tokens(tokens)
        B, T = tokens.shape
        D = self.config.d_model
        # bases per row: the row's length before its trailing padding
        real = (tokens != PAD_ID).long()
        lens = (T - real.flip(1).argmax(1)).where(real.any(1), torch.zeros_like(real[:, 0]))
        lens = lens.tolist()
        rc = reverse_complement(tokens, dim=1)
        for b, n in enumerate(lens):
            if n < T:  # the row's bases reverse-complemented, then its padding
                rc[b] = torch.cat([reverse_complement(tokens[b, :n], dim=0), tokens[b, n:]])
        bos = torch.full_like(tokens[:, :1], BOS_ID)
        fwd, rev = torch.cat([bos, tokens], 1), torch.cat([bos, rc], 1)  # [B, T+1] each
        out = torch.empty(B, T, 2 * D, device=self.device)
        if workers is None:
            workers = 2 if self.device.type == "cpu" and torch.get_num_threads() >= 2 else 1

        def put(start: int, h_fwd: torch.Tensor | None, h_rev: torch.Tensor | None) -> None:
            lo, hi = max(start, 1), start + (h_fwd if h_fwd is not None else h_rev).shape[1]
            if hi <= lo:
                return
            if h_fwd is not None:  # hidden position p holds base p - 1
                out[:, lo - 1:hi - 1, :D] = h_fwd[:, lo - start:]
            if h_rev is None:
                return
            if all(n == T for n in lens):  # no padding: base T - p on +
                out[:, T - hi + 1:T - lo + 1, D:] = h_rev[:, lo - start:].flip(1)
                return
            for b, n in enumerate(lens):
                a, e = lo, min(hi, n + 1)  # the row's bases: base n - p on +
                if e > a:
                    out[b, n - e + 1:n - a + 1, D:] = h_rev[b, a - start:e - start].flip(0)
                a = max(lo, n + 1)  # its padding: pad p - 1, where it stands
                if hi > a:
                    out[b, a - 1:hi - 1, D:] = h_rev[b, a - start:hi - start]

        if workers <= 1:
            with torch.inference_mode():
                for start, h in self.iter_hidden(torch.cat([fwd, rev], 0), segment_len):
                    put(start, h[:B], h[B:])
                    if progress:
                        progress(h.shape[1])
            return out

        lock, done, reported = threading.Lock(), [0, 0], [0]

        def strand(k: int) -> None:
            with torch.inference_mode():  # thread-local: entered in each worker
                for start, h in self.iter_hidden(rev if k else fwd, segment_len):
                    put(start, None if k else h, h if k else None)
                    if progress:  # the bar moves as far as both strands have come
                        with lock:
                            done[k] += h.shape[1]
                            if min(done) > reported[0]:
                                progress(min(done) - reported[0])
                                reported[0] = min(done)

        for _ in in_order(strand, (0, 1), 2):
            pass
        return out

    # ---- training helpers ---------------------------------------------------------------------
    def lm_loss(self, tokens) -> dict[str, torch.Tensor]:
        """Next-token cross-entropy (PAD targets ignored) plus the weighted router losses."""
        self._require_causal("lm_loss")
        tokens = self._check_tokens(tokens)
        inp = torch.cat([torch.full_like(tokens[:, :1], BOS_ID), tokens[:, :-1]], 1)
        logits = self.forward(inp)
        lm = F.cross_entropy(logits.float().flatten(0, 1), tokens.flatten(), ignore_index=PAD_ID)
        aux = self.aux_loss()
        return {"loss": lm + aux, "lm": lm, "aux": aux}

    def aux_loss(self) -> torch.Tensor:
        """``aux_loss_coef · Σ load-balance + z_loss_coef · Σ z-loss`` of the last forward."""
        cfg = self.config
        return sum(cfg.aux_loss_coef * b.moe.aux_loss + cfg.z_loss_coef * b.moe.z_loss
                   for b in self.layers)

    def routing_stats(self) -> list[dict]:
        """Per-layer routing statistics of the last forward (see :attr:`MoE.stats`)."""
        return [b.moe.stats for b in self.layers]

    def num_params(self) -> int:
        return sum(p.numel() for p in self.parameters())
