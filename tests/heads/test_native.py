"""The decoder's compiled loops (genoctx/heads/_native.c) against the Python/numpy versions they
replace: the same predecessors, sums, features and gene calls bit for bit, and errors (not
crashes) on buffers of the wrong kind."""

import gzip
import shutil
import sysconfig

import numpy as np
import pytest
from Bio import SeqIO

from genoctx.heads import decoder
from genoctx.heads import orf_scorer as osc
from genoctx.heads.decoder import DecoderParams, call_genes_multi, select_genes

native = pytest.importorskip("genoctx.heads._native", reason="genoctx's C part is not built")


def test_built_where_a_compiler_is():
    """Where the install had a C compiler, the decoder and the scorer use the compiled loops
    (an install that silently lost them would only be slower, so say it here)."""
    cc = (sysconfig.get_config_var("CC") or "cc").split()[0]
    if shutil.which(cc) is None:
        pytest.skip(f"no C compiler ({cc})")
    assert decoder._chain is native.chain
    assert osc._tree_sum is native.tree_sum
    assert osc._translation is native.translation
    from genoctx.heads import splice_sites, spliced_decoder

    assert spliced_decoder._viterbi is native.viterbi
    assert spliced_decoder._traceback_c is native.traceback
    assert splice_sites._site_score is native.site_score


def _genes(rng, n, span):
    """Many overlapping candidates on both strands, some starting inside another's stop codon
    (operon credits: gaps of -1 and -4), some sharing ends (ties in the sort)."""
    lo = rng.integers(0, span, n)
    hi = lo + 3 * rng.integers(30, 400, n)
    strand = rng.choice([1, -1], n)
    k = n // 5
    hi[1:k:2] = hi[0:k - 1:2]  # shared ends
    for i in range(k, 2 * k, 2):  # a same-strand partner 1 or 4 bp into this one's 3' end
        d = (1, 4)[i % 4 == 0]
        strand[i + 1] = strand[i]
        if strand[i] == 1:
            lo[i + 1] = hi[i] - d
            hi[i + 1] = lo[i + 1] + 300
        else:
            hi[i + 1] = lo[i] + d
            lo[i + 1] = hi[i + 1] - 300
    score = np.round(rng.normal(1.0, 4.0, n), 1)  # rounded: equal values tie
    credit = np.round(rng.uniform(0, 3, n), 1)
    return lo.astype(np.int64), hi.astype(np.int64), strand.astype(np.int64), score, credit


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("link_weight", [0.0, 0.65])
def test_chain_matches_the_python_loop(seed, link_weight, monkeypatch):
    rng = np.random.default_rng(seed)
    lo, hi, strand, score, credit = _genes(rng, 4000, 200_000)
    p = DecoderParams()
    fast = select_genes(lo, hi, strand, score, p, link_weight, credit)
    monkeypatch.setattr(decoder, "_chain", None)
    slow = select_genes(lo, hi, strand, score, p, link_weight, credit)
    assert len(fast) > 100
    np.testing.assert_array_equal(fast, slow)


def test_chain_predecessors_and_tails_match(monkeypatch):
    """The whole DP table, not only the chosen path: every gene's predecessor and each strand's
    best (value, gene)."""
    rng = np.random.default_rng(7)
    lo, hi, strand, score, credit = _genes(rng, 3000, 100_000)
    order = np.lexsort((strand, lo, hi)).astype(np.int64)
    args = (order, lo, hi, strand, score, credit)
    rest = ((30, 45, 60, 30), True, 0.65, decoder.OPERON_NEAR, decoder.OPERON_FAR)
    prev_c, prev_p = np.full(len(lo), -1), np.full(len(lo), -1)
    tails_c = native.chain(*args, prev_c, *rest)
    tails_p = decoder._chain_py(*args, prev_p, *rest)
    assert tails_c == tails_p
    np.testing.assert_array_equal(prev_c, prev_p)
    assert (prev_c >= 0).sum() > 1000
    # no genes at all: no tails
    none = np.zeros(0, dtype=np.int64)
    assert native.chain(none, none, none, none, np.zeros(0), np.zeros(0), none.copy(),
                        *rest) == (None, None)


def _decode_both(records, monkeypatch, **kw):
    fast = call_genes_multi(records, **kw)
    with monkeypatch.context() as m:
        m.setattr(decoder, "_chain", None)
        m.setattr(osc, "_tree_sum", None)
        m.setattr(osc, "_translation", None)
        slow = call_genes_multi(records, **kw)
    return fast, slow


