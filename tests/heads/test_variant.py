"""Variant windows and scores against direct log-likelihood computations (1-layer tiny model)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from genoctx.errors import InputError
from genoctx.heads.variant import (
    _prefix_length,
    change_span,
    delta_log_likelihood,
    job_sums,
    normalize,
    score_variants,
    spellings,
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
        windows = variant_windows(fasta, change_span(fasta, v), CONTEXT)
        assert score == pytest.approx(direct(model, *windows), abs=2e-3)


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


def test_normalize_trims_and_left_aligns(tmp_path):
    """The spelling bcftools norm -f and vt normalize write: shared suffix, then shared prefix
    trimmed (one base kept), indels moved left through their repeat."""
    path = tmp_path / "r.fa"
    path.write_text(">c\nGCATTTTTGACACACAGTCAAAGGTCAA\n")
    with FastaFile(path) as fa:
        def norm(pos, ref, alt, **kw):
            v = normalize(fa, var("c", pos, ref, alt), **kw)
            return v.pos, v.ref, v.alt

        assert norm(6, "TTG", "TG") == norm(2, "AT", "A") == (2, "AT", "A")
        for pos in range(3, 7):  # one T of TTTTT deleted, written anywhere in it
            assert norm(pos, "TT", "T") == (2, "AT", "A")
            assert norm(pos, "TT", "T", look_back=2) == (2, "AT", "A")  # read in pieces
        assert norm(3, "T", "TT") == (2, "A", "AT")
        assert norm(14, "CA", "CACA") == (8, "G", "GAC")  # a repeat unit of two
        assert norm(5, "TT", "CT") == (5, "T", "C") == norm(4, "TT", "TC")  # padded SNVs
        assert norm(2, "ATTT", "AGCT") == (3, "TT", "GC")  # an MNV: the first base dropped
        assert norm(1, "CAT", "CGG") == (2, "AT", "GG")
        assert norm(20, "A", "A") == (20, "A", "A")  # no change: left as written
        assert norm(0, "G", "GG") == (0, "G", "GG")  # nothing to the left to move to
        v = var("c", 2, "AT", "A")
        assert normalize(fa, v) is v


def test_change_span_is_one_for_every_spelling_and_strand(tmp_path):
    """Every spelling of one change, on either strand, covers the same stretch."""
    seq = "GCATTTTTGACACACAGTCAAAGGTCAA"
    rc = nt.decode(nt.reverse_complement(nt.encode(seq)))
    (tmp_path / "f.fa").write_text(f">c\n{seq}\n")
    (tmp_path / "r.fa").write_text(f">c\n{rc}\n")
    n = len(seq)
    with FastaFile(tmp_path / "f.fa") as fa, FastaFile(tmp_path / "r.fa") as ra:
        def span(f, pos, ref, alt):
            v = change_span(f, var("c", pos, ref, alt))
            return v.pos, v.ref, v.alt

        for pos in range(3, 8):  # TTTTT at 3..7 loses one T
            assert span(fa, pos, "T", "") == span(fa, pos - 1, seq[pos - 1] + "T",
                                                  seq[pos - 1]) == (3, "TTTTT", "TTTT")
            assert span(ra, n - pos - 1, "A", "") == (n - 8, "AAAAA", "AAAA")  # its mirror
        assert span(fa, 6, "TTG", "TG") == (3, "TTTTT", "TTTT")
        assert span(fa, 7, "T", "TT") == (3, "TTTTT", "TTTTTT")
        assert span(fa, 0, "G", "GT") == (1, "", "T")  # an insertion that cannot slide
        assert span(fa, 9, "ACA", "A") == (9, "ACACACA", "ACACA")  # CA in ACACACA
        assert span(fa, 5, "TT", "CT") == span(fa, 5, "T", "C") == (5, "T", "C")
        assert span(fa, 2, "AT", "GCC") == (2, "AT", "GCC")  # one placement only


def test_change_span_slides_a_bounded_distance(tmp_path):
    """In a long tandem array (a satellite of 5,000 bases here) the stretch grows at most
    max_slide bases each way, so the windows stay of the context's size."""
    (tmp_path / "s.fa").write_text(">c\nG" + "AC" * 2500 + "G\n")
    with FastaFile(tmp_path / "s.fa") as fa:
        v = change_span(fa, var("c", 2001, "AC", ""), max_slide=256)
        assert (v.pos, len(v.ref), v.alt) == (2001 - 256, 256 + 2 + 256, v.ref[2:])
        assert change_span(fa, var("c", 2001, "", "AC")).pos == 2001 - 256
        whole = change_span(fa, var("c", 1, "AC", ""), max_slide=10_000)
        assert (whole.pos, len(whole.ref)) == (1, 5000)


