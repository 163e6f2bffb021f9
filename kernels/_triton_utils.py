"""Helpers shared by the Triton kernels: interpreter detection, debug allocation, tile choice.

The kernels pick their tile sizes from :func:`tile_config` rather than ``@triton.autotune``:
autotuning crashes under ``TRITON_INTERPRET=1`` and, at T = 1M tokens, would time every config on
the user's first call. :func:`force_tiles` overrides the choice (tests use it to exercise several
sub-tilings of a block; benchmarks use it to sweep configs).
"""

from __future__ import annotations

import contextlib
import functools
import os
from dataclasses import dataclass, replace

import torch

from genoctx.errors import InputError

SUPPORTED_DTYPES = (torch.float32, torch.float16, torch.bfloat16)
SUPPORTED_HEAD_DIMS = (32, 48, 64, 128)


def first_order_only(backward):
    """Mark an ``autograd.Function.backward`` whose kernels are not themselves differentiable.

    A backward called to build a graph (``create_graph=True``: a gradient penalty, a Hessian)
    raises at once. ``torch.autograd.function.once_differentiable`` raises only when the
    second pass walks through its node, so ``torch.autograd.grad(..., inputs=w)`` for a ``w``
    outside the kernel's inputs silently treated the first gradient as a constant (and it does
    nothing when the incoming gradients need none, as those of ``y.sum()``).
    """

    @functools.wraps(backward)
    def wrapper(ctx, *grads):
        if torch.is_grad_enabled():  # the engine enables grad mode only for create_graph
            raise RuntimeError(f"{backward.__qualname__.split('.')[0]}: second derivatives "
                               "(create_graph=True) are not supported by the Triton kernels; "
                               "use the reference implementation (model backend 'torch')")
        with torch.no_grad():
            return backward(ctx, *grads)

    return wrapper


def interpreting() -> bool:
    """True when Triton runs kernels on the CPU interpreter (``TRITON_INTERPRET=1``)."""
    return os.environ.get("TRITON_INTERPRET", "0") not in ("", "0")


def env_choice(name: str, choices: tuple[str, ...], default: str) -> str:
    """``$name`` when set (one of ``choices``, else a ValueError that lists them), else
    ``default``: the kernels' implementation switches, read at each launch."""
    value = os.environ.get(name, default)
    if value not in choices:
        raise ValueError(f"{name} must be one of {', '.join(choices)}, got {value!r}")
    return value


def debug_outputs() -> bool:
    """Fill fresh kernel outputs with NaN so that an element a kernel never writes shows up.

    On under the interpreter (tests) and with ``GENOCTX_KERNEL_DEBUG=1``; off otherwise, since a
    fill of a 2 GiB output costs about a millisecond on a GPU.
    """
    return interpreting() or os.environ.get("GENOCTX_KERNEL_DEBUG", "0") not in ("", "0")


def new_output(shape, *, dtype, device) -> torch.Tensor:
    """``torch.empty`` for a kernel output, NaN-filled when :func:`debug_outputs` is on."""
    if debug_outputs() and dtype.is_floating_point:
        return torch.full(shape, float("nan"), dtype=dtype, device=device)
    return torch.empty(shape, dtype=dtype, device=device)


def next_pow2(n: int) -> int:
    """Smallest power of two >= n (tl.arange needs power-of-two lengths)."""
    return 1 << max(0, (int(n) - 1).bit_length())


def dot_precision(dtype: torch.dtype) -> str:
    """``tl.dot`` input precision: true fp32 for fp32 inputs, tensor-core rates otherwise."""
    return "ieee" if dtype == torch.float32 else "tf32"


@dataclass(frozen=True)
class Tiles:
    """Tile sizes and launch shape for one kernel launch."""

    block_m: int
    block_n: int
    num_warps: int
    num_stages: int


_FORCED: dict[str, Tiles] = {}


@contextlib.contextmanager
def force_tiles(kind: str, **fields):
    """Override :func:`tile_config` for ``kind`` (e.g. ``"local_fwd"``) inside the ``with``."""
    old = _FORCED.get(kind)
    _FORCED[kind] = Tiles(**{"block_m": 64, "block_n": 64, "num_warps": 4, "num_stages": 2, **fields})
    try:
        yield
    finally:
        if old is None:
            _FORCED.pop(kind, None)
        else:
            _FORCED[kind] = old