def test_same_calls_on_a_genome(data_root, monkeypatch):
    """E. coli's first 600 kb self-trained (``single``, the ORF scorer on): the same calls,
    scores and log-odds with the compiled loops as without."""
    with gzip.open(data_root / "genomes/bacteria/Escherichia_coli_K12_MG1655.gbff.gz", "rt") as fh:
        rec = next(SeqIO.parse(fh, "genbank"))
    records = [(rec.id, bytes(rec.seq[:600_000]).upper())]
    fast, slow = _decode_both(records, monkeypatch, procedure="single")
    assert len(fast) > 500
    assert fast == slow


def test_same_calls_on_the_example_plasmid(example_genbank, monkeypatch):
    """pPCP1 from the pre-trained bank (``meta``), in pieces too."""
    rec = SeqIO.read(example_genbank, "genbank")
    seq = bytes(rec.seq).upper()
    for records in ([(rec.id, seq)], [("a", seq[:4000]), ("b", seq[4000:])]):
        fast, slow = _decode_both(records, monkeypatch, procedure="meta")
        assert fast and fast == slow


def test_tree_sum_matches_numpy():
    """The shipped scorer's trees: rows of noise, and rows set exactly at the thresholds (the
    ``<=`` side), in any number of threads."""
    trees = osc.load().trees
    rng = np.random.default_rng(0)
    x = rng.normal(size=(3000, len(osc.FEATURE_NAMES)))
    inner = trees.feature >= 0
    f, t = trees.feature[inner], trees.threshold[inner]
    for r in range(1000):  # the threshold of some node of some tree, exactly
        k = rng.integers(len(f), size=5)
        x[r, f[k]] = t[k]
    want = trees.decision_function(x, chunk=256, threads=1, native=False)
    for threads in (1, 3):
        np.testing.assert_array_equal(trees.decision_function(x, threads=threads), want)
    np.testing.assert_array_equal(trees.decision_function(x[:1]), want[:1])
    assert trees.decision_function(x[:0]).shape == (0,)
    # strided input is copied, not read wrongly
    np.testing.assert_array_equal(trees.decision_function(np.asfortranarray(x)), want)


@pytest.mark.parametrize("table", [11, 4])
def test_translation_matches_numpy(pcp1_records, table):
    """Every candidate start of pPCP1's strands (ORFs cut by the ends included), and random
    sequence with N runs and ORFs reaching past its end, in codes 11 and 4."""
    from genoctx.heads.decoder import GenomeDecoder

    d = GenomeDecoder(pcp1_records, None, DecoderParams())
    for s in d.strands:
        c = s.cand
        want = osc.translation_features(s.x, c.frame, c.j, c.k, d.gc, table, native=False)
        got = osc.translation_features(s.x, c.frame, c.j, c.k, d.gc, table)
        np.testing.assert_array_equal(got, want)
    rng = np.random.default_rng(1)
    x = rng.integers(0, 4, 3001).astype(np.uint8)
    x[100:160] = 4  # an N run
    n = 1000
    frame = rng.integers(0, 3, n)
    j = rng.integers(-1, 1000, n)
    k = j + rng.integers(0, 300, n)  # some past the end, some empty
    frame[:3], j[:3], k[:3] = 2, 998, 1200  # the last codons of frame 2, and none of them
    for length in (3001, 3000, 5, 2):
        want = osc.translation_features(x[:length], frame, j, k, 0.43, table, native=False)
        np.testing.assert_array_equal(
            osc.translation_features(x[:length], frame, j, k, 0.43, table), want)


@pytest.fixture(scope="module")
def pcp1_records(example_genbank):
    rec = SeqIO.read(example_genbank, "genbank")
    return [(rec.id, bytes(rec.seq).upper())]


@pytest.fixture(scope="module")
def worm(data_root):
    """Two stretches of C. elegans (train) with the embedded head's probabilities."""
    from genoctx.heads.annotation import load_annotation_model, predict_probs
    from genoctx.io.annotation import read_sequences
    from genoctx.tokenize import nucleotide as nt

    (_, s), *_ = read_sequences(data_root / "genomes/eukaryote_chunks/C.elegans.fa.gz")
    records = [("a", bytes(s[:30_000]).upper()), ("b", bytes(s[40_000:57_000]).upper())]
    backbone, head = load_annotation_model("embedded")
    return records, {c: predict_probs(backbone, head, nt.encode(x)) for c, x in records}


