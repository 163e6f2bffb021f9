"""Gene-structure decoder: accuracy on real genomes, ORF invariants, DNA symmetry, DP optimality."""

import gzip
import itertools
import random

import numpy as np
import pytest
from Bio import SeqIO
from Bio.SeqFeature import CompoundLocation

from genoctx.errors import InputError
from genoctx.eval.metrics import gene_metrics
from genoctx.heads import classes
from genoctx.heads.decoder import (
    DecoderParams,
    GeneCall,
    call_genes,
    call_genes_multi,
    call_rnas,
    hysteresis_segments,
    select_genes,
)

STOPS = {"TAA", "TAG", "TGA"}
STARTS = {"ATG", "GTG", "TTG"}
SLICE = 300_000
COMP = str.maketrans("ACGTN", "TGCAN")


def revcomp(s: str) -> str:
    return s.translate(COMP)[::-1]


def truth_cds(record, limit=None) -> list[GeneCall]:
    """CDS that are ground truth (not pseudo, not joined), fully inside [0, limit)."""
    out = []
    for f in record.features:
        if f.type != "CDS" or "pseudo" in f.qualifiers or isinstance(f.location, CompoundLocation):
            continue
        s, e = int(f.location.start), int(f.location.end)
        if limit is None or e <= limit:
            out.append(GeneCall(record.id, s, e, int(f.location.strand), 1.0, ""))
    return out


@pytest.fixture(scope="module")
def ecoli(data_root):
    with gzip.open(data_root / "genomes/bacteria/Escherichia_coli_K12_MG1655.gbff.gz", "rt") as fh:
        rec = next(SeqIO.parse(fh, "genbank"))
    seq = str(rec.seq[:SLICE]).upper()
    return rec.id, seq, truth_cds(rec, SLICE)


@pytest.fixture(scope="module")
def ecoli_calls(ecoli):
    cid, seq, _ = ecoli
    return call_genes(seq.encode(), contig=cid)


@pytest.fixture(scope="module")
def pcp1(example_genbank):
    rec = SeqIO.read(example_genbank, "genbank")
    return rec.id, str(rec.seq).upper(), truth_cds(rec)


def _interior(calls, length):
    """Calls not cut by the slice edges (those cannot match the genome's annotation)."""
    return [g for g in calls if not any(g.partial)]


def test_ecoli_slice_accuracy(ecoli, ecoli_calls):
    _, seq, truth = ecoli
    m = gene_metrics(_interior(ecoli_calls, len(seq)), truth)
    assert m.sensitivity >= 0.88, m
    assert m.precision >= 0.90, m
    assert m.start_agreement >= 0.80, m


def test_pcp1_plasmid_accuracy(pcp1):
    cid, seq, truth = pcp1
    calls = call_genes(seq.encode(), contig=cid)
    m = gene_metrics(calls, truth)
    assert m.sensitivity >= 0.85 and m.precision >= 0.85, m


def _check_orf_invariants(calls, seq):
    stops = set()
    for g in calls:
        assert 0 <= g.start < g.end <= len(seq)
        assert (g.end - g.start) % 3 == 0
        gene = seq[g.start:g.end] if g.strand == 1 else revcomp(seq[g.start:g.end])
        if not g.partial[0]:
            assert gene[:3] in STARTS and gene[:3] == g.start_codon
        if not g.partial[1]:
            assert gene[-3:] in STOPS
        inner = {gene[i:i + 3] for i in range(0, len(gene) - 3, 3)}
        assert not inner & STOPS, "in-frame stop inside a gene"
        assert 0.0 <= g.score <= 1.0
        key = (g.strand, g.stop)
        assert key not in stops, "two calls share a stop codon"
        stops.add(key)


def test_orf_invariants(ecoli, ecoli_calls, pcp1):
    _check_orf_invariants(ecoli_calls, ecoli[1])
    _, seq, _ = pcp1
    _check_orf_invariants(call_genes(seq.encode()), seq)


def test_partial_genes_only_at_open_edges(ecoli, ecoli_calls):
    _, seq, _ = ecoli
    part = [g for g in ecoli_calls if any(g.partial)]
    for g in part:
        left, right = (g.partial if g.strand == 1 else g.partial[::-1])
        assert (not left or g.start < 3) and (not right or g.end > len(seq) - 3)
    closed = call_genes(seq[:60_000].encode(), closed=True)
    assert closed and not any(any(g.partial) for g in closed)


def test_reverse_complement_symmetry(ecoli):
    _, seq, _ = ecoli
    fwd = seq[:120_000]
    L = len(fwd)
    a = call_genes(fwd.encode())
    b = call_genes(revcomp(fwd).encode())
    mirrored = {(L - g.end, L - g.start, -g.strand) for g in b}
    assert {(g.start, g.end, g.strand) for g in a} == mirrored
    sa = sorted(round(g.score, 3) for g in a)
    sb = sorted(round(g.score, 3) for g in b)
    np.testing.assert_allclose(sa, sb, atol=2e-3)


