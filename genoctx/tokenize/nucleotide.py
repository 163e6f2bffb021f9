"""Nucleotide tokenizer: one token per base over a fixed 9-token vocabulary.

==  =========  ==========================================================================
id  token      meaning
==  =========  ==========================================================================
0   ``<pad>``  padding after the last base of a short window
1   ``<bos>``  beginning of sequence
2   ``<eos>``  end of sequence
3   ``<mask>`` masked position (masked language modelling)
4   ``A``      A or a
5   ``C``      C or c
6   ``G``      G or g
7   ``T``      T or t, and U or u (RNA: the same base)
8   ``N``      N, every IUPAC ambiguity code (R Y K M S W B D H V) and any other byte
==  =========  ==========================================================================

Lowercase (soft-masked) bases get the same ids as uppercase ones; :func:`encode_with_mask`
returns the soft-mask as a separate boolean array. :data:`COMPLEMENT` maps A↔T, C↔G, N→N and
every special token to itself, so ``reverse_complement`` is an involution on any id array.

Encoding goes through a 256-entry byte translation table (``bytes.translate``), one C pass over
the input with no per-base Python loop.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    import torch

PAD, BOS, EOS, MASK = 0, 1, 2, 3
A, C, G, T, N = 4, 5, 6, 7, 8
VOCAB_SIZE = 9
TOKENS: tuple[str, ...] = ("<pad>", "<bos>", "<eos>", "<mask>", "A", "C", "G", "T", "N")
TOKEN_TO_ID: dict[str, int] = {tok: i for i, tok in enumerate(TOKENS)}

COMPLEMENT: np.ndarray = np.array([PAD, BOS, EOS, MASK, T, G, C, A, N], dtype=np.uint8)
COMPLEMENT.setflags(write=False)


def _encode_table() -> bytes:
    table = np.full(256, N, dtype=np.uint8)
    for i, base in enumerate(b"ACGT"):
        table[base] = table[base | 0x20] = A + i
    table[ord("U")] = table[ord("u")] = T  # an RNA sequence reads as its DNA
    return table.tobytes()


ENCODE_TABLE: bytes = _encode_table()
"""byte → token id, for ``bytes.translate``."""
SOFTMASK_TABLE: bytes = bytes(1 if 0x61 <= b <= 0x7A else 0 for b in range(256))
"""byte → 1 for lowercase letters (soft-masked), else 0."""
_DECODE = np.frombuffer(b"????ACGTN", dtype=np.uint8)


def _as_buffer(seq: bytes | bytearray | memoryview | str | np.ndarray) -> tuple[bytearray, tuple]:
    """A writable byte copy of ``seq`` and the shape to give the result."""
    if isinstance(seq, str):
        data = bytearray(seq.encode("ascii", errors="replace"))
        return data, (len(data),)
    if isinstance(seq, np.ndarray):
        if seq.dtype != np.uint8 and not (seq.dtype.kind == "S" and seq.dtype.itemsize == 1):
            raise ValueError(f"encode takes ASCII bytes; got an array of dtype {seq.dtype} "
                             "(token ids are already encoded)")
        return bytearray(np.ascontiguousarray(seq).view(np.uint8)), seq.shape
    data = bytearray(seq)
    return data, (len(data),)


def encode(seq: bytes | str | np.ndarray) -> np.ndarray:
    """Bases → token ids (uint8), case-insensitive; anything but A/C/G/T becomes ``N``.

    Args:
        seq: Bases as bytes, str, or a uint8 array of ASCII codes (any shape).

    Returns:
        uint8 ids with the shape of the input, e.g. ``encode("ACgtR") → [4, 5, 6, 7, 8]``.
    """
    data, shape = _as_buffer(seq)
    return np.frombuffer(data.translate(ENCODE_TABLE), dtype=np.uint8).reshape(shape)


def encode_with_mask(seq: bytes | str | np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Token ids plus the soft-mask (True where the input base is lowercase)."""
    data, shape = _as_buffer(seq)
    ids = np.frombuffer(data.translate(ENCODE_TABLE), dtype=np.uint8).reshape(shape)
    mask = np.frombuffer(data.translate(SOFTMASK_TABLE), dtype=np.bool_).reshape(shape)
    return ids, mask


def _torch_tensor(x) -> bool:
    # torch is only imported by callers that use it; the tokenizer does not pull it in.
    torch = sys.modules.get("torch")
    return torch is not None and isinstance(x, torch.Tensor)


def _to_numpy(ids) -> np.ndarray:
    if _torch_tensor(ids):
        return ids.detach().cpu().numpy()
    return np.asarray(ids)


def decode(ids, *, skip_special: bool = False) -> str:
    """Token ids → uppercase bases; the exact inverse of :func:`encode` on A/C/G/T/N.

    Args:
        ids: Token ids (numpy, torch or a sequence of ints); flattened.
        skip_special: Drop ``<pad>``/``<bos>``/``<eos>``/``<mask>`` instead of raising.

    Raises:
        ValueError: an id is not a base (or a special token while ``skip_special`` is False).
    """
    arr = _to_numpy(ids).ravel()
    if skip_special:
        arr = arr[(arr < PAD) | (arr > MASK)]
    if arr.size == 0:
        return ""
    lo, hi = int(arr.min()), int(arr.max())
    if lo < A or hi > N:
        bad = lo if lo < A else hi
        raise ValueError(f"token id {bad} is not a base (bases are {A}..{N}); "
                         "pass skip_special=True to drop special tokens")
    return _DECODE[arr].tobytes().decode("ascii")


def reverse_complement(ids: np.ndarray | torch.Tensor, dim: int = -1):
    """Reverse-complement token ids along ``dim`` (numpy or torch; dtype and device kept).

    Special tokens map to themselves, so applying it twice gives the input back.
    """
    if _torch_tensor(ids):
        import torch

        if ids.numel() and ids.device.type != "meta" and (
                int(ids.min()) < 0 or int(ids.max()) >= VOCAB_SIZE):
            raise ValueError(f"token ids must lie in 0..{VOCAB_SIZE - 1}")
        table = torch.tensor(COMPLEMENT.tolist(), dtype=torch.uint8, device=ids.device)
        return table[ids.flip(dim).long()].to(ids.dtype)
    arr = np.asarray(ids)
    if arr.size and (arr.min() < 0 or arr.max() >= VOCAB_SIZE):
        raise ValueError(f"token ids must lie in 0..{VOCAB_SIZE - 1}")
    return COMPLEMENT[np.flip(arr, axis=dim)].astype(arr.dtype, copy=False)


def count_non_acgt(seq: bytes | str | np.ndarray) -> int:
    """How many bases are not A/C/G/T (either case; U counts as T): N, IUPAC codes and anything
    else."""
    return int(np.count_nonzero(encode(seq) == N))