@pytest.mark.parametrize("open_ends", [False, True])
def test_spliced_decoder_same_genes(worm, open_ends, monkeypatch):
    """Eukaryote mode on real sequence and the head's real probabilities, two records of
    different lengths in one batch (open ends: each record's last scores read mid-block): the
    same spliced genes with the compiled Viterbi and site scores as with numpy's."""
    from genoctx.heads import splice_sites
    from genoctx.heads import spliced_decoder as sd

    records, probs = worm
    p = sd.DecoderParams(partial_ends=open_ends)
    fast = sd.decode_many(records, probs, params=p)
    monkeypatch.setattr(sd, "_viterbi", None)
    monkeypatch.setattr(sd, "_traceback_c", None)
    monkeypatch.setattr(splice_sites, "_site_score", None)
    slow = sd.decode_many(records, probs, params=p)
    assert len(fast) >= 3 and any(len(g.cds) > 1 for g in fast)
    assert fast == slow


def test_spliced_traceback_same_path(worm, monkeypatch):
    """The C walk back gives the state path of the Python walk, base for base, at closed and
    open ends (paths that begin or end inside a gene) and through introns and forced exons."""
    from genoctx.heads import spliced_decoder as sd

    records, probs = worm
    real, walked = sd._traceback, []

    def both(bp, b, mc, m, me, length, end=None, open_left=False):
        fast = real(bp, b, mc, m, me, length, end, open_left)
        slow = real(bp, b, mc, m, me, length, end, open_left, native=False)
        np.testing.assert_array_equal(fast, slow)
        walked.append(np.asarray(mc.kind)[fast])
        return fast

    monkeypatch.setattr(sd, "_traceback", both)
    for open_ends in (False, True):
        sd.decode_many(records, probs, params=sd.DecoderParams(partial_ends=open_ends))
    kinds = np.concatenate(walked)
    assert len(walked) >= 4 and (kinds == "intron").sum() > 1000 and (kinds == "exon").sum() > 1000


def test_site_score_matches_numpy():
    """The shipped donor and acceptor models and one without pair terms, on sequence with N
    runs, down to no bases at all."""
    from genoctx.heads import splice_sites as ss

    rng = np.random.default_rng(2)
    x = rng.integers(0, 4, 5000).astype(np.uint8)
    x[1000:1100] = 4
    models = ss.default_site_models() + (ss.SiteModel(-3, rng.normal(size=(9, 4)), None, 0.5),
                                         ss.SiteModel(2, rng.normal(size=(4, 4))))
    for m in models:
        for n in (5000, 7, 1, 0):
            np.testing.assert_array_equal(m.score(x[:n]), m.score(x[:n], native=False))


