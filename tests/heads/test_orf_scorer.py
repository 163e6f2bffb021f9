"""The cross-genome ORF scorer: features, tree export, shipped file, and its use in the decoder."""

import dataclasses
import hashlib
import itertools
import json
import shutil
from collections import Counter

import numpy as np
import pytest
from Bio import SeqIO
from Bio.Seq import Seq

from genoctx.errors import InputError
from genoctx.heads import orf_scorer as osc
from genoctx.heads import orfs
from genoctx.heads.decoder import DecoderParams, GenomeDecoder, call_genes
from genoctx.heads.orfs import find_candidates, to_forward


@pytest.fixture(scope="module")
def pcp1(example_genbank):
    rec = SeqIO.read(example_genbank, "genbank")
    return rec.id, str(rec.seq).upper()


@pytest.fixture(scope="module")
def pcp1_truth(example_genbank):
    rec = SeqIO.read(example_genbank, "genbank")
    return [(rec.id, int(f.location.start), int(f.location.end), int(f.location.strand))
            for f in rec.features if f.type == "CDS" and "pseudo" not in f.qualifiers]


def test_translation_features_match_biopython(pcp1):
    _, seq = pcp1
    x = np.frombuffer(seq.encode(), dtype=np.uint8)
    codes = np.full(256, 4, dtype=np.uint8)
    for i, b in enumerate(b"ACGT"):
        codes[b] = i
    x = codes[x]
    cand = find_candidates(x, closed=True, min_len=90, min_edge_len=60)
    gc = float(np.isin(x, (1, 2)).mean())
    feats = osc.translation_features(x, cand.frame, cand.j, cand.k, gc)
    assert feats.shape == (len(cand), 22)
    for i in range(0, len(cand), max(1, len(cand) // 25)):
        orf = seq[cand.start[i]:cand.end[i]]
        protein = str(Seq(orf).translate(table=11))
        assert protein.endswith("*") and "*" not in protein[:-1]
        body = protein[1:-1]  # after the start codon, before the stop
        counts = Counter(body)
        want = np.array([counts[a] for a in osc.AMINO], dtype=float) / max(len(body), 1)
        np.testing.assert_allclose(feats[i, :20], want, atol=1e-12)
        codons = orf[3:-3]
        g = sum(b in "GC" for b in codons) / max(len(codons), 1)
        g3 = sum(b in "GC" for b in codons[2::3]) / max(len(codons) // 3, 1)
        assert feats[i, 20] == pytest.approx(g - gc)
        assert feats[i, 21] == pytest.approx(g3 - gc)


def test_tree_export_matches_scikit_learn(tmp_path):
    from sklearn.ensemble import HistGradientBoostingClassifier

    rng = np.random.default_rng(0)
    x = rng.normal(size=(3000, len(osc.FEATURE_NAMES)))
    y = (x[:, 0] + 0.5 * x[:, 7] ** 2 - x[:, 21] + rng.normal(size=3000) > 0.5)
    clf = HistGradientBoostingClassifier(max_iter=25, max_leaf_nodes=15,
                                         random_state=0).fit(x, y)
    trees = osc.TreeEnsemble.from_sklearn(clf)
    xt = rng.normal(size=(500, len(osc.FEATURE_NAMES)))
    np.testing.assert_allclose(trees.decision_function(xt), clf.decision_function(xt),
                               atol=1e-9)
    # rows go through in chunks: any chunk size gives the same bits, and no rows gives none
    whole = trees.decision_function(xt)
    for chunk in (1, 7, 499, 500, 10_000):
        np.testing.assert_array_equal(trees.decision_function(xt, chunk=chunk), whole)
    assert trees.decision_function(xt[:0]).shape == (0,)
    scorer = osc.OrfScorer(trees, (0.1, -2.0), weight=2.0, clip=1.5)
    scorer.save(tmp_path)
    back = osc.load(tmp_path)
    np.testing.assert_array_equal(back.adjustment(xt), scorer.adjustment(xt))
    adj = scorer.adjustment(xt)
    assert np.abs(adj).max() <= 2.0 * 1.5 + 1e-12
    want = 2.0 * np.clip(clf.decision_function(xt) - (0.1 * xt[:, 0] - 2.0), -1.5, 1.5)
    np.testing.assert_allclose(adj, want, atol=1e-9)
    deep = xt[:3].copy()
    deep[:, 0] = -(2.0 * 1.5 + osc.SKIP_MARGIN) - 0.1  # cannot reach zero: not scored
    assert (scorer.adjustment(deep) == 0).all()


def test_load_refuses_a_changed_file(tmp_path):
    shutil.copy(osc.WEIGHTS_DIR / osc.FILE, tmp_path / osc.FILE)
    shutil.copy(osc.WEIGHTS_DIR / f"{osc.FILE}.sha256", tmp_path / f"{osc.FILE}.sha256")
    osc.load(tmp_path)
    data = bytearray((tmp_path / osc.FILE).read_bytes())
    data[-1] ^= 1
    (tmp_path / osc.FILE).write_bytes(bytes(data))
    with pytest.raises(InputError, match="sha256"):
        osc.load(tmp_path)
    (tmp_path / osc.FILE).unlink()
    with pytest.raises(InputError, match="missing"):
        osc.load(tmp_path)


def test_shipped_scorer_is_recorded():
    info = json.loads((osc.WEIGHTS_DIR / "orf_scorer.json").read_text())
    digest = hashlib.sha256((osc.WEIGHTS_DIR / osc.FILE).read_bytes()).hexdigest()
    assert info["sha256"] == digest
    assert info["features"] == list(osc.FEATURE_NAMES)
    assert info["train_files"] and all(len(v) == 64 for v in info["train_files"].values())
    assert not any("Brucella" in f or "Haemophilus" in f for f in info["train_files"])
    scorer = osc.default_scorer()
    assert scorer.weight == info["weight"] and len(scorer.trees.feature) == info["trees"]


@dataclasses.dataclass
class _Fixed:
    value: float

    def adjustment(self, x):
        return np.full(len(x), self.value)


def test_decoder_uses_the_scorer(pcp1):
    cid, seq = pcp1
    records = [(cid, seq.encode())]
    d = GenomeDecoder(records, None, DecoderParams(orf_scorer=False))
    plain = d.calls(d.train())
    assert plain
    rows, _, where = osc.decoder_rows(d)
    assert rows.shape == (sum(len(w) for w in where), len(osc.FEATURE_NAMES))
    d.set_orf_adjust(_Fixed(-1000.0))  # every ORF far below zero: nothing can be called
    assert d.calls(d.decode()) == []
    d.set_orf_adjust(_Fixed(0.0))
    assert d.calls(d.decode()) == plain
    # the shipped default adds the scorer's bounded term to each ORF's log-odds
    shipped = call_genes(seq.encode(), contig=cid, procedure="single")
    logit = {(g.strand, g.start, g.end): g.attrs["logit"] for g in plain}
    bound = osc.default_scorer().weight * osc.default_scorer().clip
    same = [(g.attrs["logit"], logit[(g.strand, g.start, g.end)]) for g in shipped
            if (g.strand, g.start, g.end) in logit]
    assert len(same) >= 0.8 * len(plain)
    delta = np.array([a - b for a, b in same])
    assert np.abs(delta).max() <= bound + 1e-3
    assert np.abs(delta).max() > 0.01


def test_fit_labels_mark_annotated_stops(pcp1, pcp1_truth):
    cid, seq = pcp1
    d = GenomeDecoder([(cid, seq.encode())], None, DecoderParams(orf_scorer=False))
    d.train()
    x, y, where = osc.decoder_rows(d, pcp1_truth)
    assert len(y) == len(x) and y.dtype == bool
    stops = {(t[3], t[2] - 1 if t[3] == 1 else t[1]) for t in pcp1_truth}
    marked = set()
    for s, best in zip(d.strands, where):
        lo, hi = to_forward(s.cand.start[best], s.cand.end[best], s.length, s.strand)
        marked |= {(s.strand, int(h) - 1 if s.strand == 1 else int(l)) for l, h in zip(lo, hi)}
    # every annotated stop that ends an ORF is labelled, and nothing else is
    assert int(y.sum()) == len(stops & marked) >= 0.8 * len(stops)


@pytest.mark.parametrize("group_bases", [None, 6_000])
def test_rows_of_many_contigs_match_each_strand_alone(pcp1, monkeypatch, group_bases):
    """decoder_rows scores all strands at once (their bases end to end, in one or several runs);
    every row equals the one computed from its strand alone, translation features included."""
    if group_bases:
        monkeypatch.setattr(orfs, "GROUP_BASES", group_bases)
    cid, seq = pcp1
    cuts = [0, 1, 250, 2_000, 2_001, 4_700, 8_000, len(seq)]  # a 1-bp contig, odd lengths
    records = [(f"{cid}_{i}", seq[a:b].encode()) for i, (a, b) in enumerate(itertools.pairwise(cuts))]
    d = GenomeDecoder(records, None, DecoderParams(orf_scorer=False))
    d.train()
    x, _, where = osc.decoder_rows(d)
    want = []
    for si, s in enumerate(d.strands):
        best, logit, gene = d.orf_table(si)
        np.testing.assert_array_equal(best, where[si])
        tr = osc.translation_features(s.x, s.cand.frame[best], s.cand.j[best], s.cand.k[best],
                                      d.gc)
        want.append(np.column_stack([logit, gene[:, :5], tr]))
    assert sum(len(w) for w in where) > 20
    np.testing.assert_array_equal(x, np.vstack(want))


def test_threads_do_not_change_the_log_odds():
    """Chunks of ORFs scored side by side in threads give the one-thread log-odds exactly."""
    trees = osc.load().trees
    x = np.random.default_rng(0).normal(size=(2600, int(trees.feature.max()) + 1))
    one = trees.decision_function(x, chunk=256, threads=1)
    assert np.array_equal(trees.decision_function(x, chunk=256, threads=3), one)
    assert np.array_equal(trees.decision_function(x, chunk=256), one)  # default: by the cores
    assert np.array_equal(trees.decision_function(x[:5], chunk=1, threads=2), one[:5])
