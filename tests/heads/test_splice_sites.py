"""Splice-site matrices: fitted through the role guard on train eukaryotes, scored both strands."""

from itertools import pairwise

import numpy as np
import pytest

from genoctx.heads import splice_sites as ss
from genoctx.heads.orfs import encode, revcomp_codes


def test_shipped_models_are_what_the_fit_gives(data_root):
    data = ss.load_examples(data_root)
    assert {rel for rel, _, _ in data} == {"genomes/eukaryote_chunks/A.thaliana.gff.gz",
                                           "genomes/eukaryote_chunks/D.melanogaster.gff.gz"}
    fitted = ss.fit_site_models([e for _, _, ex in data for e in ex])
    for got, shipped in zip(fitted, ss.default_site_models()):
        assert got.lo == shipped.lo
        np.testing.assert_allclose(got.mono, shipped.mono, atol=2e-4)
        np.testing.assert_allclose(got.di, shipped.di, atol=2e-4)
        assert got.bias == pytest.approx(shipped.bias, abs=2e-4)


def test_models_hold_the_splice_consensus():
    """MAG|GTRAGT and YYYY...CAG|G, learned from data, not written in."""
    donor, acceptor = ss.default_site_models()
    A, C, G, T = range(4)
    d, a = donor.mono, acceptor.mono

    def at(m, pos):  # the row of a position relative to the site
        return pos - m.lo

    assert d[at(donor, -1)].argmax() == G           # exon's last base
    assert d[at(donor, 2)].argmax() == A            # intron +3
    assert d[at(donor, 4)].argmax() == G            # intron +5
    assert a[at(acceptor, -3), G] < a[at(acceptor, -3), C]  # CAG, not GAG
    assert all(a[at(acceptor, p)].argmax() == T for p in range(-10, -4))  # pyrimidine tract
    assert a[at(acceptor, 0)].argmax() == G         # first exon base


def test_models_tell_real_sites_from_decoys_better_than_matrices_on_another_species(data_root):
    """Fitted on A. thaliana, ranked on D. melanogaster's GT / AG near its real sites."""
    from sklearn.metrics import roc_auc_score

    data = {fa.split("/")[-1]: ex for _, fa, ex in ss.load_examples(data_root)}
    train, test = data["A.thaliana.fa.gz"], data["D.melanogaster.fa.gz"]
    models = ss.fit_site_models(train)
    matrices = [ss.as_model(m, lo) for m, lo in zip(ss.fit_matrices(train),
                                                     (ss.DONOR[0], ss.ACCEPTOR[0]))]
    for col, kind in enumerate(("donor", "acceptor")):
        lab, s_model, s_matrix = [], [], []
        for x, introns in test:
            real = np.array([i[col] for i in introns])
            if not len(real):
                continue
            pos = ss._site_positions(x, kind)
            pos = pos[np.abs(pos[:, None] - real[None, :]).min(1) < 3000]
            lab.append(np.isin(pos, real))
            s_model.append(models[col].score(x)[pos])
            s_matrix.append(matrices[col].score(x)[pos])
        y = np.concatenate(lab)
        auc_model = roc_auc_score(y, np.concatenate(s_model))
        auc_matrix = roc_auc_score(y, np.concatenate(s_matrix))
        assert auc_model > auc_matrix + 0.01, (kind, auc_model, auc_matrix)


def test_a_model_scores_every_window_term_and_leaves_unknown_bases_out():
    rng = np.random.default_rng(3)
    x = rng.integers(0, 5, 300).astype(np.uint8)  # 4: N
    m = ss.SiteModel(-5, rng.normal(size=(9, 4)), rng.normal(size=(8, 4, 4)), 0.7)
    s = m.score(x)
    for t in (0, 3, 150, 296, 300):
        w = ss._windows(x, np.array([t]), -5, 4)[0]
        want = 0.7 + sum(m.mono[p, b] for p, b in enumerate(w) if b < 4)
        want += sum(m.di[p, w[p], w[p + 1]] for p in range(8) if w[p] < 4 and w[p + 1] < 4)
        assert s[t] == pytest.approx(want)