def test_bad_buffers_are_errors():
    trees = osc.load().trees
    arrays = (trees.feature, trees.threshold, trees.left, trees.right, trees.value)
    x = np.zeros((4, len(osc.FEATURE_NAMES)))
    out = np.zeros(4)
    with pytest.raises(TypeError, match="x must be a 2-d"):
        native.tree_sum(x.astype(np.float32), *arrays, 0.0, out)
    with pytest.raises(TypeError, match="feature must be"):
        native.tree_sum(x, trees.feature.astype(np.int64), *arrays[1:], 0.0, out)
    with pytest.raises(ValueError, match="out must"):
        native.tree_sum(x, *arrays, 0.0, np.zeros(3))
    with pytest.raises(ValueError, match="one shape"):
        native.tree_sum(x, *arrays[:4], trees.value[:, :-1].copy(), 0.0, out)
    bad = trees.left.copy()
    bad[0, 0] = 10_000  # a child outside its tree
    with pytest.raises(ValueError, match="outside"):
        native.tree_sum(x, trees.feature, trees.threshold, bad, trees.right, trees.value, 0.0, out)
    loop = trees.left.copy()
    loop[0, 0] = 0  # a node its own child: would never reach a leaf
    with pytest.raises(ValueError, match="outside"):
        native.tree_sum(x, trees.feature, trees.threshold, loop, trees.right, trees.value, 0.0, out)
    ro = np.zeros(4)
    ro.setflags(write=False)
    with pytest.raises((BufferError, ValueError)):  # out must be writable
        native.tree_sum(x, *arrays, 0.0, ro)
    mono = np.zeros((4, 5))
    with pytest.raises(ValueError, match="inside xp"):
        native.site_score(np.zeros(10, dtype=np.uint8), 0, mono, None, 0.0, np.zeros(8))
    with pytest.raises(ValueError, match="di"):
        native.site_score(np.zeros(10, dtype=np.uint8), 0, mono, np.zeros((4, 25)), 0.0,
                          np.zeros(5))
    with pytest.raises(ValueError, match="above 4"):
        native.site_score(np.full(10, 9, dtype=np.uint8), 0, mono, None, 0.0, np.zeros(5))
    hist, pred = np.zeros((1, 2, 4)), np.zeros((2, 6), dtype=np.int64)
    tr, em, bp = np.zeros((5, 1, 6), np.float32), np.zeros((5, 1, 3)), np.zeros((5, 1, 3), np.int8)
    native.viterbi(hist, pred, tr, em, bp, 0)  # 3 states, 2 predecessors each: fine
    with pytest.raises(ValueError, match="shapes"):
        native.viterbi(hist, pred, tr, em[:4], bp, 0)
    with pytest.raises(ValueError, match="outside the history"):
        native.viterbi(hist, pred + 8, tr, em, bp, 0)
    with pytest.raises(TypeError, match="tr must be"):
        native.viterbi(hist, pred, tr.astype(np.float64), em, bp, 0)
    # traceback: 3 states, 2 predecessors; state 1 <- 0 one base back, state 2 <- an exon jump
    # of min_exon 3 from state 0 (its first two bases filled with state 1); row 1 of state 0
    # never
    step = np.asarray([[0, 0], [3, 0], [0, 0], [0, 1], [2, 0], [0, 0]], dtype=np.int64)
    fill = np.ones((6, 2), dtype=np.int16)
    bp = np.zeros((6, 1, 3), np.int8)
    path = np.full(6, -1, dtype=np.int16)
    assert native.traceback(bp, 0, step, fill, 2, 3, 5, 2, path) == 0
    assert path.tolist() == [0, 0, 0, 1, 1, 2]
    with pytest.raises(ValueError, match="before the sequence"):
        native.traceback(bp, 0, step, fill, 2, 3, 1, 2, path)
    bp[2, 0, 0] = 1
    with pytest.raises(ValueError, match="impossible state"):
        native.traceback(bp, 0, step, fill, 2, 3, 5, 2, path)
    bp[2, 0, 0] = 7
    with pytest.raises(ValueError, match="outside the predecessors"):
        native.traceback(bp, 0, step, fill, 2, 3, 5, 2, path)
    with pytest.raises(ValueError, match="shapes"):
        native.traceback(bp, 1, step, fill, 2, 3, 5, 2, path)
    with pytest.raises(TypeError, match="path must be"):
        native.traceback(bp, 0, step, fill, 2, 3, 5, 2, path.astype(np.int32))

    codes = np.zeros(30, dtype=np.uint8)
    frame, table = np.zeros(2, dtype=np.int64), osc._codon_table(11)
    with pytest.raises(TypeError, match="x must be"):
        native.translation(codes.astype(np.int8), frame, frame, frame + 3, table, 0.5,
                           np.zeros((2, 22)))
    with pytest.raises(ValueError, match="above 4"):
        native.translation(codes + 5, frame, frame, frame + 3, table, 0.5, np.zeros((2, 22)))
    with pytest.raises(ValueError, match="below -1"):
        native.translation(codes, frame, frame - 2, frame + 3, table, 0.5, np.zeros((2, 22)))
    with pytest.raises(ValueError, match="22"):
        native.translation(codes, frame, frame, frame + 3, table, 0.5, np.zeros((2, 21)))
    with pytest.raises(ValueError, match="outside 0-21"):
        native.translation(codes, frame, frame, frame + 3, table + 30, 0.5, np.zeros((2, 22)))

    one = np.zeros(3, dtype=np.int64)
    rest = ((30, 45, 60, 30), True, 0.65, 60, 180)
    good = (one, one, one + 1, np.ones(3, dtype=np.int64), np.zeros(3), np.zeros(3))
    with pytest.raises(TypeError, match="lo must be"):
        native.chain(one, one.astype(np.int32), *good[2:], one.copy(), *rest)
    with pytest.raises(ValueError, match="one length"):
        native.chain(*good, np.zeros(2, dtype=np.int64), *rest)
    with pytest.raises(IndexError, match="out of range"):
        native.chain(one + 3, *good[1:], one.copy(), *rest)
