"""Pileup tokens against states computed independently from pysam and the reference."""

import shutil

import numpy as np
import pysam
import pytest

from genoctx.io.bam import PILEUP_CHANNELS
from genoctx.io.regions import Region
from genoctx.tokenize import nucleotide
from genoctx.tokenize.pileup import (
    ALT_FRACTION,
    CHANNEL_NAMES,
    DELETION,
    DELETION_FRACTION,
    MATCH,
    MISMATCH,
    NO_COVERAGE,
    PILEUP_OFFSET,
    PILEUP_VOCAB_SIZE,
    describe,
    states_from_channels,
    token_id,
    tokenize_pileup,
)


def _independent_counts(bam, region, min_baseq=13):
    """A/C/G/T from count_coverage and deletions from pysam's pileup engine."""
    with pysam.AlignmentFile(str(bam)) as af:
        acgt = np.array(af.count_coverage(region.contig, region.start, region.end,
                                          quality_threshold=min_baseq,
                                          read_callback=lambda r: not r.flag & 0xF04)).T
        dels = np.zeros(len(region))
        for col in af.pileup(region.contig, region.start, region.end, truncate=True,
                             stepper="nofilter", min_base_quality=0, ignore_overlaps=False,
                             ignore_orphans=False, compute_baq=False, max_depth=1_000_000):
            dels[col.reference_pos - region.start] = sum(
                1 for p in col.pileups
                if p.is_del and not p.is_refskip and not p.alignment.flag & 0xF04)
    return acgt.astype(float), dels


def _expected_tokens(ref: str, acgt, dels):
    """The documented rule, one position at a time."""
    tokens = []
    for i, ref_base in enumerate(ref.upper()):
        base = "ACGT".index(ref_base) if ref_base in "ACGT" else 4
        depth = acgt[i].sum() + dels[i]
        ref_count = acgt[i][base] if base < 4 else 0
        if depth == 0:
            state = 0
        elif dels[i] / depth >= 0.5:
            state = 3
        elif (depth - ref_count) / depth >= 0.2:
            state = 2
        else:
            state = 1
        tokens.append(9 + 4 * base + state)
    return np.array(tokens)


@pytest.fixture(scope="module")
def cases(data_root, tmp_path_factory):
    reads = data_root / "reads"
    folder = tmp_path_factory.mktemp("pileup")
    for name in ("ex1/ex1.bam", "ex1/ex1.fa", "human_mpileup/mpileup.2.bam"):
        shutil.copy(reads / name, folder)  # no index in the read-only data folder
    mp = reads / "human_mpileup"
    return [(mp / "mpileup.1.bam", mp / "mpileup.ref.fa", Region("17", 0, 4200)),
            (folder / "mpileup.2.bam", mp / "mpileup.ref.fa", Region("17", 0, 4200)),
            (folder / "ex1.bam", folder / "ex1.fa", Region("chr2", 0, 1584))]


def test_tokens_match_independent_states(cases):
    seen_states = set()
    for bam, ref, region in cases:
        tokens, channels, names = tokenize_pileup(bam, ref, region)
        acgt, dels = _independent_counts(bam, region)
        ref_seq = pysam.FastaFile(str(ref)).fetch(region.contig, region.start, region.end)
        want = _expected_tokens(ref_seq, acgt, dels)
        np.testing.assert_array_equal(tokens, want)
        seen_states |= set(((want - PILEUP_OFFSET) % 4).tolist())
        # Normalised channels against the same independent counts.
        depth = acgt.sum(axis=1) + dels
        assert names == list(CHANNEL_NAMES) and channels.dtype == np.float32
        np.testing.assert_allclose(channels[:, 0], np.log1p(depth), rtol=1e-6)
        covered = depth > 0
        fracs = np.column_stack([acgt, dels])[covered] / depth[covered, None]
        np.testing.assert_allclose(channels[covered, 1:6], fracs, rtol=1e-6)
        assert np.all(channels[~covered] == 0)
    assert seen_states >= {MATCH, MISMATCH, NO_COVERAGE}


def test_tokens_follow_the_reference_base(cases):
    bam, ref, region = cases[0]
    tokens, _, _ = tokenize_pileup(bam, ref, region)
    ref_ids = nucleotide.encode(pysam.FastaFile(str(ref)).fetch(region.contig))
    assert np.all((tokens - PILEUP_OFFSET) // 4 == ref_ids.astype(int) - nucleotide.A)
    assert tokens.min() >= PILEUP_OFFSET and tokens.max() < PILEUP_VOCAB_SIZE


def test_filters_reach_the_counts(cases):
    bam, ref, region = cases[0]
    loose, _, _ = tokenize_pileup(bam, ref, region, min_baseq=0)
    strict, ch, _ = tokenize_pileup(bam, ref, region, min_mapq=255)
    assert np.all((strict - PILEUP_OFFSET) % 4 == NO_COVERAGE) and np.all(ch == 0)
    assert np.any((loose - PILEUP_OFFSET) % 4 != NO_COVERAGE)


def test_state_thresholds_on_handmade_counts():
    # depth, A, C, G, T, del, mean_baseq, strand_plus_frac (raw channel order)
    assert PILEUP_CHANNELS[:6] == ("depth", "A", "C", "G", "T", "del")
    rows = np.array([
        [0, 0, 0, 0, 0, 0, 0, 0],        # nothing
        [10, 9, 1, 0, 0, 0, 30, 0.5],    # 10% alt: match
        [10, 8, 2, 0, 0, 0, 30, 0.5],    # exactly ALT_FRACTION: mismatch
        [10, 8, 0, 0, 0, 2, 30, 0.5],    # deletions count as non-reference evidence
        [10, 5, 0, 0, 0, 5, 30, 0.5],    # exactly DELETION_FRACTION: deletion
        [4, 4, 0, 0, 0, 0, 30, 0.5],     # reference N: nothing matches it
    ], np.float32)
    ref = np.array([0, 0, 0, 0, 0, 4], np.uint8)
    state, alt = states_from_channels(rows, ref)
    assert state.tolist() == [NO_COVERAGE, MATCH, MISMATCH, MISMATCH, DELETION, MISMATCH]
    np.testing.assert_allclose(alt, [0, 0.1, ALT_FRACTION, 0.2, DELETION_FRACTION, 1.0])


def test_ids_are_documented():
    assert PILEUP_OFFSET == nucleotide.VOCAB_SIZE == 9 and PILEUP_VOCAB_SIZE == 29
    ids = {token_id(b, s) for b in range(5) for s in range(4)}
    assert ids == set(range(PILEUP_OFFSET, PILEUP_VOCAB_SIZE))
    assert describe(token_id(2, MISMATCH)) == ("G", "mismatch")
    assert describe(token_id(4, DELETION)) == ("N", "deletion")
    with pytest.raises(ValueError):
        describe(nucleotide.A)
