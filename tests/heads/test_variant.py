"""Variant windows and scores against direct log-likelihood computations (1-layer tiny model)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from genoctx.errors import InputError
from genoctx.heads.variant import (
    _prefix_length,
    delta_log_likelihood,
    job_sums,
    score_variants,
    variant_windows,
    window_span,
)
from genoctx.io.fasta import FastaFile
from genoctx.io.vcf import Variant
from genoctx.model.config import get_config
from genoctx.model.model import GenoCtxModel
from genoctx.tokenize import nucleotide as nt

CONTEXT = 300  # > 2 blocks of 128, so the shared-prefix path runs


@pytest.fixture(scope="module")
def model():
    torch.manual_seed(0)
    return GenoCtxModel.from_config(get_config("tiny", num_layers=1)).eval()


@pytest.fixture(scope="module")
def fasta(example_fasta):
    with FastaFile(example_fasta) as fa:
        yield fa


def var(contig, pos, ref, alt, ok=True, index=0, allele=1) -> Variant:
    return Variant(contig=contig, pos=pos, ref=ref, alt=alt, id=None, qual=None, filters=(),
                   record_index=index, allele_index=allele, ref_ok=ok)


def direct(model, ref_ids, alt_ids) -> float:
    """The definition: whole-window log-likelihood sums, both strands, straight from the model."""
    def ll(x):
        return model.log_likelihood(torch.as_tensor(x[None].astype(np.int64))).double().sum().item()
    rc = nt.reverse_complement
    return 0.5 * ((ll(alt_ids) - ll(ref_ids)) + (ll(rc(alt_ids)) - ll(rc(ref_ids))))


def test_window_span_has_equal_flanks_and_stays_inside():
    assert window_span(10_000, 5000, 5001, 1024) == (5000 - 511, 5001 + 511)
    assert window_span(10_000, 5000, 5003, 1024) == (5000 - 510, 5003 + 510)
    assert window_span(10_000, 3, 4, 101) == (0, 101)            # moved right at the start
    assert window_span(10_000, 9998, 9999, 101) == (9899, 10_000)  # and left at the end
    assert window_span(50, 10, 11, 101) == (0, 50)               # contig shorter than a window


def test_variant_windows_snv_and_indels(fasta):
    contig = fasta.contigs[0]
    seq = fasta.fetch(contig).decode()
    pos = 4000
    ref_ids, alt_ids = variant_windows(fasta, var(contig, pos, seq[pos], "A"), CONTEXT)
    ws = pos - (CONTEXT - 1) // 2
    assert nt.decode(ref_ids) == seq[ws:ws + len(ref_ids)].upper()
    assert len(ref_ids) == len(alt_ids) == CONTEXT - 1
    assert np.flatnonzero(ref_ids != alt_ids).tolist() in ([], [pos - ws])
    assert nt.decode(alt_ids)[pos - ws] == "A"
    deletion = var(contig, pos, seq[pos:pos + 4], seq[pos])
    ref_ids, alt_ids = variant_windows(fasta, deletion, CONTEXT)
    ws = pos - (CONTEXT - 4) // 2
    flank = (CONTEXT - 4) // 2
    assert nt.decode(ref_ids) == seq[ws:pos + 4 + flank].upper()
    assert nt.decode(alt_ids) == (seq[ws:pos + 1] + seq[pos + 4:pos + 4 + flank]).upper()


@pytest.mark.parametrize("alt_kind", ["snv", "insertion", "deletion", "mnv"])
def test_delta_log_likelihood_equals_direct_computation(model, fasta, alt_kind):
    contig = fasta.contigs[0]
    seq = fasta.fetch(contig).decode()
    pos = 2500
    ref, alt = {"snv": (seq[pos], "T" if seq[pos] != "T" else "G"),
                "insertion": (seq[pos], seq[pos] + "GATTACA"),
                "deletion": (seq[pos:pos + 6], seq[pos]),
                "mnv": (seq[pos:pos + 2], "CC" if seq[pos:pos + 2] != "CC" else "AA")}[alt_kind]
    ref_ids, alt_ids = variant_windows(fasta, var(contig, pos, ref, alt), CONTEXT)
    got = delta_log_likelihood(model, ref_ids, alt_ids)
    assert got == pytest.approx(direct(model, ref_ids, alt_ids), abs=2e-3)


def test_shared_prefix_equals_full_windows(model, fasta):
    """Prefix sharing changes which terms are summed, never the differences within a job."""
    contig = fasta.contigs[0]
    seq = fasta.fetch(contig).decode()
    jobs = []
    for pos in (1000, 1001, 7000):
        ref_ids, _ = variant_windows(fasta, var(contig, pos, seq[pos], "A"), CONTEXT)
        alts = [variant_windows(fasta, var(contig, pos, seq[pos], b), CONTEXT)[1]
                for b in "ACGT" if b != seq[pos].upper()]
        jobs += [[ref_ids, *alts], [nt.reverse_complement(x) for x in (ref_ids, *alts)]]
    assert _prefix_length(jobs[0], model.config.block_size) == 128  # the path under test
    shared = job_sums(model, jobs, batch_size=4, workers=1)
    full = job_sums(model, jobs, batch_size=5, share_prefix=False)
    for s, f in zip(shared, full):
        assert np.allclose(np.subtract(s[1:], s[0]), np.subtract(f[1:], f[0]), atol=2e-3)
    # worker threads (CPU) run the batches side by side: same sums up to rounding, in order,
    # the same bytes on every run, and torch's thread count restored
    threads = torch.get_num_threads()
    two = job_sums(model, jobs, batch_size=2, workers=2)
    for s, t in zip(shared, two, strict=True):
        assert np.allclose(s, t, rtol=1e-6, atol=1e-3)
    assert job_sums(model, jobs, batch_size=2, workers=2) == two
    assert torch.get_num_threads() == threads


def test_score_variants_streams_in_order_with_none_for_bad_ref(model, fasta):
    contig = fasta.contigs[0]
    seq = fasta.fetch(contig).decode()
    variants = [var(contig, 3000, seq[3000], "A" if seq[3000] != "A" else "C", index=0),
                var(contig, 3000, seq[3000], "G" if seq[3000] != "G" else "T", index=0, allele=2),
                var(contig, 5000, seq[5000], "C", ok=False, index=1),
                var(contig, 200, seq[200:203], seq[200], index=2)]
    done = []
    out = list(score_variants(model, fasta, iter(variants), context=CONTEXT, batch_size=3,
                              progress=done.append))
    assert [v for v, _ in out] == variants and sum(done) == len(variants)
    assert out[2][1] is None
    for v, score in (out[0], out[1], out[3]):
        assert score == pytest.approx(direct(model, *variant_windows(fasta, v, CONTEXT)),
                                      abs=2e-3)


def test_strand_symmetry(model, fasta, tmp_path):
    """The reverse-complemented reference and variant give the same score."""
    contig = fasta.contigs[0]
    seq = fasta.fetch(contig).decode().upper()
    n = len(seq)
    rc_path = tmp_path / "rc.fa"
    rc_path.write_text(f">rc\n{nt.decode(nt.reverse_complement(nt.encode(seq)))}\n")
    comp = str.maketrans("ACGT", "TGCA")
    cases = [(6000, seq[6000], "A" if seq[6000] != "A" else "G"),
             (40, seq[40], "C" if seq[40] != "C" else "T"),               # window moved inside
             (6100, seq[6100:6104], seq[6100])]                           # deletion
    with FastaFile(rc_path) as rc_fa:
        for pos, ref, alt in cases:
            fwd = var(contig, pos, ref, alt)
            rev = var("rc", n - pos - len(ref), ref.translate(comp)[::-1], alt.translate(comp)[::-1])
            (_, a), = score_variants(model, fasta, [fwd], context=CONTEXT)
            (_, b), = score_variants(model, rc_fa, [rev], context=CONTEXT)
            assert a == pytest.approx(b, abs=2e-3)


def test_bidirectional_model_is_refused(fasta):
    cfg = get_config("tiny", num_layers=1, causal=False)
    bidir = GenoCtxModel.from_config(cfg)
    contig = fasta.contigs[0]
    with pytest.raises(InputError, match="causal"):
        list(score_variants(bidir, fasta, [var(contig, 10, "A", "C")]))