# Picked by a small sweep on one H200 (torch 2.11, triton 3.6) at B=1, T=2**20, H=16, D=64, bf16,
# block 512; neighbouring configs were within ~5% except where noted. (block_m, block_n) are
# query/key tile rows; "hybrid_state" uses block_m as its row tile.
#   local_fwd       128x64 w8 s3: 10.1-10.3 ms; 128x128 w8 s2 was 14.8 ms
#   local dq / dkdv 64x64 w4 s3: 11.4 / 18.7 ms; dkdv 128x64 w8 s2 was ~2x slower
#   hybrid_fwd      64x64 w4 s3: 23.9 ms (128x64 w8 s3: 25.1 ms)
#   hybrid dkdv     64x128 w8 s2: 43 ms (64x64 w4 s3: ~46 ms; 128x64 w8 s2: ~3x slower)
_GPU_DEFAULTS = {
    "local_fwd": Tiles(128, 64, 8, 3),
    "local_bwd_dq": Tiles(64, 64, 4, 3),
    "local_bwd_dkdv": Tiles(64, 64, 4, 3),
    "hybrid_fwd": Tiles(64, 64, 4, 3),
    # the two-loop causal forward (hybrid.LOOPS): local_fwd's tiles, chosen by register use
    # (no spills at 128x64 w8 s3, benchmarks/kernel_resources.py), not yet by a GPU sweep
    "hybrid_fwd2": Tiles(128, 64, 8, 3),
    "hybrid_bwd_dq": Tiles(64, 64, 4, 3),
    "hybrid_bwd_dkdv": Tiles(64, 128, 8, 2),
    # the two-loop dk/dv: 64x64 w8 s2 has the fewest spills on sm_90 (66 static spill
    # instructions; the one loop at its 64x128 w8 s2 has 429), not yet chosen by a GPU sweep
    "hybrid_bwd_dkdv2": Tiles(64, 64, 8, 2),
    "hybrid_state": Tiles(64, 64, 4, 2),
}


# Blackwell (sm_100) departures from _GPU_DEFAULTS. Triton 3.7.1 compiles the hybrid dk/dv kernel
# with 128-key tiles for sm_100 to a bare trap (its body is `llvm.trap`: it would fault on a
# B200); 64x64 w8 s2 compiles to tcgen05 MMAs without spills (64x64 w4 s3: 338 spill
# instructions). benchmarks/kernel_resources.py checks every kernel for both targets.
_BLACKWELL = {
    "hybrid_bwd_dkdv": Tiles(64, 64, 8, 2),
}


def cuda_arch(device) -> int | None:
    """Compute capability of a CUDA ``device`` as ``10 * major + minor`` (90: H100/H200, 100:
    B200), None for any other device."""
    device = torch.device(device)
    if device.type != "cuda":
        return None
    return _cuda_arch(torch.cuda.current_device() if device.index is None else device.index)


@functools.lru_cache(maxsize=None)
def _cuda_arch(index: int) -> int:  # asked at every launch: once per device is enough
    major, minor = torch.cuda.get_device_capability(index)
    return 10 * major + minor


def tile_config(kind: str, *, block_size: int, head_dim: int, arch: int | None = None) -> Tiles:
    """Tiles for ``kind`` on a GPU of compute capability ``arch`` (:func:`cuda_arch`; None:
    the Hopper defaults), shrunk so that a tile never spans much more than one block."""
    if kind in _FORCED:
        tiles = _FORCED[kind]
    elif interpreting():
        # The interpreter's cost is per program and per op, not per element: few, large tiles.
        tiles = Tiles(64, 64, 4, 1)
    elif arch is not None and arch >= 100 and kind in _BLACKWELL:
        tiles = _BLACKWELL[kind]
    else:
        tiles = _GPU_DEFAULTS[kind]
        if head_dim > 64:  # keep the fp32 accumulators of D = 128 in registers
            tiles = replace(tiles, block_m=min(tiles.block_m, 64), block_n=min(tiles.block_n, 64))
    cap = max(16, next_pow2(block_size))
    return replace(tiles, block_m=min(tiles.block_m, cap), block_n=min(tiles.block_n, cap))