def test_genome_level_training_across_contigs(pcp1, ecoli, ecoli_calls):
    """Statistics are shared across records; each record keeps its name and its genes."""
    cid, seq, truth = pcp1
    both = call_genes_multi([("chrom", ecoli[1].encode()), (cid, seq.encode())])
    assert {g.contig for g in both} == {"chrom", cid}
    chrom = {(g.start, g.end, g.strand) for g in both if g.contig == "chrom"}
    alone = {(g.start, g.end, g.strand) for g in ecoli_calls}
    assert len(chrom & alone) >= 0.95 * max(len(chrom), len(alone))
    # pPCP1 comes from Y. pestis; E. coli statistics still decode it well
    m = gene_metrics([g for g in both if g.contig == cid], truth)
    assert m.sensitivity >= 0.8 and m.precision >= 0.8, m


def _oracle_probs(truth, length, rng, confidence=0.9):
    """Probabilities of a good but imperfect head: the true class at ``confidence`` with noise."""
    labels = np.zeros(length, dtype=np.int64)
    for g in truth:
        for q in range(3):
            if g.strand == 1:
                labels[g.start + q:g.end:3] = classes.CDS_PLUS[q]
            else:
                labels[g.end - 1 - q:g.start - 1 if g.start else None:-3] = classes.CDS_MINUS[q]
    p = rng.dirichlet(np.ones(classes.NUM_CLASSES), size=length) * (1 - confidence)
    p[np.arange(length), labels] += confidence
    return p.astype(np.float32)


def test_neural_probs_improve_calls(ecoli, ecoli_calls):
    cid, seq, truth = ecoli
    n = 150_000
    sub_truth = [g for g in truth if g.end <= n]
    probs = _oracle_probs(sub_truth, n, np.random.default_rng(0))
    seq_only = gene_metrics(_interior(call_genes(seq[:n].encode(), contig=cid), n), sub_truth)
    with_nn = gene_metrics(_interior(call_genes(seq[:n].encode(), probs, contig=cid), n), sub_truth)
    assert with_nn.f1 > seq_only.f1
    assert with_nn.sensitivity >= 0.95 and with_nn.precision >= 0.95, with_nn


def test_input_errors():
    with pytest.raises(InputError, match="shape"):
        call_genes(b"ACGT" * 100, np.zeros((10, classes.NUM_CLASSES), np.float32))
    bad = np.full((400, classes.NUM_CLASSES), np.nan, np.float32)
    with pytest.raises(InputError, match="NaN"):
        call_genes(b"ACGT" * 100, bad)
    with pytest.raises(InputError, match="unique"):
        call_genes_multi([("a", b"ACGT"), ("a", b"ACGT")], None)
    assert call_genes(b"") == []
    assert call_genes(b"N" * 5000) == []


def _feasible(chain, p):
    for (l1, r1, s1, _), (l2, r2, s2, _) in itertools.pairwise(chain):
        ovl = {(1, 1): p.max_same_overlap, (-1, -1): p.max_same_overlap,
               (1, -1): p.max_tail_overlap, (-1, 1): p.max_head_overlap}[(s1, s2)]
        if r1 > l2 + ovl or r1 >= r2 or l1 >= l2:
            return False
    return True


@pytest.mark.parametrize("seed", range(6))
def test_dp_matches_brute_force(seed):
    rng = random.Random(seed)
    p = DecoderParams()
    genes = []
    for _ in range(11):
        lo = rng.randrange(0, 2000)
        genes.append((lo, lo + rng.randrange(90, 700), rng.choice((1, -1)), rng.uniform(-2, 10)))
    left, right, strand, score = (np.array(c) for c in zip(*genes))
    chosen = select_genes(left, right, strand, score, p)
    got = score[chosen].sum() if len(chosen) else 0.0
    best = 0.0
    order = sorted(range(len(genes)), key=lambda i: (genes[i][1], genes[i][0], genes[i][2]))
    for k in range(1, len(genes) + 1):
        for sub in itertools.combinations(order, k):
            chain = [genes[i] for i in sub]
            if _feasible(chain, p):
                best = max(best, sum(g[3] for g in chain))
    assert got == pytest.approx(best)
    assert _feasible([genes[i] for i in sorted(chosen, key=lambda i: (genes[i][1], genes[i][0]))], p)


def test_rna_hysteresis():
    p = np.zeros(300)
    p[100:180] = 0.4
    p[120:130] = 0.9       # peak: the whole 80-bp run at >= low becomes one feature
    p[200:230] = 0.95      # too short for a tRNA
    assert hysteresis_segments(p, 0.5, 0.3, 50) == [(100, 180)]
    probs = np.zeros((300, classes.NUM_CLASSES), np.float32)
    probs[:, classes.INTERGENIC] = 1.0
    probs[:, classes.INDEX["tRNA-"]] = p
    probs[:, classes.INTERGENIC] -= p
    rnas = call_rnas(probs, contig="c")
    assert [(r.start, r.end, r.strand, r.kind) for r in rnas] == [(100, 180, -1, "tRNA")]
    assert rnas[0].score == pytest.approx(float(p[100:180].mean()), abs=1e-5)