def test_spellings_are_every_placement_of_one_change(tmp_path):
    """Each placement, applied to the reference, gives the same sequence; every spelling of
    the change (anchored or not, anywhere along its repeat) lists the same placements."""
    seq = "GCATTTTTGACACACAGTCAAAGGTCAA"
    (tmp_path / "f.fa").write_text(f">c\n{seq}\n")

    def applied(p, r, a):
        assert seq[p:p + len(r)] == r
        return seq[:p] + a + seq[p + len(r):]

    with FastaFile(tmp_path / "f.fa") as fa:
        def places(pos, ref, alt):
            return spellings(fa, var("c", pos, ref, alt))

        one_t = places(6, "TTG", "TG")
        assert one_t == [(p, "T", "") for p in range(3, 8)]
        assert all(places(p, "T", "") == one_t for p in range(3, 8))
        assert places(2, "AT", "A") == one_t
        two = places(9, "ACA", "A")  # CA out of ACACACA (9..15): AC or CA, six places
        assert two == [(9 + j, "ACAC"[j % 2:j % 2 + 2], "") for j in range(6)]
        ins = places(14, "CA", "CACA")  # and put in: before any of the 7 bases, or after
        assert ins == [(9 + j, "", "ACAC"[j % 2:j % 2 + 2]) for j in range(8)]
        for group in (one_t, two, ins):
            assert len({applied(*x) for x in group}) == 1
        assert places(0, "G", "GT") == [(1, "", "T")]  # cannot slide
        assert places(5, "TT", "CT") == [(5, "T", "C")]  # substitutions: one place
        assert places(2, "AT", "GCC") == [(2, "AT", "GCC")]
        assert places(20, "A", "A") == [(20, "", "")]


def test_equivalent_spellings_score_the_same(model, fasta):
    """AT>A and ATG>AG, or a deletion written anywhere in its homopolymer, scored
    differently (windows around each spelling's own REF); the variants come back as given."""
    contig = fasta.contigs[0]
    seq = fasta.fetch(contig).decode().upper()
    run = seq.find("TTTT", 3000)  # a homopolymer, its base before it at run - 1
    spellings = [var(contig, run - 1, seq[run - 1:run + 1], seq[run - 1], index=0)]
    spellings += [var(contig, p, "TT", "T", index=k) for k, p in enumerate(range(run, run + 3), 1)]
    spellings.append(var(contig, run - 1, seq[run - 1:run + 6], seq[run - 1] + seq[run + 1:run + 6],
                         index=4))  # shared bases at the end too
    snv = 5000
    b = "A" if seq[snv] != "A" else "C"
    spellings += [var(contig, snv, seq[snv], b, index=5),
                  var(contig, snv, seq[snv:snv + 2], b + seq[snv + 1], index=6),
                  var(contig, snv - 1, seq[snv - 1:snv + 1], seq[snv - 1] + b, index=7)]
    out = list(score_variants(model, fasta, spellings, context=CONTEXT, batch_size=4))
    assert [v for v, _ in out] == spellings
    scores = [s for _, s in out]
    assert scores[:5] == pytest.approx([scores[0]] * 5, abs=1e-4)
    assert scores[5:] == pytest.approx([scores[5]] * 3, abs=1e-4)
    assert scores[0] != pytest.approx(scores[5], abs=1e-4)