def test_role_guard_is_asked_for_every_file(monkeypatch, data_root):
    from genoctx.io import dataroot

    seen = []

    def guard(path, root=None):
        seen.append(path)
        raise dataroot.DataRoleError("refused")

    monkeypatch.setattr(dataroot, "require_trainable", guard)
    with pytest.raises(dataroot.DataRoleError):
        ss.load_examples(data_root)
    assert seen


def test_minus_strand_scores_read_the_reverse_complement():
    rng = np.random.default_rng(0)
    x = rng.integers(0, 4, 400).astype(np.uint8)
    donor, acceptor = ss.default_site_models()
    sc = ss.transition_scores(x, donor, acceptor)
    n, y = len(x), revcomp_codes(x)

    def direct(seq, m, t):
        return m.window_scores(ss._windows(seq, np.array([t]), m.lo, m.lo + m.width))[0]

    for a, b in ((100, 180), (37, 300), (5, 60)):  # forward intron [a, b)
        assert sc[1][0][a] == pytest.approx(direct(x, donor, a))
        assert sc[1][1][b] == pytest.approx(direct(x, acceptor, b))
        # the − strand gene reads it from b - 1 down to a: donor at y[n - b], acceptor y[n - a]
        assert sc[-1][0][a] == pytest.approx(direct(y, acceptor, n - a))
        assert sc[-1][1][b] == pytest.approx(direct(y, donor, n - b))


def test_intron_sites_in_gene_orientation(data_root):
    from genoctx.io.annotation import read_genes
    from genoctx.io.fasta import iter_records

    root = data_root / "genomes/eukaryote_chunks"
    genes = read_genes(root / "D.melanogaster.gff.gz")
    contig, seq = next((c, s) for c, s in iter_records(root / "D.melanogaster.fa.gz") if c == "2L")
    x = encode(seq)
    plus, minus = ss.intron_sites([g for g in genes if g.contig == contig], len(x))
    assert plus and minus
    y = revcomp_codes(x)
    gt = sum(bool(x[d] == 2 and x[d + 1] == 3) for d, _ in plus) / len(plus)
    ag = sum(bool(y[a - 2] == 0 and y[a - 1] == 2) for _, a in minus) / len(minus)
    assert gt > 0.95 and ag > 0.95


def test_sites_place_blurred_boundaries_on_a_held_out_genome(data_root):
    """With exon/intron boundaries blurred in the probabilities (a 41-bp running mean of
    truth labels), the splice-site scores put more introns exactly right on C. elegans, which
    the matrices never saw. ``pytest -s`` prints the counts."""
    import sys
    from pathlib import Path

    from scipy.ndimage import uniform_filter1d

    from genoctx.heads import spliced_decoder as sd
    from genoctx.io.annotation import read_genes
    from genoctx.io.fasta import iter_records

    sys.path.insert(0, str(Path(__file__).parent))
    from test_spliced_decoder import labels_for

    root = data_root / "genomes/eukaryote_chunks"
    seq = dict(iter_records(root / "C.elegans.fa.gz"))["V"].decode().upper()[:200_000]
    made = [(g.strand, sorted(g.parts)) for g in read_genes(root / "C.elegans.gff.gz")
            if g.contig == "V" and len(g.parts) > 1 and g.end <= len(seq)]
    truth = {(a, b) for _, p in made for (_, a), (b, _) in pairwise(p)}
    y = labels_for(len(seq), made)
    p = uniform_filter1d(sd.oracle_probs(y, 0.8).astype(np.float64), 41, axis=0)
    right = {}
    for w in (0.0, 1.0):
        params = sd.DecoderParams(splice_weight=w, head_weight=1.0, coding_weight=0.0)
        genes = sd.decode(seq, p.astype(np.float32), params=params)
        right[w] = len({i for g in genes for i in g.introns} & truth)
    print(f"\nexact introns of {len(truth)}: without sites {right[0.0]}, with {right[1.0]}")
    assert right[1.0] >= right[0.0] + 8