def check_qkv(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, block_size: int) -> None:
    """Raise :class:`InputError` when q, k, v cannot go to the kernels as given."""
    if q.dim() != 4 or q.shape != k.shape or q.shape != v.shape:
        raise InputError(f"q, k, v must share one shape [B, T, H, D]; got {tuple(q.shape)}, "
                         f"{tuple(k.shape)}, {tuple(v.shape)}")
    if not (q.dtype == k.dtype == v.dtype) or q.dtype not in SUPPORTED_DTYPES:
        raise InputError(f"q, k, v must share a dtype among fp32/fp16/bf16; got {q.dtype}, "
                         f"{k.dtype}, {v.dtype}")
    if q.shape[-1] not in SUPPORTED_HEAD_DIMS:
        raise InputError(f"head dim {q.shape[-1]} is not supported; use one of "
                         f"{SUPPORTED_HEAD_DIMS} (or the reference implementation)")
    if not (q.device == k.device == v.device):
        raise InputError("q, k, v must be on one device")
    if q.device.type == "cpu" and not interpreting():
        raise InputError("the Triton kernels need GPU tensors; on the CPU use the reference "
                         "implementation (or set TRITON_INTERPRET=1, slowly)")
    if block_size < 1:
        raise InputError(f"block_size must be >= 1, got {block_size}")
    if q.shape[1] == 0:
        raise InputError("sequence length T is 0; nothing to attend over")


def sanitize_extra_blocks(extra_blocks: torch.Tensor | None, *, batch: int, heads: int,
                          num_blocks: int, causal: bool, device) -> torch.Tensor | None:
    """Extra key-block indices with every entry the reference ignores set to -1 (int32).

    The rule is the reference's: an entry is ignored when it is negative, out of range, inside
    the local window, or (causal) later than its query block. Returns None when nothing is left
    to read (no tensor or zero slots), so that kernels can skip the extra-block loop.
    """
    if extra_blocks is None or extra_blocks.shape[-1] == 0:
        return None
    if extra_blocks.dim() != 4 or tuple(extra_blocks.shape[:3]) != (batch, heads, num_blocks):
        raise InputError(f"extra_blocks must have shape [B, H, NB, K] = [{batch}, {heads}, "
                         f"{num_blocks}, K]; got {tuple(extra_blocks.shape)}")
    if extra_blocks.dtype.is_floating_point or extra_blocks.dtype == torch.bool:
        raise InputError(f"extra_blocks must be an integer tensor, got {extra_blocks.dtype}")
    j = extra_blocks.to(device=device, dtype=torch.int64)
    i = torch.arange(num_blocks, device=device)[None, None, :, None]
    bad = (j < 0) | (j >= num_blocks) | ((j >= i - 1) & (j <= (i if causal else i + 1)))
    if causal:
        bad |= j > i
    return torch.where(bad, torch.full_like(j, -1), j).to(torch.int32).contiguous()


def reverse_block_index(extra: torch.Tensor, num_blocks: int) -> tuple[torch.Tensor, torch.Tensor]:
    """CSR index from key block to the query blocks that list it as an extra block.

    ``extra: [B, H, NB, K]`` (sanitised, -1 = unused). Returns ``(offsets [B*H*NB + 1],
    query_blocks [B*H*NB*K])``, both int32: the query blocks of key block ``j`` of head ``bh`` are
    ``query_blocks[offsets[bh*NB + j] : offsets[bh*NB + j + 1]]``. Built with device sorts, no
    host synchronisation; lets the dk/dv kernel gather its extra contributions deterministically
    instead of scattering them with atomics.
    """
    B, H, NB, K = extra.shape
    bh = torch.arange(B * H, device=extra.device).view(B, H, 1, 1)
    key = torch.where(extra >= 0, bh * NB + extra.long(), torch.full_like(extra, B * H * NB,
                                                                          dtype=torch.long))
    key = key.reshape(-1)
    order = torch.argsort(key, stable=True)
    query_block = torch.arange(NB, device=extra.device).view(1, 1, NB, 1).expand(B, H, NB, K)
    query_blocks = query_block.reshape(-1)[order].to(torch.int32).contiguous()
    counts = torch.bincount(key, minlength=B * H * NB + 1)[: B * H * NB]
    offsets = torch.zeros(B * H * NB + 1, dtype=torch.int64, device=extra.device)
    offsets[1:] = torch.cumsum(counts, 0)
    return offsets.to(torch.int32).contiguous(), query_blocks
