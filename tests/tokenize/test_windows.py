"""Window planning, cutting, and seamless stitching against a single full-length pass."""

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from genoctx.errors import GenoctxError
from genoctx.io.regions import Region
from genoctx.tokenize.nucleotide import PAD
from genoctx.tokenize.windows import (Stitcher, Window, WindowError, count_windows, plan_windows,
                                      region_windows, window_tokens)


@st.composite
def plans(draw, max_len=400):
    context = draw(st.integers(1, 64))
    overlap = draw(st.integers(0, context - 1))
    length = draw(st.integers(0, max_len))
    return length, context, overlap


@settings(deadline=None)
@given(plans())
def test_plan_covers_with_the_given_overlap(args):
    length, context, overlap = args
    windows = plan_windows(length, context, overlap)
    if length == 0:
        assert windows == []
        return
    assert windows[0][0] == 0 and windows[-1][1] == length
    covered = np.zeros(length, dtype=int)
    for s, e in windows:
        assert 0 < e - s <= context
        covered[s:e] += 1
    assert covered.min() >= 1
    for (s0, e0), (s1, e1) in zip(windows, windows[1:]):
        assert s1 - s0 == context - overlap and e0 - s1 == overlap and e0 == s0 + context
    assert len(windows) == 1 or windows[-2][1] < length  # no window past the one that ends it
    assert count_windows(length, context, overlap) == len(windows)


@pytest.mark.parametrize("context, overlap", [(0, 0), (-5, 0), (10, 10), (10, 11), (10, -1)])
def test_plan_rejects_bad_settings(context, overlap):
    with pytest.raises(WindowError) as info:
        plan_windows(100, context, overlap)
    assert isinstance(info.value, GenoctxError) and isinstance(info.value, ValueError)
    with pytest.raises(WindowError):
        count_windows(100, context, overlap)


def test_region_windows_are_genomic():
    windows = region_windows(Region("chr1", 1000, 1025), context=10, overlap=2)
    assert windows == [Window("chr1", 1000, 1010, 0), Window("chr1", 1008, 1018, 8),
                       Window("chr1", 1016, 1025, 16)]
    assert len(windows[-1]) == 9


@settings(deadline=None)
@given(plans(), st.integers(0, 2))
def test_window_tokens_round_trip(args, trailing):
    length, context, overlap = args
    ids = np.arange(1, length * 3 ** trailing + 1, dtype=np.int32).reshape(
        (length,) + (3,) * trailing)
    tokens, starts = window_tokens(ids, context, overlap)
    plan = plan_windows(length, context, overlap)
    assert tokens.shape == (len(plan), context) + ids.shape[1:] and tokens.dtype == ids.dtype
    assert starts.tolist() == [s for s, _ in plan]
    for w, (s, e) in enumerate(plan):
        assert np.array_equal(tokens[w, :e - s], ids[s:e])
        assert (tokens[w, e - s:] == PAD).all()


def _local(x: np.ndarray, m: int) -> np.ndarray:
    """A nonlinear function whose output at p depends only on x[p-m .. p+m] (zero outside)."""
    pad = np.concatenate([np.zeros((m,) + x.shape[1:], x.dtype), x,
                          np.zeros((m,) + x.shape[1:], x.dtype)])
    n = len(x)
    out = np.zeros_like(x)
    for j in range(2 * m + 1):
        out += (j + 1) * pad[j:j + n] ** 2
    return out + pad[:n] * pad[2 * m:2 * m + n]


@settings(max_examples=80, deadline=None)
@given(length=st.integers(1, 300), context=st.integers(2, 64), m=st.integers(0, 8),
       extra=st.integers(0, 20), trailing=st.integers(0, 1), data=st.data())
def test_centre_stitch_equals_one_full_pass(length, context, m, extra, trailing, data):
    overlap = 2 * m + extra
    if overlap >= context:
        overlap = data.draw(st.integers(2 * m, context - 1)) if 2 * m < context else None
    if overlap is None:
        return
    rng = np.random.default_rng(length * 1000 + context)
    x = rng.integers(1, 9, size=(length,) + (2,) * trailing).astype(np.int64)
    tokens, _ = window_tokens(x, context, overlap)
    outputs = np.stack([_local(w, m) for w in tokens])
    stitched = Stitcher(length, context, overlap).stitch(outputs)
    assert np.array_equal(stitched, _local(x, m))
    stitched_t = Stitcher(length, context, overlap).stitch(torch.from_numpy(outputs))
    assert torch.equal(stitched_t, torch.from_numpy(_local(x, m)))


def test_too_little_overlap_shows_seams():
    """The exactness above is not automatic: with overlap < 2m the seams differ."""
    x = np.arange(1, 101, dtype=np.int64)
    tokens, _ = window_tokens(x, 20, 2)
    stitched = Stitcher(100, 20, 2).stitch(np.stack([_local(w, 3) for w in tokens]))
    assert not np.array_equal(stitched, _local(x, 3))


@settings(deadline=None)
@given(plans(max_len=200))
def test_owner_is_the_centre_most_window(args):
    length, context, overlap = args
    st_ = Stitcher(length, context, overlap)
    owner = np.full(length, -1)
    for i, (lo, hi) in enumerate(st_.owned):
        assert (owner[lo:hi] == -1).all()
        owner[lo:hi] = i
    for p in range(length):
        covering = [(min(p - s, s + context - 1 - p), i) for i, (s, e) in
                    enumerate(st_.windows) if s <= p < e]
        best = max(d for d, _ in covering)
        assert owner[p] == max(i for d, i in covering if d == best)  # ties → later window


@settings(deadline=None)
@given(plans(max_len=150))
def test_mean_mode_against_a_loop(args):
    length, context, overlap = args
    windows = plan_windows(length, context, overlap)
    rng = np.random.default_rng(length)
    outputs = rng.normal(size=(len(windows), context, 2))
    expected = np.zeros((length, 2))
    for p in range(length):
        vals = [outputs[i, p - s] for i, (s, e) in enumerate(windows) if s <= p < e]
        expected[p] = np.mean(vals, axis=0)
    got = Stitcher(length, context, overlap, mode="mean").stitch(outputs)
    assert got.shape == (length, 2)
    np.testing.assert_allclose(got, expected, rtol=1e-12)


def test_streaming_add_and_errors():
    x = np.arange(50, dtype=np.float32)
    tokens, _ = window_tokens(x, 16, 4)
    st_ = Stitcher(50, 16, 4, mode="centre")
    for i in reversed(range(len(st_))):
        st_.add(i, tokens[i])
    assert np.array_equal(st_.result(), x)
    partial = Stitcher(50, 16, 4)
    partial.add(0, tokens[0])
    with pytest.raises(WindowError, match="not added"):
        partial.result()
    with pytest.raises(WindowError):
        partial.add(99, tokens[0])
    with pytest.raises(WindowError, match="positions"):
        partial.add(1, tokens[1][:3])
    with pytest.raises(WindowError, match="mode"):
        Stitcher(50, 16, 4, mode="max")
    with pytest.raises(WindowError, match="window outputs"):
        Stitcher(50, 16, 4).stitch(tokens[:2])
    mean = Stitcher(50, 16, 4, mode="mean")
    mean.add(0, tokens[0])
    with pytest.raises(WindowError, match="already"):
        mean.add(0, tokens[0])
    assert Stitcher(0, 16, 4).stitch(np.zeros((0, 16, 3))).shape == (0, 3)
