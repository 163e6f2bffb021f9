"""The decoder's sort-free and single-pass helpers against the plain numpy they replaced.

Each helper must give the same bits as the straightforward form (ties included), since the
decoder's output is compared byte for byte across runs and versions.
"""

from __future__ import annotations

import numpy as np
import pytest

from genoctx.heads import orfs
from genoctx.heads import start_model as sm
from genoctx.heads.codon_model import gc_best_position, gc_frame_position
from genoctx.heads.orfs import encode, find_candidates, find_candidates_many


def _lexsort_first(key, group):
    order = np.lexsort((-key, group))
    return order[np.r_[True, group[order][1:] != group[order][:-1]]] if len(order) else order


@pytest.mark.parametrize("seed", range(5))
def test_first_max_per_run_is_a_stable_sort_s_first(seed):
    rng = np.random.default_rng(seed)
    group = np.sort(rng.integers(0, 300, 2000))
    key = rng.integers(-3, 3, 2000).astype(float)  # many ties
    key[rng.random(2000) < 0.05] = -np.inf
    np.testing.assert_array_equal(sm.first_max_per_run(key, group), _lexsort_first(key, group))
    mask = rng.random(2000) < 0.6
    np.testing.assert_array_equal(sm.best_in_group(key, group, mask),
                                  np.flatnonzero(mask)[_lexsort_first(key[mask], group[mask])])
    shuffled = rng.permutation(group)  # not in runs: the sorting path
    np.testing.assert_array_equal(sm.best_in_group(key, shuffled, mask),
                                  np.flatnonzero(mask)[_lexsort_first(key[mask], shuffled[mask])])
    assert len(sm.first_max_per_run(key[:0], group[:0])) == 0
    holes = key.copy()
    holes[rng.random(2000) < 0.1] = np.nan
    holes[group == group[0]] = np.nan  # a run of NaN only: its first entry
    got = sm.first_max_per_run(holes, group)
    assert len(got) == len(np.unique(group)) and got[0] == 0
    finite = np.isfinite(holes) | np.isneginf(holes)
    np.testing.assert_array_equal(got[1:], _lexsort_first(np.where(finite, holes, -np.inf),
                                                          group)[1:])


def _motif_hits_plain(x):
    n = len(x)
    hits = np.zeros((len(sm.MOTIF_KINDS), n), dtype=bool)
    for k, (length, _) in enumerate(sm.MOTIF_KINDS):
        for i in range(n - length + 1):
            w = x[i:i + length]
            if (w < 4).all():
                hits[k, i] = sm._MOTIF_TABLES[k][int(sum(int(b) << 2 * (length - 1 - t)
                                                          for t, b in enumerate(w)))]
    return hits


def test_motif_hits_match_a_window_by_window_scan():
    rng = np.random.default_rng(1)
    seq = "".join(rng.choice(list("ACGTAGGAGG"), 3000)) + "NAGGAGGN" + "AGGAG"
    seq = seq[:1500] + "NNRAGG" + seq[1500:]
    x = encode(seq.encode())
    got = sm.motif_hits(x)
    np.testing.assert_array_equal(got, _motif_hits_plain(x))
    assert got.sum() > 100
    for short in (b"", b"AGG", b"AGGAG"):
        np.testing.assert_array_equal(sm.motif_hits(encode(short)),
                                      _motif_hits_plain(encode(short)))


def test_gc_best_position_is_the_first_argmax():
    rng = np.random.default_rng(2)
    x = encode("".join(rng.choice(list("ACGTN"), 5001, p=[.3, .2, .2, .28, .02])).encode())
    tot = gc_frame_position(x)
    for frame in range(3):
        n = (len(x) - frame) // 3
        want = np.argmax(tot[frame:frame + 3 * n].reshape(n, 3), axis=1)
        np.testing.assert_array_equal(gc_best_position(x, frame), want)
        np.testing.assert_array_equal(gc_best_position(x, frame, tot), want)


def test_rbs_class_is_the_present_class_of_highest_weight():
    rng = np.random.default_rng(3)
    pres = rng.random((4000, sm.NUM_RBS)) < 0.2
    pres[:, 0] = True
    for weights in (sm.initial_rbs_weights(), rng.normal(size=sm.NUM_RBS),
                    np.round(rng.normal(size=sm.NUM_RBS))):  # rounded: ties
        score = np.where(pres, weights[None, :], -np.inf)
        want = sm.NUM_RBS - 1 - np.argmax(score[:, ::-1], axis=1)
        np.testing.assert_array_equal(sm.rbs_classes(pres, None, weights), want)


