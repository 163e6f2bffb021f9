"""promoters / dnabert-promoter benchmarks and the shared embedding probe."""

from typing import ClassVar

import numpy as np
import pytest

from genoctx.errors import InputError
from genoctx.eval import embedding_probe as ep
from genoctx.eval.benchmarks import dnabert_promoter, promoters
from genoctx.eval.harness import BenchContext

# --------------------------------------------------------------------------- input parsing


def test_join_kmers_hand_example():
    assert dnabert_promoter.join_kmers(["ACGTAC", "CGTACG", "GTACGT"]) == "ACGTACGT"
    assert dnabert_promoter.join_kmers(["ACGTAC"]) == "ACGTAC"


def test_join_kmers_rejects_broken_overlap():
    with pytest.raises(InputError, match="does not overlap"):
        dnabert_promoter.join_kmers(["ACGTAC", "CGTACG", "GTACGA", "TACGTT"])
    with pytest.raises(InputError, match="length"):
        dnabert_promoter.join_kmers(["ACGTAC", "CGTAC"])


def test_read_kmer_tsv_names_the_bad_line(tmp_path):
    good = "ACGTAC CGTACG GTACGT"
    p = tmp_path / "dev.tsv"
    p.write_text(f"sequence\tlabel\n{good}\t1\nACGTAC GGTACG\t0\n")
    with pytest.raises(InputError, match=r"dev.tsv:3:.*does not overlap"):
        dnabert_promoter.read_kmer_tsv(p)
    p.write_text(f"sequence\tlabel\n{good}\t1\nacgtac cgtacg\t0\n")
    seqs, y = dnabert_promoter.read_kmer_tsv(p)
    assert seqs == [b"ACGTACGT", b"ACGTACG"] and y.tolist() == [1, 0]


def test_read_fasta_seqs(tmp_path):
    p = tmp_path / "x.fa"
    p.write_text(">a same\nacgt\nAC\n> 2\nGGNN\n>a same\nTTTT\n")
    assert ep.read_fasta_seqs(p) == [b"ACGTAC", b"GGNN", b"TTTT"]
    p.write_text(">a\n>b\nACGT\n")
    with pytest.raises(InputError, match="record 1 has no sequence"):
        ep.read_fasta_seqs(p)
    p.write_text("")
    with pytest.raises(InputError, match="no FASTA records"):
        ep.read_fasta_seqs(p)


# --------------------------------------------------------------------------- features


def test_kmer_counts_hand_example_with_n():
    X = ep.kmer_counts([b"ACGTN", b"AAAA", b"acNgt"], ks=(1, 2, 3)).toarray()
    names = ep.kmer_names((1, 2, 3))
    assert X.shape == (3, 4 + 16 + 64) and len(names) == X.shape[1]
    got = [{names[j]: X[i, j] for j in np.flatnonzero(X[i])} for i in range(3)]
    # windows touching N count nowhere; lowercase counts as the base
    assert got[0] == {"A": 1, "C": 1, "G": 1, "T": 1, "AC": 1, "CG": 1, "GT": 1,
                      "ACG": 1, "CGT": 1}
    assert got[1] == {"A": 4, "AA": 3, "AAA": 2}
    assert got[2] == {"A": 1, "C": 1, "G": 1, "T": 1, "AC": 1, "GT": 1}
    assert names[:5] == ["A", "C", "G", "T", "AA"] and names[4 + 16 - 1] == "TT"
    assert ep.kmer_counts([b"ACGT"]).shape == (1, 5460)  # default k = 1..6


def test_dedupe_and_cap():
    seqs = [b"A", b"C", b"A", b"G", b"T", b"G"]
    y = np.array([1, 1, 1, 0, 0, 1])  # G carries both labels: dropped entirely
    s, yy, dropped = ep.dedupe(seqs, y)
    assert s == [b"A", b"C", b"T"] and yy.tolist() == [1, 1, 0] and dropped == 3
    y = np.r_[np.ones(10, int), np.zeros(25, int)]
    keep = ep.cap_per_class(y, 8, seed=3)
    assert (np.diff(keep) > 0).all()
    assert (y[keep] == 1).sum() == 8 and (y[keep] == 0).sum() == 8
    assert keep.tolist() == ep.cap_per_class(y, 8, seed=3).tolist()
    assert ep.cap_per_class(y, None, seed=3).tolist() == list(range(35))


# --------------------------------------------------------------------------- cross-validation


def test_folds_stratified_and_repeatable():
    y = np.r_[np.ones(30, int), np.zeros(70, int)]
    a, b = ep.stratified_folds(y, seed=7), ep.stratified_folds(y, seed=7)
    assert len(a) == 5
    for (tr1, te1), (tr2, te2) in zip(a, b, strict=True):
        assert tr1.tolist() == tr2.tolist() and te1.tolist() == te2.tolist()
        assert y[te1].sum() == 6 and len(te1) == 20  # 30/5 positives, 70/5 negatives
        assert not set(tr1) & set(te1)
    assert sorted(np.concatenate([te for _, te in a]).tolist()) == list(range(100))
    assert any(x[1].tolist() != z[1].tolist()
               for x, z in zip(a, ep.stratified_folds(y, seed=8), strict=True))
    with pytest.raises(InputError, match="of each class"):
        ep.stratified_folds(np.r_[np.ones(3, int), np.zeros(20, int)], seed=0)


