"""Cut long sequences into fixed-size context windows, and stitch per-window outputs back.

A sequence of ``length`` tokens is covered by windows of ``context`` tokens that start every
``step = context - overlap`` tokens; the last window is shorter and padded. :class:`Stitcher`
puts per-window model outputs ``[W, context, ...]`` back onto ``[length, ...]`` without seams:
each position takes its value from the window in which it lies farthest from a window edge,
i.e. each overlap is split at its midpoint. A window then only contributes positions at least
``overlap // 2`` tokens from its left edge and ``overlap - overlap // 2`` from its right edge,
so a model whose output at a position depends on a ±m neighbourhood gives, with
``overlap >= 2 * m``, exactly the output of one pass over the whole sequence (the padded tail
of the last window behaves like the end of the sequence when the model pads with ``<pad>``;
``GenoCtxModel.embed`` reads each padded row's reverse strand from its last base, not from
the padding).
``mode="mean"`` averages over all windows that cover a position instead.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass

import numpy as np

from genoctx.errors import GenoctxError
from genoctx.io.regions import Region
from genoctx.tokenize.nucleotide import PAD

DEFAULT_CONTEXT = 1_048_576


class WindowError(GenoctxError, ValueError):
    """Impossible window settings (context < 1, overlap >= context, ...)."""


@dataclass(frozen=True)
class Window:
    """A window on a genome: bases ``[start, end)`` of ``contig``; ``offset`` = start's index
    within the tokenized region (0 for the first window)."""

    contig: str
    start: int
    end: int
    offset: int

    def __len__(self) -> int:
        return self.end - self.start


def plan_windows(length: int, context: int = DEFAULT_CONTEXT,
                 overlap: int = 0) -> list[tuple[int, int]]:
    """Windows ``[start, end)`` covering ``[0, length)``: ``context`` long, ``overlap`` shared.

    The last window ends at ``length`` and may be shorter (it is padded later).

    Raises:
        WindowError: ``context < 1``, ``overlap < 0``, ``overlap >= context`` or ``length < 0``.
    """
    if context < 1:
        raise WindowError(f"context must be at least 1 token (got {context})")
    if not 0 <= overlap < context:
        raise WindowError(f"overlap must be in [0, context) = [0, {context}) (got {overlap})")
    if length < 0:
        raise WindowError(f"sequence length {length} is negative")
    step = context - overlap
    windows, start = [], 0
    while start < length:
        end = min(start + context, length)
        windows.append((start, end))
        if end == length:
            break
        start += step
    return windows


def count_windows(length: int, context: int = DEFAULT_CONTEXT, overlap: int = 0) -> int:
    """``len(plan_windows(length, context, overlap))``, without making the list (a plan holds
    about 120 bytes per window: with a large overlap, more than the tokens)."""
    plan_windows(0, context, overlap)  # the same checks
    if length < 0:
        raise WindowError(f"sequence length {length} is negative")
    if length <= context:
        return min(length, 1)
    step = context - overlap
    return 1 + -(-(length - context) // step)


def region_windows(region: Region, context: int = DEFAULT_CONTEXT,
                   overlap: int = 0) -> list[Window]:
    """The base windows of a genomic region (contig coordinates, 0-based half-open)."""
    return [Window(region.contig, region.start + s, region.start + e, s)
            for s, e in plan_windows(len(region), context, overlap)]


def fill_windows(values: np.ndarray, plan: list[tuple[int, int]], out: np.ndarray) -> None:
    """Copy ``values[s:e]`` into ``out[i, :e - s]`` for each planned window ``i``.

    ``out`` ([W, context, ...]) must already hold the padding value.
    """
    for i, (s, e) in enumerate(plan):
        out[i, :e - s] = values[s:e]


def window_tokens(ids: np.ndarray, context: int = DEFAULT_CONTEXT, overlap: int = 0,
                  pad_id: int = PAD) -> tuple[np.ndarray, np.ndarray]:
    """Cut ``ids`` ([L, ...]) into windows.

    Returns:
        ``tokens`` [W, context, ...] (same dtype, the last window padded with ``pad_id``) and
        ``starts`` [W] (int64 offset of each window in ``ids``).
    """
    ids = np.asarray(ids)
    plan = plan_windows(len(ids), context, overlap)
    tokens = np.full((len(plan), context) + ids.shape[1:], pad_id, dtype=ids.dtype)
    if overlap == 0:  # windows tile the sequence: one copy
        tokens.reshape((len(plan) * context,) + ids.shape[1:])[:len(ids)] = ids
    else:
        fill_windows(ids, plan, tokens)
    return tokens, np.array([s for s, _ in plan], dtype=np.int64)


def _is_torch(x) -> bool:
    torch = sys.modules.get("torch")
    return torch is not None and isinstance(x, torch.Tensor)


class Stitcher:
    """Merge per-window outputs ``[W, context, ...]`` back onto ``[length, ...]``.

    Args:
        length: Tokens in the whole sequence.
        context: Window size used when cutting (as for :func:`window_tokens`).
        overlap: Overlap used when cutting.
        mode: ``"center"`` (each position from the window where it is farthest from an edge)
            or ``"mean"`` (average of every window covering it).

    Example:
        >>> tokens, _ = window_tokens(ids, 4096, 512)
        >>> out_WTE = model.embed(tokens)                # [W, 4096, 2D] (per-base embeddings)
        >>> out_LE = Stitcher(len(ids), 4096, 512).stitch(out_WTE)   # [len(ids), 2D]

    Works with numpy arrays and torch tensors; windows may also be added one at a time with
    :meth:`add` and collected with :meth:`result`.
    """

    def __init__(self, length: int, context: int = DEFAULT_CONTEXT, overlap: int = 0,
                 mode: str = "center"):
        mode = {"centre": "center"}.get(mode, mode)
        if mode not in ("center", "mean"):
            raise WindowError(f"stitch mode must be 'center' or 'mean' (got '{mode}')")
        self.length, self.context, self.overlap, self.mode = length, context, overlap, mode
        self.windows = plan_windows(length, context, overlap)
        cuts = [s + overlap // 2 for s, _ in self.windows[1:]]
        # owned[i]: the positions window i contributes in "center" mode; they tile [0, length).
        self.owned = list(zip([0] + cuts, cuts + [length]))
        self._out = self._count = None
        self._added = np.zeros(len(self.windows), dtype=bool)

    def __len__(self) -> int:
        return len(self.windows)

    def _allocate(self, like, trailing: tuple) -> None:
        shape = (self.length,) + tuple(trailing)
        if _is_torch(like):
            import torch

            floating = like.dtype.is_floating_point
            dtype = like.dtype if self.mode == "center" or floating else torch.float32
            self._out = torch.zeros(shape, dtype=dtype, device=like.device)
            if self.mode == "mean":
                self._count = torch.zeros(self.length, dtype=dtype, device=like.device)
        else:
            floating = np.issubdtype(like.dtype, np.floating)
            dtype = like.dtype if self.mode == "center" or floating else np.float64
            self._out = np.zeros(shape, dtype=dtype)
            if self.mode == "mean":
                self._count = np.zeros(self.length, dtype=dtype)

    def add(self, index: int, output) -> None:
        """Add the output ``[context (or more), ...]`` of window ``index``."""
        if not 0 <= index < len(self.windows):
            raise WindowError(f"window index {index} out of range (0..{len(self.windows) - 1})")
        s, e = self.windows[index]
        if self.mode == "mean" and self._added[index]:
            raise WindowError(f"window {index} was already added")
        if output.shape[0] < e - s:
            raise WindowError(f"window {index} output has {output.shape[0]} positions; "
                              f"it covers {e - s}")
        if self._out is None:
            self._allocate(output, output.shape[1:])
        if self.mode == "center":
            lo, hi = self.owned[index]
            self._out[lo:hi] = output[lo - s:hi - s]
        else:
            self._out[s:e] += output[:e - s]
            self._count[s:e] += 1
        self._added[index] = True

    def result(self):
        """The stitched ``[length, ...]`` array (after every window was added)."""
        if not self._added.all():
            missing = np.flatnonzero(~self._added)
            raise WindowError(f"{len(missing)} window(s) not added yet (first: {missing[0]})")
        if self._out is None:  # zero-length sequence
            return np.zeros((0,))
        if self.mode == "center":
            return self._out
        shape = (self.length,) + (1,) * (self._out.ndim - 1)
        return self._out / self._count.reshape(shape)

    def stitch(self, outputs):
        """Stitch all window outputs ``[W, context, ...]`` into ``[length, ...]``."""
        if len(outputs) != len(self.windows):
            raise WindowError(f"got {len(outputs)} window outputs; the plan has "
                              f"{len(self.windows)} windows")
        self._out = self._count = None
        self._added[:] = False
        if len(self.windows) == 0:
            self._allocate(outputs, tuple(outputs.shape[2:]))
        for i in range(len(self.windows)):
            self.add(i, outputs[i])
        return self.result()
