"""The annotation head: strand equivariance, labels from tracks, checkpoints, window stitching."""

import numpy as np
import pytest
import torch

from genoctx.errors import InputError
from genoctx.heads import classes
from genoctx.heads.annotation import (AnnotationHead, AnnotationHeadConfig, conv_tokens_first,
                                      labels_from_tracks, load_annotation_model, predict_probs,
                                      predict_probs_many, save_annotation_model)
from genoctx.io.annotation import label_tracks, read_features, read_sequences_genbank
from genoctx.model.config import get_config
from genoctx.model.model import GenoCtxModel
from genoctx.tokenize import nucleotide as nt

SMALL = dict(d_model=32, num_layers=1, num_heads=2, num_kv_heads=1, head_dim=16,
             num_experts=4, top_k=2, expert_dim=32)


@pytest.fixture(scope="module")
def small_model():
    torch.manual_seed(0)
    backbone = GenoCtxModel.from_config(get_config("tiny", **SMALL), backend="torch").eval()
    head = AnnotationHead(AnnotationHeadConfig(in_dim=2 * backbone.config.d_model)).eval()
    return backbone, head


def test_reverse_complement_gives_reverse_complemented_classes(small_model, example_fasta):
    backbone, head = small_model
    seq = b"".join(example_fasta.read_bytes().split(b"\n")[1:])[:700]
    x = torch.from_numpy(nt.encode(seq).astype(np.int64))[None]
    with torch.inference_mode():
        fwd = head(backbone.embed(x))
        rev = head(backbone.embed(nt.reverse_complement(x, dim=1)))
    mapped = rev.flip(1)[..., list(classes.RC_PERMUTATION)]
    torch.testing.assert_close(mapped, fwd, atol=2e-4, rtol=1e-4)