class _Spy:
    """Records the rows it is fitted on (column 0 holds the row id)."""

    fitted: ClassVar[list] = []

    def fit(self, X, y):
        _Spy.fitted.append(X[:, 0].astype(int).tolist())
        return self

    def decision_function(self, X):
        return X[:, 1] - 0.5


def test_cross_validate_fits_on_training_rows_only():
    rng = np.random.default_rng(0)
    y = np.r_[np.ones(20, int), np.zeros(30, int)]
    X = np.c_[np.arange(50), y + rng.normal(0, 0.1, 50)]
    folds = ep.stratified_folds(y, seed=1)
    _Spy.fitted = []
    res = ep.cross_validate(X, y, folds, _Spy)
    assert [sorted(f) for f in _Spy.fitted] == [sorted(tr.tolist()) for tr, _ in folds]
    assert res.auroc_folds == [1.0] * 5 and res.mcc_folds == [1.0] * 5
    assert not np.isnan(res.oof).any()


def test_probe_is_at_chance_on_shuffled_labels(data_root, tmp_path):
    """A leak (test rows in fitting) would score shuffled labels well above 0.5."""
    ctx = BenchContext(data_root=data_root, out=tmp_path, model=None)
    seqs, y, _ = promoters.load_task(ctx, promoters.TASKS[0], cap=150)
    X = ep.kmer_counts(seqs)
    folds = ep.stratified_folds(y, seed=0)
    real = ep.cross_validate(X, y, folds, lambda: ep.make_probe(ep.KMER_METHOD, 0))
    y_shuf = np.random.default_rng(0).permutation(y)
    folds_s = ep.stratified_folds(y_shuf, seed=0)
    shuf = ep.cross_validate(X, y_shuf, folds_s, lambda: ep.make_probe(ep.KMER_METHOD, 0))
    assert real.summary()["auroc"] > 0.85
    assert 0.4 < shuf.summary()["auroc"] < 0.6
    assert abs(shuf.summary()["mcc"]) < 0.2


# --------------------------------------------------------------------------- benchmarks (quick)


@pytest.fixture(scope="module")
def quick_ctx(data_root, tmp_path_factory):
    return BenchContext(data_root=data_root, out=tmp_path_factory.mktemp("eval"), quick=True,
                        quiet=True)


def _check_rows(res, datasets):
    assert {(r.dataset, r.method, r.metric) for r in res.rows} == {
        (d, m, k) for d in datasets for m in (ep.EMBED_METHOD, ep.KMER_METHOD)
        for k in ("MCC (5-fold mean)", "AUROC (5-fold mean)")}
    for r in res.rows:
        lo = -1.0 if r.metric.startswith("MCC") else 0.0
        assert lo <= r.value <= 1.0
    for p in res.plots:
        assert p.is_file() and p.stat().st_size > 1000


def test_promoters_quick(quick_ctx):
    res = promoters.run(quick_ctx)
    names = [t.name for t in promoters.TASKS[:promoters.QUICK_TASKS]]
    assert list(res.metrics["tasks"]) == names
    _check_rows(res, names)
    for name in names:
        m = res.metrics["tasks"][name]
        assert m["n_pos"] == m["n_neg"] == promoters.QUICK_CAP
        for method in (ep.EMBED_METHOD, ep.KMER_METHOD):
            s = m[method]
            assert len(s["mcc_folds"]) == len(s["auroc_folds"]) == len(s["chosen_C"]) == 5
            assert s["auroc"] == pytest.approx(np.mean(s["auroc_folds"]))
            assert set(s["chosen_C"]) <= set(ep.C_GRIDS[method])
    # sigma70 boxes are hexamers: the k-mer baseline must find them even on 300 sequences
    assert res.metrics["tasks"]["E. coli σ70"][ep.KMER_METHOD]["auroc"] > 0.85
    assert any(r.anchor for r in res.rows)
    assert set(quick_ctx.data_files) >= {promoters.TASKS[0].positives,
                                         promoters.TASKS[0].negatives}


def test_dnabert_promoter_quick(quick_ctx):
    res = dnabert_promoter.run(quick_ctx)
    _check_rows(res, [dnabert_promoter.DATASET])
    m = res.metrics
    assert m["n_pos"] == m["n_neg"] == dnabert_promoter.QUICK_CAP
    assert m["n_pos_available"] == m["n_neg_available"] == 500
    assert m["lengths"] == [101] and m["duplicates_dropped"] == 0
    assert all(not r.anchor for r in res.rows)


def test_dnabert_promoter_without_model(quick_ctx):
    ctx = BenchContext(data_root=quick_ctx.data_root, out=quick_ctx.out, model=None,
                       quick=True, quiet=True)
    res = dnabert_promoter.run(ctx)
    assert {r.method for r in res.rows} == {ep.KMER_METHOD}
    assert ep.EMBED_METHOD not in res.metrics and ep.KMER_METHOD in res.metrics