def test_presence_patterns_give_the_same_rbs_classes():
    rng = np.random.default_rng(5)
    pres = rng.random((5000, sm.NUM_RBS)) < 0.1
    pres[:, 0] = True
    rows, index = sm.presence_patterns(pres)
    assert len(rows) < len(pres) and rows.dtype == pres.dtype
    np.testing.assert_array_equal(rows[index], pres)
    for weights in (sm.initial_rbs_weights(), rng.normal(size=sm.NUM_RBS)):
        np.testing.assert_array_equal(sm.rbs_classes(rows, None, weights)[index],
                                      sm.rbs_classes(pres, None, weights))
    wide = rng.random((300, 70)) < 0.5  # more than 64 classes: rows compared whole
    rows, index = sm.presence_patterns(wide)
    np.testing.assert_array_equal(rows[index], wide)
    rows, index = sm.presence_patterns(pres[:0])
    assert len(rows) == 0 and len(index) == 0


def test_strand_groups():
    assert orfs.strand_groups([]) == []
    assert orfs.strand_groups([5, 5, 5, 20, 1, 0, 9], limit=10) == [
        slice(0, 2), slice(2, 3), slice(3, 4), slice(4, 7)]
    assert orfs.strand_groups([3, 4]) == [slice(0, 2)]


def _gap_codons_plain(x: np.ndarray, frame: int) -> np.ndarray:
    """Per codon of ``frame``: whether a base of it lies in a run of >= GAP_BASES unknowns."""
    in_gap = np.zeros(len(x), dtype=bool)
    i = 0
    while i < len(x):
        if x[i] >= 4:
            j = i
            while j < len(x) and x[j] >= 4:
                j += 1
            if j - i >= orfs.GAP_BASES:
                in_gap[i:j] = True
            i = j
        else:
            i += 1
    n = (len(x) - frame) // 3
    return np.array([in_gap[frame + 3 * c:frame + 3 * c + 3].any() for c in range(n)], bool)


def _frame_candidates_plain(codons: np.ndarray, frame: int, closed: tuple[bool, bool], min_len: int,
                      min_edge_len: int, table: int = 11, gap=None) -> tuple[np.ndarray, ...]:
    """Candidates of one frame: (j, k, stype, partial5, partial3) arrays; ``closed`` says
    whether the strand's 5' and 3' ends are sequence ends that no gene may run off."""
    n = len(codons)
    stops = np.flatnonzero(np.isin(codons, orfs._STOP_IDS[table]))
    stype_all = orfs.START_TYPE[codons]
    j = np.flatnonzero(stype_all >= 0)
    pos = np.searchsorted(stops, j)
    open3 = pos == len(stops)
    k = np.where(open3, n, stops[np.minimum(pos, max(len(stops) - 1, 0))] if len(stops) else n)
    stype = stype_all[j]
    partial5 = np.zeros(len(j), dtype=bool)
    if not closed[0] and (len(stops) == 0 or stops[0] > 0) and n > 0 and stype_all[0] < 0:
        # The first ORF of the frame runs in from the 5' edge: a gene may start before the contig.
        j = np.concatenate([[0], j])
        k = np.concatenate([[stops[0] if len(stops) else n], k])
        open3 = np.concatenate([[len(stops) == 0], open3])
        stype = np.concatenate([[orfs.EDGE_START], stype]).astype(np.int8)
        partial5 = np.concatenate([[True], partial5])
    length = 3 * (k - j) + np.where(open3, 0, 3)
    edge = partial5 | open3
    keep = np.where(edge, length >= min_edge_len, length >= min_len)
    # no gene spans a gap (a long N run: the bases on its sides need not be contiguous)
    gap = codons == orfs.INVALID_CODON if gap is None else gap
    bad = np.concatenate([[0], np.cumsum(gap)])
    keep &= bad[k] == bad[j]
    if closed[1]:
        keep &= ~open3
    return j[keep], k[keep], stype[keep], partial5[keep], open3[keep]


def _candidates_plain(x, closed, min_len, min_edge_len, table):
    """One strand, one frame at a time: the form find_candidates_many replaced."""
    parts = []
    for f in range(3):
        j, k, stype, p5, p3 = _frame_candidates_plain(orfs.codon_codes(x, f), f, closed,
                                                      min_len, min_edge_len, table,
                                                      _gap_codons_plain(x, f))
        parts.append((np.full(len(j), f, np.int8), j, k, f + 3 * j,
                      f + 3 * k + np.where(p3, 0, 3), stype, p5, p3))
    cand = orfs.Candidates(*[np.concatenate(c) for c in zip(*parts)])
    return cand.take(np.lexsort((cand.start, cand.end)))