def test_head_equals_averaging_over_the_reverse_complements_view():
    """The head never builds the reverse complement's view of the embedding; its output must
    equal scoring that view with the head's own modules (norm → conv → GELU → linear)."""
    torch.manual_seed(1)
    head = AnnotationHead(AnnotationHeadConfig(in_dim=64, hidden=16, kernel_size=5)).eval()
    with torch.no_grad():  # a non-trivial affine norm and bias, unlike the init
        for p in (head.norm.weight, head.norm.bias, head.conv.bias):
            p.copy_(torch.randn_like(p))
    e = torch.randn(2, 37, 64, requires_grad=True)

    def score(x):
        return head.out(torch.nn.functional.gelu(
            head.conv(head.norm(x).transpose(1, 2)).transpose(1, 2)))

    e_rc = torch.cat([e[..., 32:], e[..., :32]], -1).flip(1)
    want = 0.5 * (score(e) + score(e_rc).flip(1)[..., list(classes.RC_PERMUTATION)])
    got = head(e)
    torch.testing.assert_close(got, want, atol=1e-5, rtol=1e-5)
    # and the same gradients, for training
    g_got = torch.autograd.grad(got.square().sum(), [e, head.conv.weight, head.norm.weight])
    g_want = torch.autograd.grad(want.square().sum(), [e, head.conv.weight, head.norm.weight])
    for a, b in zip(g_got, g_want, strict=True):
        torch.testing.assert_close(a, b, atol=1e-4, rtol=1e-4)
    # inference on the CPU takes the tap-by-tap conv: the same numbers up to rounding
    with torch.inference_mode():
        torch.testing.assert_close(head(e.detach()), want.detach(), atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("B, T, E, O, K", [(2, 37, 64, 16, 5), (1, 3, 8, 4, 9), (3, 1, 5, 2, 3),
                                           (1, 50, 4, 3, 1), (2, 200, 256, 128, 9)])
@pytest.mark.parametrize("bias", [True, False])
def test_tokens_first_conv_equals_conv1d(B, T, E, O, K, bias):
    """Short inputs (T < K: every tap partly in the padding) included."""
    g = torch.Generator().manual_seed(T * K)
    x, w = torch.randn(B, T, E, generator=g), torch.randn(O, E, K, generator=g)
    b = torch.randn(O, generator=g) if bias else None
    want = torch.nn.functional.conv1d(x.transpose(1, 2), w, b, padding=K // 2).transpose(1, 2)
    got = conv_tokens_first(x, w, b)
    assert got.shape == (B, T, O) and got.is_contiguous()
    torch.testing.assert_close(got, want, atol=1e-4 * (E * K) ** 0.5, rtol=1e-5)


def test_labels_follow_the_genbank_cds(example_genbank):
    (name, seq), = read_sequences_genbank(example_genbank)
    tracks = label_tracks(read_features(example_genbank), {name: len(seq)})[name]
    y = labels_from_tracks(tracks)
    plus = np.isin(y, classes.CDS_PLUS)
    minus = np.isin(y, classes.CDS_MINUS)
    truth = ~tracks.ignore
    assert (plus == ((tracks.cds_phase_plus >= 0) & truth)).all()
    assert (minus == ((tracks.cds_phase_minus >= 0) & (tracks.cds_phase_plus < 0) & truth)).all()
    assert plus.sum() > 1000 and minus.sum() > 1000
    # phase 0 of a + strand codon is followed by phases 1 and 2
    starts = np.flatnonzero(y == classes.CDS_PLUS[0])
    starts = starts[starts + 2 < len(y)]
    assert (y[starts + 1] == classes.CDS_PLUS[1]).mean() > 0.99
    assert (y[starts + 2] == classes.CDS_PLUS[2]).mean() > 0.99
    assert ((y == classes.IGNORE_INDEX) == tracks.ignore).all()


def test_checkpoint_round_trip_and_tamper_check(small_model, tmp_path):
    backbone, head = small_model
    save_annotation_model(tmp_path / "m", backbone, head)
    b2, h2 = load_annotation_model(tmp_path / "m")
    for k, v in head.state_dict().items():
        assert torch.equal(v, h2.state_dict()[k])
    raw = bytearray((tmp_path / "m" / "head.safetensors").read_bytes())
    raw[-1] ^= 1
    (tmp_path / "m" / "head.safetensors").write_bytes(bytes(raw))
    with pytest.raises(InputError, match="sha256"):
        load_annotation_model(tmp_path / "m")


def test_a_head_changed_in_place_is_refused_in_the_same_process(small_model, tmp_path):
    """The head's digest was looked up in a cache keyed by path, size and mtime: a byte
    flipped after a first load, keeping both, loaded again. An empty .sha256 was an
    IndexError traceback."""
    import os

    backbone, head = small_model
    save_annotation_model(tmp_path / "m", backbone, head)
    weights = tmp_path / "m" / "head.safetensors"
    load_annotation_model(tmp_path / "m")
    st = weights.stat()
    raw = bytearray(weights.read_bytes())
    raw[-1] ^= 1
    weights.write_bytes(bytes(raw))
    os.utime(weights, ns=(st.st_atime_ns, st.st_mtime_ns))
    with pytest.raises(InputError, match="does not match head.safetensors.sha256"):
        load_annotation_model(tmp_path / "m")
    (tmp_path / "m" / "head.safetensors.sha256").write_text("")
    with pytest.raises(InputError, match="head.safetensors.sha256 is empty"):
        load_annotation_model(tmp_path / "m")


def test_stitched_windows_cover_every_base(small_model, example_fasta):
    backbone, head = small_model
    seq = b"".join(example_fasta.read_bytes().split(b"\n")[1:])[:3000]
    ids = nt.encode(seq)
    steps = []
    p = predict_probs(backbone, head, ids, context=1024, overlap=256, batch_size=2,
                      progress=steps.append)
    assert p.shape == (3000, classes.NUM_CLASSES)
    assert sum(steps) == 3000 and all(n > 0 for n in steps)  # the bar ends at the contig length
    np.testing.assert_allclose(p.sum(1), 1.0, atol=1e-5)
    # windows are context - 1 bases (the model adds BOS); a base deep inside the first window
    # sees the same context as in a pass over that window alone
    single = predict_probs(backbone, head, ids[:1023], context=1024, overlap=0)
    assert single.shape == (1023, classes.NUM_CLASSES)
    np.testing.assert_allclose(p[:894], single[:894], atol=1e-5)


def test_cpu_calls_are_capped_in_bases(small_model, example_fasta, monkeypatch):
    """On CPU the calls in flight take at most CPU_BASES_PER_CALL bases together, whatever
    batch_size asks; batching and worker threads change the probabilities only by rounding."""
    from genoctx.heads import annotation

    backbone, head = small_model
    ids = nt.encode(b"".join(example_fasta.read_bytes().split(b"\n")[1:])[:4000])
    want = predict_probs(backbone, head, ids, context=1024, overlap=256, batch_size=1, workers=1)
    sizes = []
    real = backbone.embed
    monkeypatch.setattr(backbone, "embed", lambda t, *a, **k: sizes.append(t.shape) or real(t, *a, **k))
    monkeypatch.setattr(annotation, "CPU_BASES_PER_CALL", 2048)
    threads = torch.get_num_threads()
    for workers, per_call in ((1, 2048), (2, 1024)):
        sizes.clear()
        got = predict_probs(backbone, head, ids, context=1024, overlap=256, batch_size=8,
                            workers=workers)
        # windows of 1,023 bases (BOS makes 1,024 tokens): 2048 // 1023 = 2 per call
        assert max(s[0] for s in sizes) == per_call // 1023 and sum(s[0] for s in sizes) == 5
        assert max(s[0] * s[1] for s in sizes) <= per_call
        np.testing.assert_allclose(got, want, atol=1e-5)
        assert torch.get_num_threads() == threads  # restored after the worker threads
    # the same setting gives the same bytes on every run
    again = predict_probs(backbone, head, ids, context=1024, overlap=256, batch_size=8, workers=2)
    assert np.array_equal(got, again)


def test_many_records_go_side_by_side_with_each_records_probabilities(small_model, example_fasta,
                                                                       monkeypatch):
    """predict_probs_many gives each record what predict_probs gives it alone, in order, and
    runs records of one window (a metagenome's contigs) on the worker threads side by side,
    instead of one single-call record at a time on one thread."""
    import threading

    backbone, head = small_model
    seq = nt.encode(b"".join(example_fasta.read_bytes().split(b"\n")[1:]))
    cuts = [(0, 300), (300, 800), (800, 3800), (3800, 4200), (4200, 4400), (4400, 4900),
            (5000, 5600)]
    ring = {3}  # a short circle: its windows wrap, so it runs alone
    items = [(k, seq[a:b], k in ring) for k, (a, b) in enumerate(cuts)]
    want = [predict_probs(backbone, head, ids, context=1024, overlap=256, workers=1,
                          circular=c) for _, ids, c in items]
    threads, real = [], backbone.embed
    # Each call waits (up to 0.5 s) for a second one to be in flight. Calls that are side by
    # side then meet, and a pool thread busy waiting cannot take the next call too (a call of
    # a few hundred bases can otherwise end before the next is submitted, and the pool hands
    # that one to the same idle thread: which thread ran a call was left to timing).
    meet, in_flight = threading.Condition(), [0]

    def embed(t, *a, **k):
        with meet:
            in_flight[0] += 1
            meet.notify_all()
            meet.wait_for(lambda: in_flight[0] >= 2, timeout=0.5)
            threads.append((t.shape[1], threading.get_ident()))
        try:
            return real(t, *a, **k)
        finally:
            with meet:
                in_flight[0] -= 1

    monkeypatch.setattr(backbone, "embed", embed)
    read, steps = [], []

    def lazily():
        for item in items:
            read.append(item[0])
            yield item

    got = []
    for key, probs in predict_probs_many(backbone, head, lazily(), context=1024, overlap=256,
                                         progress=steps.append, workers=2):
        assert len(read) <= key + 3  # at most `workers` records read ahead of the one yielded
        got.append((key, probs))
    assert [k for k, _ in got] == list(range(len(items)))
    for (_, probs), w in zip(got, want, strict=True):
        np.testing.assert_allclose(probs, w, atol=1e-5)
    assert sum(steps) == sum(b - a for a, b in cuts)
    # the single-window records (2 before the long one, 3 after the circle) ran on two threads
    # (the model adds BOS itself: embed sees the bases)
    # each run of them on a pool of its own (the threads start their calls in either order)
    first = [t for t in threads if t[0] in (300, 500)][:2]
    later = [t for t in threads[threads.index(first[-1]) + 1:] if t[0] in (200, 500, 600)]
    assert sorted(n for n, _ in first) == [300, 500]
    assert sorted(n for n, _ in later) == [200, 500, 600]
    assert len({i for _, i in first}) == 2 and len({i for _, i in later}) == 2
    again = [p for _, p in predict_probs_many(backbone, head, iter(items), context=1024,
                                              overlap=256, workers=2)]
    assert all(np.array_equal(a, p) for a, (_, p) in zip(again, got))


def test_reduced_probabilities_are_the_sums_of_the_full_ones_to_the_bit(small_model,
                                                                         example_fasta):
    """reduce= sums class groups window by window on the model's device (the track classes,
    what annotate keeps of a prokaryote's probabilities): the same bytes as summing the full
    probabilities afterwards, for lines, circles and runs of short records."""
    from genoctx.heads.annotate import TRACKS

    backbone, head = small_model
    seq = nt.encode(b"".join(example_fasta.read_bytes().split(b"\n")[1:]))
    groups = list(TRACKS.values())
    items = [(0, seq[:300], False), (1, seq[300:800], False), (2, seq[800:4000], False),
             (3, seq[4000:4500], True), (4, seq[4500:9000], True)]
    for workers in (1, 2):
        full = list(predict_probs_many(backbone, head, iter(items), context=1024, overlap=256,
                                       workers=workers))
        reduced = list(predict_probs_many(backbone, head, iter(items), context=1024,
                                          overlap=256, workers=workers, reduce=groups))
        for (k, p), (k2, r) in zip(full, reduced, strict=True):
            assert k == k2 and r.shape == (len(p), len(groups)) and r.dtype == np.float32
            want = np.stack([p[:, list(g)].sum(1) for g in groups], 1)
            assert np.array_equal(r, want), k


def test_default_batch_fills_a_gpu_and_keeps_four_on_the_cpu():
    from genoctx.heads.annotation import GPU_BASES_PER_CALL, default_batch_size

    assert default_batch_size(8191, cpu=True) == 4
    assert default_batch_size(8191, cpu=False) == 64  # the default context's windows
    assert default_batch_size(1023, cpu=False) == GPU_BASES_PER_CALL // 1023
    assert default_batch_size(10 ** 7, cpu=False) == 1


def test_out_of_memory_halves_the_batch_and_keeps_the_probabilities(small_model, example_fasta,
                                                                     monkeypatch):
    """A model call that runs out of (GPU) memory is retried in halves, and later calls take
    that many windows at most: the probabilities are those of small batches."""
    backbone, head = small_model
    ids = nt.encode(b"".join(example_fasta.read_bytes().split(b"\n")[1:])[:6000])
    want = predict_probs(backbone, head, ids, context=1024, overlap=256, batch_size=1, workers=1)
    real, sizes = backbone.embed, []

    def embed(t, *a, **k):
        sizes.append(len(t))
        if len(t) > 2:
            raise torch.OutOfMemoryError("CUDA out of memory (simulated)")
        return real(t, *a, **k)

    monkeypatch.setattr(backbone, "embed", embed)
    got = predict_probs(backbone, head, ids, context=1024, overlap=256, batch_size=8, workers=1)
    np.testing.assert_allclose(got, want, atol=1e-5)
    # 7 windows fail, then 3 (half); from then on calls take 1 window (half of 3), the last
    # group's window too: each failure lowered the limit for the calls after it
    assert sizes[:2] == [7, 3] and set(sizes[2:]) == {1} and len(sizes) == 2 + 8

    def never(t, *a, **k):
        raise torch.OutOfMemoryError("one window is too many")

    monkeypatch.setattr(backbone, "embed", never)
    with pytest.raises(torch.OutOfMemoryError):
        predict_probs(backbone, head, ids, context=1024, overlap=256, batch_size=8, workers=1)
