"""Metrics against hand-computed cases and scikit-learn / scipy references."""

import numpy as np
import pytest
from sklearn import metrics as skm

from genoctx.eval import metrics as M
from genoctx.heads.decoder import GeneCall


def _g(contig, start, end, strand):
    return GeneCall(contig, start, end, strand, 1.0, "ATG")


def test_gene_metrics_hand_case():
    truth = [_g("a", 0, 300, 1), _g("a", 500, 800, -1), _g("a", 900, 1200, 1), _g("b", 10, 100, 1)]
    pred = [
        _g("a", 30, 300, 1),     # same stop, other start: match, start disagrees
        _g("a", 500, 770, -1),   # minus strand: stop is the start (500), start differs
        _g("a", 900, 1200, -1),  # wrong strand
        _g("b", 10, 100, 1),     # exact
        _g("b", 200, 400, 1),    # false positive
    ]
    m = M.gene_metrics(pred, truth)
    assert (m.n_true, m.n_pred, m.tp) == (4, 5, 3)
    assert m.sensitivity == pytest.approx(3 / 4)
    assert m.precision == pytest.approx(3 / 5)
    assert m.f1 == pytest.approx(2 * 0.75 * 0.6 / 1.35)
    assert m.start_agreement == pytest.approx(1 / 3)


def test_gene_metrics_alternative_starts_count_once():
    truth = [_g("a", 0, 300, 1), _g("a", 60, 300, 1)]
    m = M.gene_metrics([_g("a", 60, 300, 1)], truth)
    assert (m.n_true, m.tp, m.start_agreement) == (1, 1, 1.0)
    assert M.gene_metrics([], truth).f1 == 0.0


def test_coding_mask():
    genes = [_g("a", 2, 5, 1), _g("a", 4, 8, -1), _g("b", 0, 3, 1)]
    assert M.coding_mask(genes, "a", 10).astype(int).tolist() == [0, 0, 1, 1, 1, 1, 1, 1, 0, 0]
    assert M.coding_mask(genes, "a", 10, strand=1).astype(int).tolist() == [0, 0, 1, 1, 1, 0, 0, 0, 0, 0]


def test_binary_scores_hand_and_sklearn():
    p = np.array([1, 1, 0, 0, 1, 0], bool)
    t = np.array([1, 0, 0, 1, 1, 0], bool)
    s = M.binary_scores(p, t)
    # tp=2 fp=1 fn=1 tn=2 → precision = recall = 2/3, MCC = (4-1)/sqrt(3*3*3*3) = 1/3
    assert s["f1"] == pytest.approx(2 / 3)
    assert s["mcc"] == pytest.approx(1 / 3)
    rng = np.random.default_rng(0)
    p, t = rng.random(500) < 0.4, rng.random(500) < 0.3
    s = M.binary_scores(p, t)
    assert s["mcc"] == pytest.approx(skm.matthews_corrcoef(t, p))
    assert s["f1"] == pytest.approx(skm.f1_score(t, p))


def test_base_cds_scores_ignores_unlabelled():
    true = np.array([0, 1, 2, 3, -100, 4, 0])
    pred = np.array([0, 1, 3, 0, 5, 4, 6])
    s = M.base_cds_scores(pred, true)
    # kept: 6 bases; coding truth [0,1,1,1,1,0], pred [0,1,1,0,1,1] → tp 3, fp 1, fn 1
    assert s["precision"] == pytest.approx(3 / 4) and s["recall"] == pytest.approx(3 / 4)


def test_confusion_and_per_class_f1():
    true = np.array([0, 0, 1, 1, 2, 2, -100])
    pred = np.array([0, 1, 1, 1, 0, 2, 2])
    cm = M.confusion_matrix(true, pred, 4)
    assert cm[:3, :3].tolist() == [[1, 1, 0], [0, 2, 0], [1, 0, 1]]
    f1 = M.per_class_f1(cm)
    np.testing.assert_allclose(f1[:3], skm.f1_score(true[:6], pred[:6], average=None))
    assert np.isnan(f1[3])
    with pytest.raises(ValueError):
        M.confusion_matrix(np.array([5]), np.array([0]), 4)


def test_auroc_auprc_hand_case():
    y = np.array([0, 0, 1, 1])
    s = np.array([0.1, 0.4, 0.35, 0.8])
    assert M.auroc(y, s) == pytest.approx(0.75)
    # thresholds 0.8: P=1 R=.5; 0.4: P=.5; 0.35: P=2/3 R=1 → AP = .5*1 + .5*2/3
    assert M.auprc(y, s) == pytest.approx(0.5 + 1 / 3)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_ranking_matches_sklearn_with_ties(seed):
    rng = np.random.default_rng(seed)
    y = rng.random(400) < 0.3
    s = np.round(rng.random(400) + 0.5 * y, 1)  # rounding makes many ties
    assert M.auroc(y, s) == pytest.approx(skm.roc_auc_score(y, s))
    assert M.auprc(y, s) == pytest.approx(skm.average_precision_score(y, s))
    with pytest.raises(ValueError):
        M.auroc(np.zeros(5), np.arange(5.0))


def test_correlations():
    x = np.array([1.0, 2.0, 3.0, 4.0, 5.0])
    assert M.pearson(x, 2 * x + 1) == pytest.approx(1.0)
    assert M.spearman(x, x ** 3) == pytest.approx(1.0)
    assert M.spearman(x, -np.exp(x)) == pytest.approx(-1.0)
    assert np.isnan(M.pearson(x, np.ones(5)))
    stats = pytest.importorskip("scipy.stats")
    rng = np.random.default_rng(3)
    a, b = rng.integers(0, 6, 200).astype(float), rng.normal(size=200)
    b = b + 0.3 * a
    assert M.spearman(a, b) == pytest.approx(stats.spearmanr(a, b).statistic)
    assert M.pearson(a, b) == pytest.approx(stats.pearsonr(a, b).statistic)