@pytest.mark.parametrize("group_bases", [None, 700])
def test_candidates_of_many_strands_are_each_strands_own(monkeypatch, group_bases):
    """find_candidates_many scans strands end to end; every strand gets exactly (values, dtypes,
    order) what the plain one-frame-at-a-time form finds in it alone, and so does
    find_candidates: ends open or closed, strands shorter than a codon, N runs, both genetic
    codes and several length floors."""
    if group_bases:  # many runs of strands, each scanned in its own pass
        monkeypatch.setattr(orfs, "GROUP_BASES", group_bases)
    rng = np.random.default_rng(0)
    for trial in range(100):
        xs, closed = [], []
        for _ in range(rng.integers(1, 8)):
            n = int(rng.choice([0, 1, 2, 3, 4, 5, 6, 7, 50, 200, 999, 3001]))
            p = rng.dirichlet(np.ones(5) * 2)
            p[4] *= 0.05
            x = rng.choice(5, n, p=p / p.sum()).astype(np.uint8)
            if n > 200 and rng.integers(2):  # a run of unknowns about GAP_BASES long,
                run = int(rng.integers(40, 80))  # inside the strand or at one of its ends
                at = int(rng.choice([0, n - run, int(rng.integers(n - run))]))
                x[at:at + run] = 4
            xs.append(x)
            closed.append((bool(rng.integers(2)), bool(rng.integers(2))))
        opts = {"table": int(rng.choice([11, 4])), "min_len": int(rng.choice([6, 30, 90])),
                "min_edge_len": int(rng.choice([3, 30, 60]))}
        got = find_candidates_many(xs, closed, **opts)
        assert len(got) == len(xs)
        for x, c, g in zip(xs, closed, got, strict=True):
            want = _candidates_plain(x, c, opts["min_len"], opts["min_edge_len"], opts["table"])
            single = find_candidates(x, closed=c, **opts)
            for f in want.__dataclass_fields__:
                for got_one in (g, single):
                    a, b = getattr(got_one, f), getattr(want, f)
                    assert a.dtype == b.dtype and np.array_equal(a, b), (trial, f)
    assert find_candidates_many([], []) == []


def test_start_features_and_base_counts_in_blocks_match_the_plain_forms():
    """Composition scored in blocks of rows and base counts one position at a time (memory) give
    exactly the one-shot [N, P] forms, across a block boundary too."""
    rng = np.random.default_rng(4)
    n = sm.ROWS + 1001
    b = rng.integers(0, 5, (n, len(sm.PWM_OFFSETS))).astype(np.int8)
    cols = np.arange(b.shape[1])[None, :]
    want = np.bincount((cols * 5 + b.astype(np.int64)).ravel(),
                       minlength=b.shape[1] * 5).reshape(-1, 5)
    np.testing.assert_array_equal(sm._base_counts(b), want)
    model = sm.StartModel(rng.normal(size=sm.NUM_TYPES), rng.normal(size=sm.NUM_RBS),
                          rng.normal(size=(b.shape[1], 5)))
    stype = rng.integers(0, sm.NUM_TYPES, n).astype(np.int8)
    rbs = rng.integers(0, sm.NUM_RBS, n)
    want = np.stack([model.type_llr[stype], model.rbs_llr[rbs],
                     model.pwm_llr_PB[cols, b].sum(axis=1)], axis=1)
    want[stype == sm.EDGE_START] = 0.0
    np.testing.assert_array_equal(model.features(stype, rbs, b), want)


@pytest.mark.parametrize("length", [0, 2, 5, 6, 7, 8, 100, 3001, 3002])
def test_codon_scores_are_the_codon_sums_of_the_base_scores(length):
    """The decoder's per-codon coding and codon-pair scores against the [Q, L] base scores and
    a codon-by-codon loop (Ns included: their hexamers score 0)."""
    from genoctx.heads import codon_model as cm

    rng = np.random.default_rng(length)
    x = rng.integers(0, 4, length).astype(np.uint8)
    x[rng.random(length) < 0.02] = 4
    kidx, valid = cm.kmer_index(x)
    model = cm.CodingModel(rng.normal(size=(3, cm.NUM_KMERS)).astype(np.float32))
    pair = rng.normal(size=cm.NUM_KMERS)
    km = cm.masked_kmers(kidx, valid)
    b_QL = model.base_scores(kidx, valid)
    for f in range(3):
        got = model.codon_scores(km, f)
        want = cm.codon_sum(b_QL, f)
        assert got.dtype == want.dtype == np.float64
        np.testing.assert_array_equal(got, want)
        n = max((length - f) // 3, 0)
        loop = [pair[kidx[e]] if e < length and valid[e] else 0.0
                for e in (f + 3 * c + cm.ORDER for c in range(n))]
        np.testing.assert_array_equal(cm.dicodon_codon_scores(pair, kidx, valid, f),
                                      np.array(loop, dtype=np.float64).reshape(n))


@pytest.mark.parametrize("length", [0, 1, 2, 3, 59, 60, 61, 121, 122, 500, 1001])
def test_gc_frame_position_counts_the_same_phase_window(length):
    """Each base's count of G+C at the same phase within ±60 bp (clipped to the strand), base
    by base, against the sliced cumulative sums (short strands: windows clipped at both ends)."""
    from genoctx.heads.codon_model import GC_WINDOW

    rng = np.random.default_rng(length)
    x = rng.integers(0, 5, length).astype(np.uint8)
    half = GC_WINDOW // 2 // 3
    gc = (x == 1) | (x == 2)
    want = [sum(gc[j] for j in range(i - 3 * half, i + 3 * half + 1, 3) if 0 <= j < length)
            for i in range(length)]
    np.testing.assert_array_equal(gc_frame_position(x), np.array(want, dtype=np.int64))
