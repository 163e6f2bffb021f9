"""Splice-site matrices: fitted through the role guard on train eukaryotes, scored both strands."""

from itertools import pairwise

import numpy as np
import pytest

from genoctx.heads import splice_sites as ss
from genoctx.heads.orfs import encode, revcomp_codes


def test_shipped_matrices_are_what_the_fit_gives(data_root):
    data = ss.load_examples(data_root)
    assert {rel for rel, _, _ in data} == {"genomes/eukaryote_chunks/A.thaliana.gff.gz",
                                           "genomes/eukaryote_chunks/D.melanogaster.gff.gz"}
    donor, acceptor = ss.fit_matrices([e for _, _, ex in data for e in ex])
    d0, a0 = ss.default_matrices()
    np.testing.assert_allclose(donor, d0, atol=1e-9)
    np.testing.assert_allclose(acceptor, a0, atol=1e-9)


def test_matrices_hold_the_splice_consensus():
    """MAG|GTRAGT and YYYY...CAG|G, learned from data, not written in."""
    donor, acceptor = ss.default_matrices()
    A, C, G, T = range(4)
    assert donor[2].argmax() == G           # exon's last base
    assert donor[5].argmax() == A           # intron +3
    assert donor[7].argmax() == G           # intron +5
    assert np.all(donor[[3, 4]] == 0) and np.all(acceptor[[12, 13]] == 0)  # the gate's GT / AG
    assert acceptor[11, G] < acceptor[11, C]  # CAG, not GAG
    assert all(acceptor[i].argmax() == T for i in range(10))  # pyrimidine tract (T here)
    assert acceptor[14].argmax() == G       # first exon base


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
    donor, acceptor = ss.default_matrices()
    sc = ss.transition_scores(x, donor, acceptor)
    n, y = len(x), revcomp_codes(x)

    def direct(seq, pwm, lo, t):
        w = ss._windows(seq, np.array([t]), lo, lo + len(pwm))[0]
        return sum(pwm[i, b] for i, b in enumerate(w) if b < 4)

    for a, b in ((100, 180), (37, 300), (5, 60)):  # forward intron [a, b)
        assert sc[1][0][a] == pytest.approx(direct(x, donor, ss.DONOR[0], a))
        assert sc[1][1][b] == pytest.approx(direct(x, acceptor, ss.ACCEPTOR[0], b))
        # the − strand gene reads it from b - 1 down to a: donor at y[n - b], acceptor y[n - a]
        assert sc[-1][0][a] == pytest.approx(direct(y, acceptor, ss.ACCEPTOR[0], n - a))
        assert sc[-1][1][b] == pytest.approx(direct(y, donor, ss.DONOR[0], n - b))


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
